/**
 * Issue #31's findings against a real `wrangler dev`, with the real `@upstash/kafka` client (its
 * own HTTP layer, without its retries) and a real browser (headless Chromium, as in
 * status-page.test.ts):
 * 1. the runtime's producer header and 2. a forged group epoch are refused (403) with every client
 *    token, and the application stays exact: no task fenced or failed, totals untouched, through a
 *    migration; only the runtime's credential (LOG_TOKEN) carries them, through UpstashLog;
 * 4. no write by GET, JSON-only writes, no Basic challenge, another origin refused — and a page of
 *    another site, in a browser that knows the credentials, appends nothing and signs nobody in;
 * 5. 405 with Allow, `no-store`/`nosniff`, generic 503s, bounded requests, failed
 *    authentication limited per client (last: it blocks this process's client for a minute).
 * The same in workerd, faster and in more detail: test/http-identities, http-roles, http-browsers.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import packagedChromium from "@sparticuz/chromium";
import { Kafka, UpstashError } from "@upstash/kafka";
import { chromium, type BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogUnavailable, ProducerFenced } from "../../src/log/errors";
import { partitionForKey } from "../../src/log/partitioner";
import { kafkaHttpLayer, UpstashLog } from "../../src/kafka-rest/upstash-log";
import { freePort, startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

/** Enough partitions that a scan's bound (partitions × limit ≤ 32,000) is below the limit's own 1,000. */
const PARTITIONS = 40;
const TOKENS = { produce: "node-produce-token", read: "node-read-token", admin: "node-admin-token", log: "node-log-token" };
const CHANGELOG = "edge-streams-totals-changelog";
const GROUP = "edge-streams";

let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev({
    topics: { extra: 2 },
    vars: {
      PARTITIONS: String(PARTITIONS),
      FAULT_INJECTION: "on",
      PRODUCE_TOKEN: TOKENS.produce,
      READ_TOKEN: TOKENS.read,
      ADMIN_TOKEN: TOKENS.admin,
      LOG_TOKEN: TOKENS.log,
    },
  });
}, 180_000);

afterAll(async () => {
  await dev?.stop();
});

