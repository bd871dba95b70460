/**
 * The status page and browser sign-in, in workerd: redirects, the session cookie's attributes and
 * value (never the token), the cookie accepted only on safe GET routes, and the page's content
 * during a restore. The real browser test is test/node/status-page.test.ts.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { sessionValid, sessionValue, SESSION_SECONDS } from "../workers/api/status/session";
import { anyClient, call, json, TOKEN } from "./support/api";
import { EventReader } from "./support/sse";
import { COORDINATOR_NAME } from "../src/names";
import { activeInstance } from "./support/active";
import { TEST_TOKENS } from "./support/tokens";

const driver = new TestDriver(env, application);
const COOKIE = "__Host-edge_session";
/** The tokens a session may be opened with here (vitest.config.ts): those that may read. */
const READ_TOKENS = [TOKEN, TEST_TOKENS.admin, TEST_TOKENS.read];
const sessionKey = () => env.COORDINATOR.getByName(COORDINATOR_NAME).sessionKey();

/** A browser-like request: no redirect following, optional cookie and form. */
async function browse(path: string, options: { method?: string; cookie?: string; form?: Record<string, string>; bearer?: string } = {}) {
  const headers = new Headers({ "CF-Connecting-IP": anyClient() });
  if (options.cookie !== undefined) headers.set("Cookie", `${COOKIE}=${options.cookie}`);
  if (options.bearer !== undefined) headers.set("Authorization", `Bearer ${options.bearer}`);
  let body: string | undefined;
  if (options.form) {
    body = new URLSearchParams(options.form).toString();
    headers.set("Content-Type", "application/x-www-form-urlencoded");
  }
  const method = options.method ?? (body === undefined ? "GET" : "POST");
  return exports.default.fetch(new Request(`http://edge.test${path}`, { method, headers, body, redirect: "manual" }));
}

async function signIn(): Promise<string> {
  const response = await browse("/login", { form: { token: TOKEN } });
  expect(response.status).toBe(303);
  const setCookie = response.headers.get("Set-Cookie")!;
  return /__Host-edge_session=([^;]+)/.exec(setCookie)![1]!;
}

async function sha256(text: string): Promise<string[]> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  const b64 = btoa(String.fromCharCode(...bytes));
  return [hex, b64, b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")];
}

