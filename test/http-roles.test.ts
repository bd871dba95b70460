/**
 * Scoped credentials, as Kafka has ACLs (workers/api/credentials.ts, the route table in
 * workers/api/access.ts): what each token may and may not do, over the API (bearer) and `/kafka`
 * (HTTP Basic). Refused is 403 `forbidden` and changes nothing; allowed answers as the route does.
 * Both tokens of a secret holding two (a rotation) work; a token in no secret is 401. The tokens
 * are vitest.config.ts's: API_TOKEN, ADMIN_TOKEN, PRODUCE_TOKEN (two), READ_TOKEN, LOG_TOKEN.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ACCESS_RULES, accessRule, DEFAULT_RULE } from "../workers/api/access";
import { credentialsOf, rolesOf } from "../workers/api/credentials";
import { ApiError } from "../workers/api/http-error";
import { readConfig } from "../src/config";
import { endOffsets, kafka } from "./kafka-rest/support";
import { call, TOKEN } from "./support/api";
import { TEST_TOKENS } from "./support/tokens";

type Who = "api" | "admin" | "produce" | "produceNext" | "read" | "log";
const TOKENS: Record<Who, string> = {
  api: TOKEN,
  ...TEST_TOKENS,
};

interface Case {
  readonly what: string;
  readonly send: (token: string) => Promise<Response>;
  /** The status each token gets (403 means refused by role). */
  readonly status: Record<Who, number>;
}

const bearer =
  (path: string, options: { method?: string; body?: unknown } = {}) =>
  (token: string) =>
    call(path, { ...options, token });
const basic =
  (path: string, options: { method?: string; body?: unknown } = {}) =>
  (token: string) =>
    kafka(path, { ...options, auth: `Basic ${btoa(`edge:${token}`)}` });

/** A status for every token: `allowed` for those named, 403 for the others. */
function only(allowed: Partial<Record<Who, number>>): Record<Who, number> {
  const status = { api: 403, admin: 403, produce: 403, produceNext: 403, read: 403, log: 403 };
  return { ...status, ...allowed };
}
const everyone = (status: number) => only({ api: status, admin: status, produce: status, produceNext: status, read: status, log: status });

const CASES: Case[] = [
  {
    what: "ingest to an input topic",
    send: bearer("/topics/ingest-test/records", { body: { records: [{ key: "role", value: 1 }] } }),
    status: only({ api: 200, produce: 200, produceNext: 200 }),
  },
  { what: "list topics", send: bearer("/topics"), status: only({ api: 200, admin: 200, produce: 200, produceNext: 200, read: 200 }) },
  { what: "describe a topic", send: bearer("/topics/orders"), status: only({ api: 200, admin: 200, read: 200 }) },
  { what: "scan a store", send: bearer("/stores/totals/keys?prefix=role-"), status: only({ api: 200, admin: 200, read: 200 }) },
  { what: "read a key", send: bearer("/stores/totals/keys/role-nobody"), status: only({ api: 404, admin: 404, read: 404 }) },
  { what: "GET /tasks", send: bearer("/tasks"), status: only({ api: 200, admin: 200, read: 200 }) },
  { what: "GET /metrics", send: bearer("/metrics"), status: only({ api: 200, admin: 200, read: 200 }) },
  { what: "an admin route", send: bearer("/admin/restore/resume", { body: {} }), status: only({ api: 200, admin: 200 }) },
  {
    what: "an admin route of another package (generic /admin/*)",
    send: bearer("/admin/tasks/9_9/no-such-action", { body: {} }),
    status: only({ api: 404, admin: 404 }),
  },
  { what: "a route no entry names", send: bearer("/no-such-route"), status: only({ api: 404, admin: 404 }) },
  {
    what: "/kafka produce",
    send: basic("/produce", { body: { topic: "ingest-test", value: "role" } }),
    status: only({ api: 200, produce: 200, produceNext: 200, log: 200 }),
  },
  { what: "/kafka topics", send: basic("/topics"), status: everyone(200) },
  {
    what: "/kafka fetch",
    send: basic("/fetch", { body: { topic: "ingest-test", partition: 0, offset: 0 } }),
    status: only({ api: 200, admin: 200, read: 200, log: 200 }),
  },
  {
    what: "/kafka offsets",
    send: basic("/offsets/latest", { body: [{ topic: "ingest-test", partition: 0 }] }),
    status: only({ api: 200, admin: 200, read: 200, log: 200 }),
  },
  {
    what: "/kafka committed",
    send: basic("/committed/role-group/i", { body: [{ topic: "ingest-test", partition: 0 }] }),
    status: only({ api: 200, admin: 200, read: 200, log: 200 }),
  },
  {
    what: "/kafka consume in a group of one's own",
    send: basic("/consume/role-group/i", { body: { topics: ["ingest-test"] } }),
    status: only({ api: 200, admin: 200, read: 200 }),
  },
  {
    what: "/kafka commit in a group of one's own",
    send: basic("/commit/role-group/i", { body: { topic: "ingest-test", partition: 0, offset: 0 } }),
    status: only({ api: 200, admin: 200, read: 200, log: 200 }),
  },
  { what: "/kafka consumers", send: basic("/consumers"), status: only({ api: 200, admin: 200, read: 200 }) },
];

