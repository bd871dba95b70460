/**
 * A Worker's vars, read with the requests it serves (one workerd start-up for both: neither
 * touches storage).
 *
 * PARTITIONS:
 * The default example's partition count comes from the `PARTITIONS` var (default 4): the
 * application is built from the environment (`defineEdgeStreams((env) => topology)`), once per
 * configuration; a Worker defined by a plain topology keeps working as before. The 256-partition
 * runtime is tested by test/node/scale.test.ts.
 *
 * API_TOKEN:
 * A Worker without `API_TOKEN` (and without `ENVIRONMENT=development`: what `wrangler dev` runs
 * with when `.dev.vars` is missing) refuses to serve with `500 misconfigured`, and says how to fix
 * it where it runs: under `wrangler dev` (a request to localhost or an IP address) create
 * `.dev.vars`; deployed, `wrangler secret put API_TOKEN`. The same on the API, `/kafka` and the
 * sign-in form. test/node/local-token.test.ts checks it against a real `wrangler dev`.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigError, defineEdgeStreams } from "../workers/index";
import { isLocalRequest } from "../workers/api/missing-token";
import { DEFAULT_PARTITIONS, ordersTotalsTopology, partitionsOf } from "../examples/orders-totals/topology";
import { streams } from "./support/orders-app";
import { TOKEN } from "./support/api";

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
/** The requests a Worker without API_TOKEN refuses, each with the reason. */
const REFUSED = [
  ["/topics/orders/records", ingest],
  ["/kafka/produce", kafka],
  ["/login", login],
] as const;

describe("a Worker without API_TOKEN", () => {
  for (const base of ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787", "http://192.168.1.20:8787"]) {
    it(`under wrangler dev (${base}) says to create .dev.vars`, async () => {
      for (const [path, init] of REFUSED) {
        const answer = await send(base, path, init);
        expect(answer.status, path).toBe(500);
        expect(answer.message, path).toMatch(LOCAL);
        expect(answer.message, path).not.toMatch(/wrangler secret put/);
      }
    });
  }

  for (const base of ["https://edge-streams.example.workers.dev", "https://streams.example.com"]) {
    it(`deployed (${base}) says to set the secret`, async () => {
      for (const [path, init] of REFUSED) {
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

describe("PARTITIONS", () => {
  it("sizes orders and totals, and so the tasks, from the environment", () => {
    expect(streams.applicationFor(env).taskIds()).toEqual(["0_0", "0_1", "0_2", "0_3"]);
    const big = streams.applicationFor({ ...env, PARTITIONS: "1024" });
    expect(big.taskIds()).toHaveLength(1_024);
    expect(big.catalog.partitions("orders")).toBe(1_024);
    expect(big.catalog.partitions("totals")).toBe(1_024);
    expect(big.catalog.partitions("edge-streams-totals-changelog")).toBe(1_024);
    // The same vars again: the same application, also from another environment object.
    expect(streams.applicationFor({ ...env, PARTITIONS: "1024" })).toBe(big);
    expect(partitionsOf({})).toBe(DEFAULT_PARTITIONS);
    expect(partitionsOf({ PARTITIONS: " 128 " })).toBe(128);
  });

  it("refuses what is not a whole number from 1 to 10,000, naming the var", () => {
    for (const bad of ["0", "-4", "1.5", "four", "10001", "1e3"]) {
      expect(() => partitionsOf({ PARTITIONS: bad }), bad).toThrow(ConfigError);
      expect(() => partitionsOf({ PARTITIONS: bad }), bad).toThrow(/PARTITIONS: .* is not a whole number from 1 to 10000/);
    }
  });

  it("a Worker with an invalid PARTITIONS answers 500 misconfigured, saying why", async () => {
    const request = new Request("http://edge.test/tasks", { headers: { Authorization: `Bearer ${TOKEN}` } });
    const response = await streams.fetch(request, { ...env, PARTITIONS: "zero" } as typeof env, context);
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ error: "misconfigured", message: expect.stringMatching(/PARTITIONS/) });
  });

  it("a Worker defined by a plain topology has its application at once, as before", () => {
    const fixed = defineEdgeStreams(ordersTotalsTopology("fail", 3));
    expect(fixed.application.taskIds()).toHaveLength(3);
    expect(fixed.applicationFor(env)).toBe(fixed.application);
    expect(() => streams.application).toThrow(/applicationFor\(env\)/);
  });

  it("survives being copied with a spread, as wrangler dev's middleware copies the default export", () => {
    const copy = { ...streams };
    expect(Object.keys(copy)).not.toContain("application");
    expect(copy.fetch).toBe(streams.fetch);
    expect(copy.TaskObject).toBe(streams.TaskObject);
    // A Worker defined by a plain topology still has it.
    expect(defineEdgeStreams(ordersTotalsTopology("fail", 3)).application.taskIds()).toHaveLength(3);
  });
});
