/**
 * A Worker without `API_TOKEN` (and without `ENVIRONMENT=development`: what `wrangler dev` runs
 * with when `.dev.vars` is missing) refuses to serve with `500 misconfigured`, and says how to fix
 * it where it runs: under `wrangler dev` (a request to localhost or an IP address) create
 * `.dev.vars`; deployed, `wrangler secret put API_TOKEN`. The same on the API, `/kafka` and the
 * sign-in form. test/node/local-token.test.ts checks it against a real `wrangler dev`.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isLocalRequest } from "../workers/api/missing-token";
import { streams } from "./support/orders-app";

const context = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
/** The test project's vars without any token, as a Worker without `.dev.vars` (or a secret) has them. */
const tokenless = { ...env, API_TOKEN: "", ADMIN_TOKEN: "", PRODUCE_TOKEN: "", READ_TOKEN: "", LOG_TOKEN: "", ENVIRONMENT: "" } as typeof env;

const LOCAL = /create \.dev\.vars \(`npm start` creates it from \.dev\.vars\.example\)/;
const DEPLOYED = /set one with `wrangler secret put API_TOKEN`/;

async function send(base: string, path: string, init: RequestInit = {}): Promise<{ status: number; message: string }> {
  const response = await streams.fetch(new Request(`${base}${path}`, init), tokenless, context);
  const body = (await response.json()) as { message?: string; error?: string };
  // The API says `message`; the Kafka REST dialect puts its text in `error`.
  return { status: response.status, message: body.message ?? body.error ?? "" };
}

const ingest = {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ records: [{ key: "alice", value: { amount: 1 } }] }),
};
const kafka = { method: "POST", headers: { Authorization: `Basic ${btoa("edge:x")}`, "Content-Type": "application/json" }, body: "{}" };
const login = { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "token=x" };

describe("a Worker without API_TOKEN", () => {
  for (const base of ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787", "http://192.168.1.20:8787"]) {
    it(`under wrangler dev (${base}) says to create .dev.vars`, async () => {
      for (const [path, init] of [
        ["/topics/orders/records", ingest],
        ["/kafka/produce", kafka],
        ["/login", login],
      ] as const) {
        const answer = await send(base, path, init);
        expect(answer.status, path).toBe(500);
        expect(answer.message, path).toMatch(LOCAL);
        expect(answer.message, path).not.toMatch(/wrangler secret put/);
      }
    });
  }

  for (const base of ["https://edge-streams.example.workers.dev", "https://streams.example.com"]) {
    it(`deployed (${base}) says to set the secret`, async () => {
      for (const [path, init] of [
        ["/topics/orders/records", ingest],
        ["/kafka/produce", kafka],
        ["/login", login],
      ] as const) {
        const answer = await send(base, path, init);
        expect(answer.status, path).toBe(500);
        expect(answer.message, path).toMatch(DEPLOYED);
        expect(answer.message, path).not.toMatch(/\.dev\.vars/);
      }
    });
  }

  it("tells local requests by their host only", () => {
    for (const url of ["http://localhost/", "http://app.localhost:8787/x", "http://127.0.0.1:8787/", "http://10.0.0.7/", "http://[::1]/"]) {
      expect(isLocalRequest(url), url).toBe(true);
    }
    for (const url of ["https://a.workers.dev/", "https://localhost.example.com/", "https://127.0.0.1.example.com/", "not a url"]) {
      expect(isLocalRequest(url), url).toBe(false);
    }
  });
});
