/**
 * Browsers cannot be turned against the API (issue #31 findings 4 and 5, #30's 415 and 405), in
 * workerd: writes take JSON only (415), a wrong method on a known path is 405 with `Allow`, a
 * request a browser authenticated by itself (session cookie, HTTP Basic) from a page of another
 * origin is 403, `/login` and `/logout` refuse other origins, failed authentication is limited per
 * client (429), sessions are revocable, every answer says `no-store` and `nosniff`, no 503 tells
 * internal error text, and the work of one request is bounded (400 beyond). Refused writes change
 * nothing. The same against a real `wrangler dev` and a real browser: test/node/security.test.ts.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME } from "../src/names";
import { AUTH_FAILURE_LIMIT, FailureWindows } from "../workers/api/auth-failures";
import { MAX_SCAN_ENTRIES, maxScanLimit } from "../workers/api/routes/scans";
import { TestDriver } from "../platform/testing/test-driver";
import { BASIC, endOffsets, failure, kafka, ok } from "./kafka-rest/support";
import { anyClient, call, json, TOKEN } from "./support/api";
import { keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { activeInstance } from "./support/active";
import { TEST_TOKENS } from "./support/tokens";

const driver = new TestDriver(env, application);
const ORIGIN = "http://edge.test";
const EVIL = "https://evil.example";
const COOKIE = "__Host-edge_session";

/** A request as a browser sends it: its own headers, no redirect following. */
async function browse(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", anyClient());
  return exports.default.fetch(
    new Request(`${ORIGIN}${path}`, { method: init.method ?? (init.body === undefined ? "GET" : "POST"), headers, body: init.body, redirect: "manual" }),
  );
}

async function signIn(token = TOKEN, client = anyClient()): Promise<string> {
  const response = await browse("/login", {
    body: new URLSearchParams({ token }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: ORIGIN, "Sec-Fetch-Site": "same-origin", "CF-Connecting-IP": client },
  });
  expect(response.status, await response.clone().text()).toBe(303);
  return /__Host-edge_session=([^;]+)/.exec(response.headers.get("Set-Cookie")!)![1]!;
}

const withCookie = (cookie: string, extra: Record<string, string> = {}) => ({ Cookie: `${COOKIE}=${cookie}`, ...extra });

describe("writes take JSON only (415)", () => {
  it("refuses text, form and untyped bodies on every write route, in the route's error shape, appending nothing", async () => {
    const before = await endOffsets("orders", 4);
    const json = '{"records":[{"key":"k415","value":{"amount":1}}]}';
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const headers = { "Content-Type": type };
      const ingest = await call("/topics/orders/records", { rawBody: json, headers });
      expect(ingest.status, type).toBe(415);
      expect(await json_(ingest)).toMatchObject({ error: "unsupported_media_type", message: expect.stringContaining("application/json") });
      const produce = await failure(kafka("/produce/orders", { raw: '{"value":"v"}', headers }), 415);
      expect(produce.error).toContain("application/json");
      await failure(kafka("/commit/someone/i", { raw: '{"topic":"orders","partition":0,"offset":0}', headers }), 415);
      expect((await call("/admin/restore/pause", { rawBody: "{}", headers })).status).toBe(415);
    }
    // A body without any Content-Type (sent as bytes: a string body is typed text/plain by the runtime).
    const untyped = (path: string, authorization: string) =>
      exports.default.fetch(
        new Request(`${ORIGIN}${path}`, { method: "POST", headers: { Authorization: authorization }, body: new TextEncoder().encode(json) }),
      );
    expect((await untyped("/topics/orders/records", `Bearer ${TOKEN}`)).status).toBe(415);
    expect((await untyped("/kafka/produce/orders", BASIC)).status).toBe(415);
    expect(await endOffsets("orders", 4)).toEqual(before);
    expect((await driver.restoreWorker("a").status()).paused).toBe(false);
  });

  it("takes application/json with parameters, and a write without a body or a type", async () => {
    const response = await call("/topics/ingest-test/records", {
      rawBody: '{"records":[{"key":"k","value":1}]}',
      headers: { "Content-Type": "Application/JSON; charset=utf-8" },
    });
    expect(response.status).toBe(200);
    const bare = await exports.default.fetch(new Request(`${ORIGIN}/admin/restore/pause`, { method: "POST", headers: { Authorization: `Bearer ${TOKEN}` } }));
    expect(bare.status).toBe(200);
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  });
});

/** Response JSON (named apart from the `json` body strings above). */
const json_ = json;