describe("what each token may and may not do", () => {
  it.each(CASES.map((c) => [c.what, c] as const))("%s", async (_, { send, status }) => {
    for (const who of Object.keys(TOKENS) as Who[]) {
      const response = await send(TOKENS[who]);
      const text = await response.text();
      expect(response.status, `${who}: ${text}`).toBe(status[who]);
      if (status[who] === 403) expect(text, who).toMatch(/may not/);
    }
  });

  it("a refused write changes nothing", async () => {
    const before = await endOffsets("ingest-test", 4);
    for (const token of [TOKENS.read, TOKENS.admin, TOKENS.log]) {
      expect((await call("/topics/ingest-test/records", { body: { records: [{ key: "r", value: 1 }] }, token })).status).toBe(403);
    }
    for (const token of [TOKENS.read, TOKENS.admin]) {
      expect((await kafka("/produce", { body: { topic: "ingest-test", value: "r" }, auth: `Basic ${btoa(`edge:${token}`)}` })).status).toBe(403);
    }
    expect(await endOffsets("ingest-test", 4)).toEqual(before);
  });

  it("a token in no secret is 401, and one of another scheme's route too", async () => {
    expect((await call("/tasks", { token: "test-produce-token-old" })).status).toBe(401);
    expect((await kafka("/topics", { auth: `Basic ${btoa("edge:test-produce-token-old")}` })).status).toBe(401);
    expect((await call("/tasks", { token: null, headers: { Authorization: `Basic ${btoa("edge:test-read-token")}` } })).status).toBe(401);
  });
});

describe("the credentials (unit)", () => {
  const config = (vars: Record<string, string>) => readConfig({ ENVIRONMENT: "production", LOG_LEVEL: "warn", ...vars });

  it("reads each secret as one token or a comma-separated list, with the secret's roles", () => {
    const credentials = credentialsOf(config({ API_TOKEN: "a1, a2", READ_TOKEN: "r1", LOG_TOKEN: "l1" }));
    expect([...rolesOf(credentials, "a2")!].sort()).toEqual(["admin", "produce", "read"]);
    expect([...rolesOf(credentials, "r1")!]).toEqual(["read"]);
    expect([...rolesOf(credentials, "l1")!]).toEqual(["log"]);
    expect(rolesOf(credentials, "a1, a2")).toBeNull();
    expect(rolesOf(credentials, "")).toBeNull();
  });

  it("refuses to serve without any token outside local development, or with a token in two secrets", () => {
    expect(() => credentialsOf(config({}))).toThrow(ApiError);
    expect(() => credentialsOf(config({ API_TOKEN: "same", LOG_TOKEN: "same" }))).toThrow(/API_TOKEN and LOG_TOKEN/);
    expect(credentialsOf(readConfig({ ENVIRONMENT: "development", LOG_LEVEL: "warn" })).open).toBe(true);
    expect(credentialsOf(config({ READ_TOKEN: "only-read" })).open).toBe(false);
  });

  it("has one entry per route, the first match winning; unnamed paths need admin", () => {
    expect(accessRule("/topics/orders/records").roles).toEqual(["produce"]);
    expect(accessRule("/topics/orders").roles).toEqual(["read"]);
    expect(accessRule("/topics").roles).toEqual(["read", "produce"]);
    expect(accessRule("/stores/totals/keys/a%2Fb").roles).toEqual(["read"]);
    expect(accessRule("/admin/anything/new").roles).toEqual(["admin"]);
    expect(accessRule("/health").roles).toEqual(["read"]);
    expect(accessRule("/kafka/produce/orders").roles).toEqual(["produce", "log"]);
    expect(accessRule("/kafka/commit/g/i").roles).toEqual(["read", "log"]);
    expect(accessRule("/kafka/unknown").scheme).toBe("basic");
    expect(accessRule("/").cookie).toBe(true);
    expect(accessRule("/stores").roles).toEqual(DEFAULT_RULE.roles);
    expect(accessRule("/mine")).toBe(DEFAULT_RULE);
    expect(ACCESS_RULES.filter((r) => r.public).map((r) => r.path)).toEqual(["/healthz", "/login", "/logout"]);
  });

  it("the test Worker has them all", () => {
    expect(credentialsOf(readConfig(env)).tokens.map((t) => t.secret)).toEqual([
      "API_TOKEN",
      "ADMIN_TOKEN",
      "PRODUCE_TOKEN",
      "PRODUCE_TOKEN",
      "READ_TOKEN",
      "LOG_TOKEN",
    ]);
  });
});
