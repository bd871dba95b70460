/**
 * The HTTP API of the Worker, called as a client would, with the API token vitest.config.ts gives
 * the Worker over any `.dev.vars`: these tests pass whether or not that file exists.
 */
import { env, exports } from "cloudflare:workers";
import { TestDriver } from "edge-streams/testing";
import { expect, it } from "vitest";
import streams from "../src/index";

const driver = new TestDriver(env, streams);
/** TEST_API_TOKEN of vitest.config.ts. */
const TEST_API_TOKEN = "test-token";

/** A request to the Worker as a client sends it, with the test's API token unless told otherwise. */
function call(path: string, init: { body?: unknown; token?: string | null } = {}): Promise<Response> {
  const headers = new Headers({ "Content-Type": "application/json" });
  const token = init.token === undefined ? TEST_API_TOKEN : init.token;
  if (token !== null) headers.set("Authorization", `Bearer ${token}`);
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  return exports.default.fetch(new Request(`http://app.test${path}`, { method: body ? "POST" : "GET", headers, body }));
}

it("ingests clicks and answers the count over HTTP, with the API token", async () => {
  const ingested = await call("/topics/clicks/records", { body: { records: [{ key: "/pricing", value: { user: "ada" } }] } });
  expect(ingested.status).toBe(200);
  await driver.runUntilQuiet();
  const read = await call(`/stores/clicks-per-page/keys/${encodeURIComponent("/pricing")}`);
  expect(read.status).toBe(200);
  expect(await read.json()).toMatchObject({ key: "/pricing", value: 1 });
});

it("refuses a request without the token", async () => {
  expect((await call("/stores/clicks-per-page/keys/x", { token: null })).status).toBe(401);
});