describe("a wrong method on a known path (405 with Allow)", () => {
  it.each([
    ["DELETE", "/topics/orders/records", "POST"],
    ["GET", "/topics/orders/records", "POST"],
    ["POST", "/tasks", "GET, HEAD"],
    ["PUT", "/stores/totals/keys/some-key", "GET, HEAD"],
    ["GET", "/admin/tasks/0_0/migrate", "POST"],
    ["POST", "/healthz", "GET, HEAD"],
  ])("%s %s: 405, Allow: %s", async (method, path, allow) => {
    const response = await call(path, { method });
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toBe(allow);
    expect(await json(response)).toMatchObject({ error: "method_not_allowed", message: expect.stringContaining(allow.split(",")[0]!) });
  });

  it("on /kafka in the dialect's shape; unknown paths stay 404; no credential stays 401", async () => {
    const wrong = await kafka("/fetch", { method: "GET" });
    expect(wrong.headers.get("Allow")).toBe("POST");
    await failure(wrong, 405);
    await failure(kafka("/produce", { method: "PUT", body: { topic: "orders", value: "v" } }), 405);
    await failure(kafka("/nope"), 404);
    expect((await call("/no/such/path", { method: "DELETE" })).status).toBe(404);
    expect((await call("/tasks", { method: "POST", token: null })).status).toBe(401);
  });
});

describe("every answer says no-store and nosniff", () => {
  it("JSON, errors, the status page, metrics, /kafka and /healthz", async () => {
    const responses = [
      await call("/tasks"),
      await call("/tasks", { token: "wrong" }),
      await call("/stores/totals/keys/nobody-at-all"),
      await call("/tasks", { method: "POST" }),
      await call("/topics/orders/records", { rawBody: "x", headers: { "Content-Type": "text/plain" } }),
      await call("/"),
      await call("/metrics"),
      await kafka("/topics"),
      await kafka("/topics", { auth: null }),
      await call("/healthz", { token: null }),
      await browse("/login"),
    ];
    for (const response of responses) {
      expect(response.headers.get("Cache-Control"), response.url).toBe("no-store");
      expect(response.headers.get("X-Content-Type-Options"), response.url).toBe("nosniff");
    }
  });
});