describe("sign-in", () => {
  it("sends an unauthenticated browser to /login, which serves a form", async () => {
    const page = await browse("/");
    expect(page.status).toBe(303);
    expect(page.headers.get("Location")).toBe("/login");
    const login = await browse("/login");
    expect(login.status).toBe(200);
    expect(login.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(login.headers.get("Content-Security-Policy")).toContain("default-src 'none'");
    const html = await login.text();
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain('<form class="login" method="post" action="/login">');
    expect(html).toContain('name="token" type="password"');
  });

  it("refuses a wrong or missing token without a cookie", async () => {
    for (const form of [{ token: "wrong" }, { token: "" }, {}]) {
      const response = await browse("/login", { form: form as Record<string, string> });
      expect([400, 401]).toContain(response.status);
      expect(response.headers.get("Set-Cookie")).toBeNull();
      const html = await response.text();
      expect(html).toContain('class="error"');
      expect(html).not.toContain(TOKEN);
    }
  });

  it("sets a Secure, HttpOnly, SameSite=Strict host cookie that is neither the token nor its hash", async () => {
    const response = await browse("/login", { form: { token: TOKEN } });
    expect(response.status).toBe(303);
    expect(response.headers.get("Location")).toBe("/");
    const setCookie = response.headers.get("Set-Cookie")!;
    expect(setCookie).toMatch(/^__Host-edge_session=/);
    for (const attribute of ["Secure", "HttpOnly", "SameSite=Strict", "Path=/", `Max-Age=${SESSION_SECONDS}`]) expect(setCookie).toContain(attribute);
    expect(setCookie).not.toContain("Domain=");
    const value = /__Host-edge_session=([^;]+)/.exec(setCookie)![1]!;
    expect(value).not.toContain(TOKEN);
    for (const hash of await sha256(TOKEN)) expect(value).not.toContain(hash);
    const key = await sessionKey();
    expect(await sessionValid(value, key, [TOKEN])).toBe(true);
    expect(await sessionValid(value, key, ["another-token"])).toBe(false);
    expect(await sessionValid(value, "another-key", [TOKEN])).toBe(false);
  });

  it("signs in with every token that may read (API, admin, read), and the session is valid for it alone", async () => {
    const key = await sessionKey();
    for (const token of READ_TOKENS) {
      const response = await browse("/login", { form: { token } });
      expect(response.status, token).toBe(303);
      const value = /__Host-edge_session=([^;]+)/.exec(response.headers.get("Set-Cookie")!)![1]!;
      expect(await sessionValid(value, key, [token])).toBe(true);
      const others = READ_TOKENS.filter((t) => t !== token);
      expect(await sessionValid(value, key, others)).toBe(false);
    }
  });

  it("accepts the cookie for the status page and safe GET routes only", async () => {
    const cookie = await signIn();
    expect((await browse("/", { cookie })).status).toBe(200);
    expect((await browse("/tasks", { cookie })).status).toBe(200);
    expect((await browse("/metrics", { cookie })).status).toBe(200);
    // Not for reads of data, nor for anything that changes state.
    expect((await browse("/stores/totals/keys", { cookie })).status).toBe(401);
    const paused = await browse("/admin/restore/pause", { cookie, method: "POST" });
    expect(paused.status).toBe(401);
    expect((await driver.restoreWorker("a").status()).paused).toBe(false);
    expect((await browse("/admin/tasks/0_0/corrupt", { cookie, method: "POST" })).status).toBe(401);
  });

  it("refuses a tampered, expired or foreign cookie", async () => {
    const cookie = await signIn();
    const flipped = cookie.slice(0, -1) + (cookie.endsWith("A") ? "B" : "A");
    const [version, expires, mac] = cookie.split(".");
    const extended = `${version}.${Number(expires) + 3600}.${mac}`;
    const key = await sessionKey();
    const expired = await sessionValue(key, TOKEN, Date.now() - (SESSION_SECONDS + 60) * 1000);
    const foreign = await sessionValue("some-other-deployment-key", TOKEN);
    const unknownToken = await sessionValue(key, "a-token-not-configured");
    for (const bad of [flipped, extended, expired, foreign, unknownToken, "", TOKEN, "v1.1.x"]) {
      const response = await browse("/", { cookie: bad });
      expect(response.status, bad).toBe(303);
      expect(response.headers.get("Location")).toBe("/login");
    }
  });

  it("signs out by clearing the cookie", async () => {
    const response = await browse("/logout", { method: "POST" });
    expect(response.status).toBe(303);
    expect(response.headers.get("Location")).toBe("/login");
    expect(response.headers.get("Set-Cookie")).toMatch(/^__Host-edge_session=;.*Max-Age=0/);
  });
});

describe("the status page", () => {
  it("shows placements as columns with every instance, live (a script allowed by its nonce, a refresh without JavaScript), also for a bearer token", async () => {
    await driver.instances();
    const response = await browse("/", { bearer: TOKEN });
    expect(response.status).toBe(200);
    expect(response.headers.get("Cache-Control")).toBe("no-store");
    const csp = response.headers.get("Content-Security-Policy")!;
    const nonce = /script-src 'nonce-([A-Za-z0-9_-]+)'/.exec(csp)![1]!;
    expect(csp).toContain("connect-src 'self'");
    const html = await response.text();
    expect(html).toContain('<noscript><meta http-equiv="refresh" content="2"/></noscript>');
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain(`<script nonce="${nonce}">`);
    expect(html).toContain('new URL("/tasks/watch", location.href)');
    // A new nonce each time.
    expect((await browse("/", { bearer: TOKEN })).headers.get("Content-Security-Policy")).not.toContain(nonce);
    for (const placement of ["a", "b"]) expect(html).toContain(`data-placement="${placement}"`);
    for (let p = 0; p < 4; p++) expect(html).toMatch(new RegExp(`data-instance="0_${p}@[ab]" data-state="RUNNING"`));
    expect(html).toContain("epoch");
    expect(html).toContain("incarnation");
    expect(html).toContain("lag");
  });

  it("shows a restore as a progress bar with numbers, and the corruption among recent events", async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `page-${i}`);
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const active = await activeInstance(driver.instances(), "0_2");
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      const wiped = await driver.task(active).corrupt();
      const end = wiped.changelogs[0]!.end!;
      const html = await (await browse("/", { bearer: TOKEN })).text();
      const name = `0_2@${active.placement}`;
      expect(html).toContain(`data-instance="${name}" data-state="RESTORING"`);
      expect(html).toContain(`<progress max="${end}" value="0" data-instance="${name}" data-kind="restore">`);
      expect(html).toMatch(new RegExp(`Restoring <b>0</b> / ${end.toLocaleString("en-US")} records \\(0%\\)`));
      expect(html).toContain("restoration paused");
      expect(html).toContain("Recent corruptions, migrations, input lost to retention, skipped records and input resets");
      expect(html).toContain("corrupted, wiped");
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
  });

  it("escapes what it shows", async () => {
    // The page's script is a constant of the code (status/live.tsx), not something shown.
    const html = (await (await browse("/", { bearer: TOKEN })).text()).replace(/<script[^>]*>[\s\S]*?<\/script>/, "");
    expect(html).not.toMatch(
      /<(?!\/?(html|head|meta|title|style|body|header|h1|h2|h3|span|b|form|button|main|div|section|p|article|ul|li|progress|table|thead|tbody|tr|th|td|label|input|nav|a|time|noscript)\b|!DOCTYPE)/,
    );
  });
});