async function api(path: string, init: { method?: string; body?: unknown; token?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${init.token ?? dev.token}`, ...init.headers };
  if (init.body !== undefined) headers["Content-Type"] ??= "application/json";
  const body = init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body);
  return fetch(`${dev.url}${path}`, { method: init.method ?? (body === undefined ? "GET" : "POST"), headers, body, redirect: "manual" });
}

/** The real client's HTTP layer as UpstashLog uses it: no retries of its own, so a refusal answers at once. */
function client(password: string) {
  const layer = kafkaHttpLayer(new Kafka({ url: `${dev.url}/kafka`, username: "edge", password }));
  if (!layer) throw new Error("@upstash/kafka's HTTP layer is out of reach");
  return layer;
}

/** The status of the client's refusal (it throws UpstashError); 200 when it succeeded. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    if (error instanceof UpstashError) return error.status;
    throw error;
  }
}

async function ends(topic: string, partitions: number): Promise<number[]> {
  const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
  const answer = (await client(TOKENS.read).post({ path: ["offsets", "latest"], body: tps, retries: 0 })) as { offset: number }[];
  return answer.map((o) => o.offset);
}

async function committed(): Promise<number[]> {
  const tps = Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: "orders", partition }));
  const answer = (await client(TOKENS.read).post({ path: ["committed", GROUP, "reader"], body: tps, retries: 0 })) as { offset: number }[];
  return answer.map((o) => o.offset);
}

type Task = { id: string; role: string; placement: string; state: string; lag: number; epoch: number; failure: unknown };

async function actives(): Promise<Task[]> {
  const response = await api("/tasks");
  if (response.status !== 200) return [];
  return ((await response.json()) as { tasks: Task[] }).tasks.filter((t) => t.role === "active");
}

/** Every task RUNNING, none stopped or behind. */
async function exact(): Promise<boolean> {
  const tasks = await actives();
  return tasks.length === PARTITIONS && tasks.every((t) => t.state === "RUNNING" && t.lag === 0 && t.failure === null);
}

const keyOn = (partition: number, prefix: string) => {
  for (let i = 0; ; i++) if (partitionForKey(`${prefix}-${i}`, PARTITIONS) === partition) return `${prefix}-${i}`;
};

describe("findings 1 and 2: the runtime's identities, from outside", () => {
  it("the producer header and a forged group epoch are refused with every client token; the application stays exact through a migration", async () => {
    const a = keyOn(0, "forged");
    expect((await api("/topics/orders/records", { body: { records: [{ key: a, value: { amount: 2 } }] } })).status).toBe(200);
    await until(exact, 90_000, "every task to run and process the first order");
    const epochs = Object.fromEntries((await actives()).map((t) => [t.id, t.epoch]));
    const before = { orders: await ends("orders", PARTITIONS), totals: await ends("totals", PARTITIONS), changelog: await ends(CHANGELOG, PARTITIONS) };
    const group = await committed();
    const fencing = [{ key: "edge-producer", value: "edge-streams-0_0;9007199254740991;0" }];
    const attacker = [{ key: "edge-producer", value: "edge-streams-attacker;0;0" }];

    for (const token of [dev.token, TOKENS.produce]) {
      const kafka = client(token);
      const produce = (path: string[], body: unknown) => statusOf(kafka.post({ path, body, retries: 0 }));
      expect(await produce(["produce"], [{ topic: "totals", partition: 0, key: a, value: "x", headers: fencing }])).toBe(403);
      expect(await produce(["produce"], [{ topic: "orders", partition: 0, key: a, value: '{"amount":1}', headers: fencing }])).toBe(403);
      expect(await produce(["produce"], [{ topic: CHANGELOG, partition: 0, key: a, value: "not json", headers: attacker }])).toBe(403);
      expect(await produce(["produce", "orders"], { key: a, value: '{"amount":1}', headers: fencing })).toBe(403);
      // The output topic itself, without any header.
      expect(await produce(["produce"], [{ topic: "totals", partition: 0, key: a, value: "x" }])).toBe(403);
      const ingest = await api("/topics/orders/records", { body: { records: [{ key: a, value: { amount: 1 }, headers: fencing }] }, token });
      expect(ingest.status).toBe(403);
    }
    for (const token of [dev.token, TOKENS.read, TOKENS.admin]) {
      const commit = (instance: string) =>
        statusOf(client(token).post({ path: ["commit", GROUP, instance], body: { topic: "orders", partition: 1, offset: 0 }, retries: 0 }));
      expect(await commit("edge-epoch-9007199254740991")).toBe(403);
      expect(await commit("outsider")).toBe(403);
    }
    expect({ orders: await ends("orders", PARTITIONS), totals: await ends("totals", PARTITIONS), changelog: await ends(CHANGELOG, PARTITIONS) }).toEqual(
      before,
    );
    expect(await committed()).toEqual(group);

    // The next order for the key — produced by the real client with the produce token — is processed
    // by the same, unfenced instance; a routine migration restores exactly that.
    const producer = new Kafka({ url: `${dev.url}/kafka`, username: "edge", password: TOKENS.produce }).producer();
    await producer.produce("orders", { amount: 3 }, { key: a });
    await until(exact, 60_000, "the order to be processed");
    expect(Object.fromEntries((await actives()).map((t) => [t.id, t.epoch]))).toEqual(epochs);
    const read = async () => ((await (await api(`/stores/totals/keys/${a}`, { token: TOKENS.read })).json()) as { value: unknown }).value;
    expect(await read()).toEqual({ count: 2, sum: 5 });
    const task = (await actives()).find((t) => t.id === "0_0")!;
    const moved = await api("/admin/tasks/0_0/migrate", { body: { to: task.placement === "a" ? "b" : "a" }, token: TOKENS.admin });
    expect([200, 503]).toContain(moved.status);
    await until(async () => (await actives()).find((t) => t.id === "0_0")?.placement !== task.placement && (await exact()), 60_000, "the migration");
    expect(await read()).toEqual({ count: 2, sum: 5 });
    const p = partitionForKey(a, PARTITIONS);
    await until(async () => (await committed())[p] === (await ends("orders", PARTITIONS))[p], 30_000, "the group's offsets to be committed, unfenced");
  });

  it("the runtime's credential (LOG_TOKEN) carries them through UpstashLog; the API token cannot", async () => {
    const tp = { topic: "extra", partition: 1 };
    const runtime = new UpstashLog({ url: `${dev.url}/kafka`, username: "edge", password: TOKENS.log, timeoutMs: 10_000 });
    await runtime.append(tp, [{ key: "k", value: "v1" }], { producerId: "other-deployment-0_0", epoch: 5, sequence: 0 });
    await expect(runtime.append(tp, [{ key: "k", value: "zombie" }], { producerId: "other-deployment-0_0", epoch: 4, sequence: 0 })).rejects.toBeInstanceOf(
      ProducerFenced,
    );
    await runtime.commitOffset(GROUP, { topic: "extra", partition: 0 }, { offset: 0, metadata: "", epoch: 5 });
    const all = new UpstashLog({ url: `${dev.url}/kafka`, username: "edge", password: dev.token, timeoutMs: 10_000 });
    await expect(all.append(tp, [{ key: "k", value: "v2" }], { producerId: "other-deployment-0_0", epoch: 6, sequence: 0 })).rejects.toBeInstanceOf(
      LogUnavailable,
    );
    await expect(all.commitOffset(GROUP, { topic: "extra", partition: 0 }, { offset: 0, metadata: "", epoch: 6 })).rejects.toBeInstanceOf(LogUnavailable);
    // Without a producer, a client may append to a topic the application does not write.
    await all.append(tp, [{ key: "k", value: "plain" }]);
  });
});

/** A POST whose body is sent chunked (no Content-Length), as a browser's stream or a proxy may. */
function chunkedPost(path: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${dev.url}${path}`, { method: "POST", headers: { ...headers, "Transfer-Encoding": "chunked" }, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.write(body.slice(0, 10));
    req.end(body.slice(10));
  });
}

