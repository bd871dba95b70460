/**
 * The `@upstash/kafka` backend (`UpstashLog`) against this Worker's own `/kafka` dialect, inside
 * workerd: the shared Log contract on the second backend without a `wrangler dev` (the node
 * project also runs it against one, test/node/upstash-log.test.ts). The client calls the global
 * `fetch`; here that is pointed, for one origin only, at the Worker's fetch handler, so the real
 * client, the real route and the embedded log behind it all take part.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { UpstashLog } from "../../src/kafka-rest/upstash-log";
import { describeLogContract } from "../log/contract";
import { anyClient } from "../support/api";
import { TEST_TOKENS } from "../support/tokens";

/** An origin no request leaves the isolate for: the stub hands it to the Worker. */
const ORIGIN = "http://upstash-backend.test";
/** The runtime's credential (vitest.config.ts's LOG_TOKEN): producer identities and epochs travel only with it. */
const LOG_TOKEN = TEST_TOKENS.log;

const requestUrl = (input: RequestInfo | URL) => (typeof input === "string" ? input : input instanceof URL ? input.href : input.url);

beforeAll(() => {
  const outside = globalThis.fetch;
  vi.stubGlobal("fetch", (input: RequestInfo | URL, init?: RequestInit) => {
    const url = requestUrl(input);
    if (!url.startsWith(`${ORIGIN}/`)) return outside(input, init);
    const headers = new Headers(init?.headers);
    headers.set("CF-Connecting-IP", anyClient());
    // Only what a request to the Worker carries (the client also asks for `keepalive`).
    return exports.default.fetch(new Request(url, { method: init?.method, headers, body: init?.body }));
  });
});

/** The Worker's first request sets it up (seconds on a loaded machine): not within a contract test's time. */
beforeAll(async () => {
  const answer = await exports.default.fetch(
    new Request(`${ORIGIN}/kafka/topics`, { headers: { Authorization: `Basic ${btoa(`edge:${LOG_TOKEN}`)}`, "CF-Connecting-IP": anyClient() } }),
  );
  expect(answer.status).toBe(200);
}, 60_000);

afterAll(() => {
  vi.unstubAllGlobals();
});

const open = () => new UpstashLog({ url: `${ORIGIN}/kafka`, username: "edge", password: LOG_TOKEN, timeoutMs: 10_000 });

/** The contract's topics, declared for the `workers` project in vitest.config.ts (`log-contract-<n>`). */
let contractTopics: string[] | undefined;
let nextTopic = 0;

describeLogContract(
  "@upstash/kafka backend on the Worker's own /kafka",
  async () => {
    const log = open();
    contractTopics ??= [...(await log.topics()).keys()].filter((t) => t.startsWith("log-contract-")).sort();
    const topic = contractTopics[nextTopic++];
    if (topic === undefined) throw new Error("declare more log-contract topics in vitest.config.ts");
    return { log, topic };
  },
  { retention: false },
);

describe("@upstash/kafka backend on the Worker's own /kafka", () => {
  it("goes through the client's HTTP layer without its retries", () => {
    expect(open().boundedRetries).toBe(true);
  });
});