describe("credentials a browser attaches by itself are never taken from another origin", () => {
  it("HTTP Basic on /kafka: 403 from another origin or site, appending nothing; same origin and non-browsers pass", async () => {
    const before = await endOffsets("ingest-test", 4);
    const foreign: Record<string, string>[] = [{ Origin: EVIL }, { "Sec-Fetch-Site": "cross-site" }, { "Sec-Fetch-Site": "same-site" }, { Origin: "null" }];
    for (const headers of foreign) {
      const refused = await failure(kafka("/produce", { body: { topic: "ingest-test", value: "csrf" }, headers }), 403);
      expect(refused.error, JSON.stringify(headers)).toContain("another origin");
      await failure(kafka("/topics", { headers }), 403);
    }
    expect(await endOffsets("ingest-test", 4)).toEqual(before);
    await ok(kafka("/topics", { headers: { Origin: ORIGIN, "Sec-Fetch-Site": "same-origin" } }));
    await ok(kafka("/topics", { headers: { Origin: ORIGIN } }));
    await ok(kafka("/topics", { headers: { "Sec-Fetch-Site": "none" } }));
    // Sec-Fetch-Site decides when sent: a page with Referrer-Policy: no-referrer (the status page)
    // makes Chromium send Origin: null with its own forms.
    await ok(kafka("/topics", { headers: { Origin: "null", "Sec-Fetch-Site": "same-origin" } }));
    await failure(kafka("/topics", { headers: { Origin: ORIGIN, "Sec-Fetch-Site": "cross-site" } }), 403);
  });

  it("the session cookie: 403 from another origin; a bearer token (never attached by a browser) is not checked", async () => {
    const cookie = await signIn();
    expect((await browse("/tasks", { headers: withCookie(cookie, { "Sec-Fetch-Site": "same-origin" }) })).status).toBe(200);
    for (const extra of [{ Origin: EVIL }, { "Sec-Fetch-Site": "cross-site" }] as Record<string, string>[]) {
      const response = await browse("/tasks", { headers: withCookie(cookie, extra) });
      expect(response.status).toBe(403);
      expect(await json(response)).toMatchObject({ error: "forbidden" });
    }
    expect((await call("/tasks", { headers: { Origin: EVIL } })).status).toBe(200);
  });

  it("/login and /logout refuse a form from another origin (no session made, none ended)", async () => {
    for (const extra of [{ Origin: EVIL }, { "Sec-Fetch-Site": "cross-site" }, { Origin: "http://edge.test:8080" }] as Record<string, string>[]) {
      const login = await browse("/login", {
        body: new URLSearchParams({ token: TOKEN }).toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...extra },
      });
      expect(login.status).toBe(403);
      expect(login.headers.get("Set-Cookie")).toBeNull();
      const logout = await browse("/logout", { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", ...extra } });
      expect(logout.status).toBe(403);
      expect(logout.headers.get("Set-Cookie")).toBeNull();
    }
  });
});

describe("failed authentication is limited per client (the AUTH_RATE_LIMITER binding)", () => {
  it(`refuses a client after ${AUTH_FAILURE_LIMIT} failures in a period (429, Retry-After), whatever it sends then; other clients and missing credentials are not counted`, async () => {
    const guesser = anyClient();
    let failures = 0;
    let refused: Response | undefined;
    // A fixed window: a period that ends during the loop starts the count again, so allow one more round.
    while (failures <= 2 * AUTH_FAILURE_LIMIT) {
      const response = await call("/tasks", { token: `guess-${failures}`, headers: { "CF-Connecting-IP": guesser } });
      if (response.status === 429) {
        refused = response;
        break;
      }
      expect(response.status).toBe(401);
      failures++;
    }
    expect(failures).toBeGreaterThanOrEqual(AUTH_FAILURE_LIMIT);
    expect(refused).toBeDefined();
    expect(Number(refused!.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await json(refused!)).toMatchObject({ error: "too_many_requests" });
    // The right token, the sign-in form and /kafka are refused too while it lasts: guessing gains nothing.
    expect((await call("/tasks", { headers: { "CF-Connecting-IP": guesser } })).status).toBe(429);
    await failure(kafka("/topics", { headers: { "CF-Connecting-IP": guesser } }), 429);
    const form = await browse("/login", {
      body: new URLSearchParams({ token: TOKEN }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", "CF-Connecting-IP": guesser },
    });
    expect(form.status).toBe(429);
    expect(form.headers.get("Set-Cookie")).toBeNull();
    // Another client is served; a client without credentials is never counted.
    expect((await call("/tasks")).status).toBe(200);
    const visitor = anyClient();
    for (let i = 0; i < AUTH_FAILURE_LIMIT + 5; i++) expect((await call("/tasks", { token: null, headers: { "CF-Connecting-IP": visitor } })).status).toBe(401);
    expect((await call("/tasks", { headers: { "CF-Connecting-IP": visitor } })).status).toBe(200);
  });

  it("counts wrong sign-in forms too", async () => {
    const guesser = anyClient();
    let status = 0;
    for (let i = 0; i <= 2 * AUTH_FAILURE_LIMIT && status !== 429; i++) {
      status = (
        await browse("/login", { body: `token=wrong-${i}`, headers: { "Content-Type": "application/x-www-form-urlencoded", "CF-Connecting-IP": guesser } })
      ).status;
      if (status !== 429) expect(status).toBe(401);
    }
    expect(status).toBe(429);
  });

  it("without the binding, each isolate counts alone with the same limit (FailureWindows)", () => {
    const windows = new FailureWindows(3, 60_000);
    expect([1, 2, 3, 4].map(() => windows.count("c", 1_000))).toEqual([true, true, true, false]);
    expect(windows.count("other", 1_000)).toBe(true);
    expect(windows.count("c", 61_000)).toBe(true);
  });
});

describe("sessions are revocable", () => {
  it("POST /admin/sessions/revoke ends every session at once (a new session key, kept by the coordinator); signing in again works", async () => {
    const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);
    const key = await coordinator.sessionKey();
    expect(await coordinator.sessionKey()).toBe(key);
    const reader = await signIn(TEST_TOKENS.read);
    const admin = await signIn(TEST_TOKENS.admin);
    for (const cookie of [reader, admin]) expect((await browse("/tasks", { headers: withCookie(cookie) })).status).toBe(200);
    // A session reads, nothing more, whatever token opened it.
    expect((await browse("/stores/totals/keys", { headers: withCookie(admin) })).status).toBe(401);

    expect((await call("/admin/sessions/revoke", { method: "POST", token: TEST_TOKENS.read })).status).toBe(403);
    const revoked = await call("/admin/sessions/revoke", { method: "POST", token: TEST_TOKENS.admin });
    expect(revoked.status).toBe(200);
    expect(await coordinator.sessionKey()).not.toBe(key);
    for (const cookie of [reader, admin]) {
      expect((await browse("/tasks", { headers: withCookie(cookie) })).status).toBe(401);
      const page = await browse("/", { headers: withCookie(cookie) });
      expect(page.status).toBe(303);
      expect(page.headers.get("Location")).toBe("/login");
    }
    const again = await signIn(TEST_TOKENS.read);
    expect((await browse("/", { headers: withCookie(again) })).status).toBe(200);
  });

  it("takes only tokens that may read", async () => {
    const response = await browse("/login", {
      body: new URLSearchParams({ token: TEST_TOKENS.produce }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(response.status).toBe(403);
    expect(response.headers.get("Set-Cookie")).toBeNull();
  });
});

describe("internal error text is never in a response", () => {
  it("a log that fails under ingest and /kafka: 503 with a generic message and a code, the details logged only", async () => {
    const [key] = keysOn(2, 1, "hidden-error");
    for (const send of [
      () => call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 }, partition: 2 }] } }),
      () => kafka("/produce", { body: { topic: "orders", key, value: '{"amount":1}', partition: 2 } }),
    ]) {
      expect((await call("/admin/log/fail", { body: { topic: "orders", partition: 2, times: 1 } })).status).toBe(200);
      const response = await send();
      const text = await response.text();
      expect(response.status, text).toBe(503);
      expect(response.headers.get("Retry-After")).toBe("1");
      expect(text).toMatch(/unavailable/i);
      expect(text).not.toMatch(/injected|did not answer|orders\/2|Error|LogUnavailable/);
    }
  });

  it("a migration whose target dies taking its assignment: 503 without the instance's error", async () => {
    await driver.pipe("orders", [{ key: keysOn(3, 1, "hidden-move")[0]!, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const active = await activeInstance(driver.instances(), "0_3");
    const to = active.placement === "a" ? "b" : "a";
    await driver.task({ taskId: "0_3", placement: to }).crash("assign:after-meta");
    const response = await call("/admin/tasks/0_3/migrate", { body: { to } });
    const text = await response.text();
    expect(response.status, text).toBe(503);
    expect(JSON.parse(text)).toEqual({ error: "unavailable", message: expect.stringContaining("under way") });
    expect(text).not.toMatch(/injected|crash|Error|0_3@/);
    await driver.runUntilQuiet();
    expect((await call("/admin/tasks/0_3/migrate", { body: { to } })).status).toBe(200);
  });
});

describe("bounded work per request", () => {
  it("/kafka offsets, committed and commit take at most 1,000 partitions (400 naming the bound)", async () => {
    const many = Array.from({ length: 1_001 }, (_, i) => ({ topic: "orders", partition: i % 4 }));
    for (const path of ["/offsets/latest", "/committed/bounded/i"])
      expect((await failure(kafka(path, { body: many }), 400)).error).toMatch(/at most 1000 partitions/);
    await failure(kafka("/commit/bounded/i", { body: many.map((tp) => ({ ...tp, offset: 0 })) }), 400);
    await ok(kafka("/offsets/latest", { body: many.slice(0, 1_000) }));
  });

  it("GET /topics/:topic pages its partitions (limit, next)", async () => {
    const first = await json<{ partitions: { partition: number }[]; next: string | null }>(await call("/topics/orders?limit=3"));
    expect(first.partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
    const rest = await json<{ partitions: { partition: number }[]; next: string | null }>(await call(`/topics/orders?limit=3&cursor=${first.next}`));
    expect(rest.partitions.map((p) => p.partition)).toEqual([3]);
    expect(rest.next).toBeNull();
    expect((await json<{ next: string | null }>(await call("/topics/orders"))).next).toBeNull();
    for (const query of ["limit=1001", "limit=0", "cursor=bm9wZQ"]) expect((await call(`/topics/orders?${query}`)).status, query).toBe(400);
  });

  it("a scan merges at most MAX_SCAN_ENTRIES entries: a store of many partitions takes a smaller limit", () => {
    expect(maxScanLimit(4)).toBe(1000);
    expect(maxScanLimit(256)).toBe(125);
    expect(maxScanLimit(10_000)).toBe(3);
    expect(maxScanLimit(100_000)).toBe(1);
    for (const owners of [1, 4, 32, 256, 10_000]) expect(owners * maxScanLimit(owners)).toBeLessThanOrEqual(MAX_SCAN_ENTRIES);
  });
});
