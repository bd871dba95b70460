/**
 * A real `wrangler dev` as it runs without `.dev.vars`: no `API_TOKEN`, no `ENVIRONMENT`. Ingest
 * refuses with `500 misconfigured` and says the local fix (create `.dev.vars`), not the deployed
 * one (`wrangler secret put`): the Worker sees the request addressed to 127.0.0.1.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev";

let dev: WranglerDev;

beforeAll(async () => {
  // Empty vars are unset for the Worker (src/config.ts), also over a developer's own .dev.vars.
  dev = await startWranglerDev({ vars: { API_TOKEN: "", ENVIRONMENT: "" } });
});

afterAll(async () => {
  await dev?.stop();
});

it("answers ingest without a token with the local fix: create .dev.vars", async () => {
  const response = await fetch(`${dev.url}/topics/orders/records`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ records: [{ key: "alice", value: { amount: 12 } }] }),
  });
  const body = (await response.json()) as { error: string; message: string };
  expect(response.status, dev.output()).toBe(500);
  expect(body.error).toBe("misconfigured");
  expect(body.message).toMatch(/create \.dev\.vars \(`npm start` creates it from \.dev\.vars\.example\)/);
  expect(body.message).not.toMatch(/wrangler secret put/);
});