describe("GET /tasks/watch", () => {
  async function watchView(path: string, options: Parameters<typeof browse>[1] = { bearer: TOKEN }) {
    const response = await browse(path, options);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    return new EventReader(response);
  }

  it("answers 401 without a credential, 403 for a token that may not read, and takes the session cookie", async () => {
    const anonymous = await browse("/tasks/watch");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("WWW-Authenticate")).toContain("Bearer");
    expect((await browse("/tasks/watch", { bearer: "wrong" })).status).toBe(401);
    expect((await browse("/tasks/watch", { bearer: TEST_TOKENS.produce })).status).toBe(403);
    expect((await browse("/tasks/watch?format=xml", { bearer: TOKEN })).status).toBe(400);
    const stream = await watchView("/tasks/watch?format=html", { cookie: await signIn() });
    const first = await stream.next();
    expect(first.event).toBe("view");
    expect(Object.keys(JSON.parse(first.data).parts)).toEqual(["shutdown", "summary", "pages", "placements", "recent"]);
    await stream.close();
  });

  it("sends the current view first, then a change when a task is corrupted and restores, and when ingest moves lag", async () => {
    await driver.runUntilQuiet();
    const listed = await json(await call("/tasks?limit=500"));
    const stream = await watchView("/tasks/watch?limit=500");
    const first = await stream.next();
    expect(first).toMatchObject({ event: "view" });
    expect(first.id).toBeUndefined();
    const view = JSON.parse(first.data);
    expect(view.tasks.map((t: { id: string; placement: string; state: string }) => `${t.id}@${t.placement}:${t.state}`)).toEqual(
      listed.tasks.map((t: { id: string; placement: string; state: string }) => `${t.id}@${t.placement}:${t.state}`),
    );
    expect(view.summary.instances).toBe(listed.summary.instances);
    expect(view).toMatchObject({ shutdown: null, next: null });
    expect(view.tasks[0]).not.toHaveProperty("counters");

    // A corruption: the active instance of 0_1 goes RESTORING (restoration paused), a change names it alone.
    const active = await activeInstance(driver.instances(), "0_1");
    const name = `0_1@${active.placement}`;
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      await driver.task(active).corrupt();
      const restoring = await nextChange(stream, (c) => c.tasks.some((t) => `${t.id}@${t.placement}` === name && t.state === "RESTORING"));
      expect(restoring.removed).toEqual([]);
      const lagBefore = restoring.tasks.find((t) => `${t.id}@${t.placement}` === name)!.lag;
      // Ingest while it restores (it processes nothing): its lag moves.
      await driver.pipe("orders", [{ key: "lag-probe", value: { amount: 1 }, partition: 1 }]);
      await nextChange(stream, (c) => c.tasks.some((t) => `${t.id}@${t.placement}` === name && t.lag > lagBefore));
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    await nextChange(stream, (c) => c.tasks.some((t) => `${t.id}@${t.placement}` === name && t.state === "RUNNING" && t.lag === 0));
    await stream.close();
    await driver.runUntilQuiet();
  });
});

type ViewChange = { tasks: { id: string; placement: string; state: string; lag: number; incarnation: number }[]; removed: string[] };

/** Change events until one satisfies `wanted` (each within the reader's bound). */
async function nextChange(stream: EventReader, wanted: (change: ViewChange) => boolean): Promise<ViewChange> {
  for (let i = 0; i < 30; i++) {
    const event = await stream.next();
    expect(event.event).toBe("change");
    const change = JSON.parse(event.data) as ViewChange;
    if (wanted(change)) return change;
  }
  throw new Error("no such change in 30 events");
}