describe("finding 4: writes by GET and by simple cross-site requests", () => {
  it("no write by GET, JSON-only writes, no Basic challenge, another origin refused; nothing appended", async () => {
    const partition = partitionForKey("x", PARTITIONS);
    const before = await ends("orders", PARTITIONS);
    const basic = `Basic ${Buffer.from(`edge:${dev.token}`).toString("base64")}`;
    const getWrite = await fetch(`${dev.url}/kafka/produce/orders/${encodeURIComponent('{"amount":1}')}?key=x`, { headers: { Authorization: basic } });
    expect(getWrite.status).toBe(404);
    for (const [type, body] of [
      ["text/plain", '{"value":"{\\"amount\\":1}","key":"x"}'],
      ["application/x-www-form-urlencoded", "value=1&key=x"],
    ]) {
      const response = await fetch(`${dev.url}/kafka/produce/orders`, { method: "POST", headers: { Authorization: basic, "Content-Type": type! }, body });
      expect(response.status, type).toBe(415);
      expect(((await response.json()) as { error: string }).error).toContain("application/json");
    }
    // A chunked body refused before it is read: the server keeps serving the connection's next requests.
    expect(await chunkedPost("/kafka/produce/orders", { Authorization: basic, "Content-Type": "text/plain" }, "x".repeat(50_000))).toBe(415);
    const challenge = await fetch(`${dev.url}/kafka/topics`, { headers: { Authorization: `Basic ${Buffer.from("edge:wrong").toString("base64")}` } });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get("WWW-Authenticate")).toBeNull();
    const crossSite = await fetch(`${dev.url}/kafka/produce/orders`, {
      method: "POST",
      headers: { Authorization: basic, "Content-Type": "application/json", Origin: "https://evil.example", "Sec-Fetch-Site": "cross-site" },
      body: JSON.stringify({ value: '{"amount":1}', key: "x" }),
    });
    expect(crossSite.status).toBe(403);
    expect((await ends("orders", PARTITIONS))[partition]).toBe(before[partition]);
    expect(await ends("orders", PARTITIONS)).toEqual(before);
  });

  it("a page of another site, in a browser that knows the credentials, appends nothing and signs nobody in", { timeout: 120_000 }, async () => {
    const executablePath = existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : await packagedChromium.executablePath();
    const attackerPort = await freePort();
    // Another site: `localhost` is not the site `127.0.0.1` (wrangler dev's) is.
    const attacker = `http://localhost:${attackerPort}`;
    const page = `<!doctype html><body>
      <img src="${dev.url}/kafka/produce/orders/%7B%22amount%22%3A1%7D?key=img">
      <iframe name="a"></iframe><iframe name="b"></iframe><iframe name="c"></iframe>
      <form id="text" target="a" method="post" enctype="text/plain" action="${dev.url}/kafka/produce/orders"><input name='{"value":"{\\"amount\\":1}","key":"form","x":"' value='"}'></form>
      <form id="form" target="b" method="post" action="${dev.url}/kafka/produce/orders"><input name="value" value="1"></form>
      <form id="login" target="c" method="post" action="${dev.url}/login"><input name="token" value="${dev.token}"></form>
      <script>for (const id of ["text", "form", "login"]) document.getElementById(id).submit(); fetch("${dev.url}/kafka/produce/orders", { method: "POST", mode: "no-cors", credentials: "include", body: "x" });</script>
    </body>`;
    let served = 0;
    const server: Server = createServer((_req, res) => {
      served++;
      res.writeHead(200, { "Content-Type": "text/html" }).end(page);
    });
    // Every interface: `localhost` may resolve to ::1 or 127.0.0.1.
    await new Promise<void>((resolve) => server.listen(attackerPort, resolve));
    const profile = mkdtempSync(join(tmpdir(), "edge-streams-chromium-"));
    const context: BrowserContext = await chromium.launchPersistentContext(profile, {
      executablePath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
      // The browser knows the credentials: it answers any 401 that asks for them.
      httpCredentials: { username: "edge", password: dev.token },
    });
    try {
      const before = await ends("orders", PARTITIONS);
      const seen: { url: string; status: number }[] = [];
      context.on("response", (response) => {
        if (response.url().startsWith(dev.url)) seen.push({ url: response.url(), status: response.status() });
      });
      const tab = await context.newPage();
      await tab.goto(attacker);
      // Every request the page made has been answered (and the forms' frames have loaded).
      await tab.waitForLoadState("networkidle", { timeout: 30_000 });
      await until(
        async () => seen.some((s) => s.url.endsWith("/login")) && seen.filter((s) => s.url.includes("/kafka/produce")).length >= 2,
        30_000,
        "the page's requests to be answered",
      );
      expect(served).toBeGreaterThan(0);
      for (const { url, status } of seen) expect([401, 403, 404, 415], url).toContain(status);
      expect(await ends("orders", PARTITIONS)).toEqual(before);
      expect((await context.cookies(dev.url)).map((c) => c.name)).not.toContain("__Host-edge_session");
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("finding 5 and #30's smaller items", () => {
  it("405 with Allow, no-store and nosniff, a generic 503, /login from another site, bounded requests", async () => {
    const wrong = await api("/tasks", { method: "POST" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("Allow")).toBe("GET, HEAD");
    for (const response of [wrong, await api("/tasks"), await api("/tasks", { token: "nope-but-not-many" }), await fetch(`${dev.url}/login`)]) {
      expect(response.headers.get("Cache-Control")).toBe("no-store");
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    }
    const login = await fetch(`${dev.url}/login`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: "https://evil.example" },
      body: new URLSearchParams({ token: dev.token }),
      redirect: "manual",
    });
    expect(login.status).toBe(403);
    expect(login.headers.get("Set-Cookie")).toBeNull();

    const partition = partitionForKey("unavailable", PARTITIONS);
    expect((await api("/admin/log/fail", { body: { topic: "orders", partition, times: 1 } })).status).toBe(200);
    const unavailable = await api("/topics/orders/records", { body: { records: [{ key: "unavailable", value: { amount: 1 } }] } });
    const text = await unavailable.text();
    expect(unavailable.status, text).toBe(503);
    expect(text).not.toMatch(/injected|did not answer|orders\/|Error/);

    const many = Array.from({ length: 1_001 }, (_, i) => ({ topic: "orders", partition: i % PARTITIONS }));
    expect(await statusOf(client(TOKENS.read).post({ path: ["offsets", "latest"], body: many, retries: 0 }))).toBe(400);
    expect(await statusOf(client(TOKENS.read).post({ path: ["committed", "g", "i"], body: many, retries: 0 }))).toBe(400);
    const scan = await api("/stores/totals/keys?limit=801", { token: TOKENS.read });
    expect(scan.status).toBe(400);
    expect(((await scan.json()) as { message: string }).message).toMatch(/at most 800 .* 40 partitions/);
    await until(async () => (await api("/stores/totals/keys?limit=800", { token: TOKENS.read })).status === 200, 30_000, "a scan at the bound");
    const page = (await (await api("/topics/orders?limit=25", { token: TOKENS.read })).json()) as { partitions: unknown[]; next: string | null };
    expect(page.partitions).toHaveLength(25);
    expect(page.next).not.toBeNull();
  });

  // Last: it leaves this process's client refused for a minute.
  it("failed authentication is limited per client: 429 past the limit, then even the right token is refused for a while", async () => {
    let failures = 0;
    let status = 401;
    while (status === 401 && failures <= 41) {
      status = (await api("/tasks", { token: `guess-${failures}` })).status;
      if (status === 401) failures++;
    }
    expect(status).toBe(429);
    // The limit (20 a minute) less the few failures the tests above made on purpose.
    expect(failures).toBeGreaterThanOrEqual(15);
    const right = await api("/tasks");
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("Retry-After"))).toBeGreaterThan(0);
  });
});
