/**
 * Subscriptions over a WebSocket (docs/subscriptions.md): the watch paths with `Upgrade:
 * websocket` send the same events as server-sent events, as JSON messages; `?lastEventId=`
 * resumes with no gap and no repeat after the task's object crashed; a browser's token comes as a
 * subprotocol or its session cookie; a subscriber that does not acknowledge gets no more than a
 * window of messages; the isolate's subscription slots count sockets too.
 */
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { SOCKET_WINDOW } from "../src/subscriptions/socket-credit";
import { watchSlots } from "../workers/api/routes/watch";
import { activeInstance } from "./support/active";
import { anyClient, call, json, TOKEN } from "./support/api";
import { hubSeries } from "./support/hub-series";
import { keyOn, keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { type SocketEvent, socketOf } from "./support/socket";
import { TEST_SCOPED_TOKENS } from "./support/tokens";
import { until } from "./support/until";
import { injectFault } from "./support/storm";
import { recovered } from "./support/recovered";
import { subscriptionHubName } from "../src/names";
import { encodeToken } from "../src/subscriptions/resume-token";

/** Sockets per key a hub takes in this project (vitest.config.ts, HUB_MAX_SOCKETS_PER_KEY). */
const HUB_PER_KEY = 3;

const driver = new TestDriver(env, application);
const UPGRADE = { Upgrade: "websocket" };
const ORIGIN = "http://edge.test";

const keyPath = (key: string) => `/stores/totals/keys/${encodeURIComponent(key)}/watch`;

async function watchSocket(path: string, autoAck = true) {
  return socketOf(await call(path, { headers: UPGRADE }), autoAck);
}

async function order(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect((await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } })).status).toBe(200);
  await driver.runUntilQuiet();
}

const counts = (events: SocketEvent[]) => events.map((e) => [e.event, e.data.value?.count ?? null]);

beforeAll(async () => {
  await driver.instances();
  await driver.runUntilQuiet();
});

describe("a key over a WebSocket", () => {
  it("sends the value, then each committed change in order, each a JSON message with its resume token", async () => {
    const key = keyOn(0, "ws-first");
    const socket = await watchSocket(keyPath(key));
    const first = await socket.next();
    expect(first).toEqual({ event: "message", data: { key, value: null }, id: expect.stringMatching(/^w1\./) });
    await order(key, 3);
    const changes = await socket.take(3);
    expect(changes.map((e) => e.data)).toEqual([1, 2, 3].map((n) => ({ key, value: { count: n, sum: n } })));
    expect(changes.every((e) => e.event === "message" && e.id?.startsWith("w1."))).toBe(true);
    socket.close();
  });

  it("resumes with ?lastEventId= after the task's object crashed: every change after that event, once", async () => {
    const key = keyOn(1, "ws-resume");
    const socket = await watchSocket(keyPath(key));
    await socket.next();
    await order(key, 2);
    await socket.take(2);
    const lastId = socket.lastId!;
    socket.close();

    const task = (await activeInstance(driver.instances(), 1)).taskId;
    expect((await call(`/admin/tasks/${task}/crash`, { method: "POST" })).status).toBe(200);
    await order(key, 3);
    const resumed = await watchSocket(`${keyPath(key)}?lastEventId=${encodeURIComponent(lastId)}`);
    expect(counts(await resumed.take(3))).toEqual([
      ["message", 3],
      ["message", 4],
      ["message", 5],
    ]);
    await order(key, 1);
    expect(counts([await resumed.next()])).toEqual([["message", 6]]);
    resumed.close();
  });

  it("refuses a resume token that is not the subscription's (400, no socket)", async () => {
    const response = await call(`${keyPath(keyOn(0, "ws-bad"))}?lastEventId=garbage`, { headers: UPGRADE });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "invalid_input", message: expect.stringContaining("lastEventId") });
  });
});

describe("a prefix over a WebSocket", () => {
  it("sends the snapshot, snapshot-end, then the changes of those keys", async () => {
    const keys = [keyOn(2, "wsp-a"), keyOn(3, "wsp-b")];
    await order(keys[0]!, 1);
    const socket = await watchSocket("/stores/totals/watch?prefix=wsp-");
    expect(await socket.take(2)).toEqual([
      { event: "message", data: { key: keys[0], value: { count: 1, sum: 1 } } },
      { event: "snapshot-end", data: { prefix: "wsp-", keys: 1 }, id: expect.stringMatching(/^w1\./) },
    ]);
    await order(keys[1]!, 1);
    expect((await socket.next()).data).toEqual({ key: keys[1], value: { count: 1, sum: 1 } });
    socket.close();
  });

  it("sends no more than a window of messages to a subscriber that does not acknowledge, and the rest, in order, once it does", async () => {
    const keys = keysOn(1, SOCKET_WINDOW + 20, "wsslow-");
    expect((await call("/topics/orders/records", { body: { records: keys.map((key) => ({ key, value: { amount: 1 } })) } })).status).toBe(200);
    await driver.runUntilQuiet();
    const socket = await watchSocket("/stores/totals/watch?prefix=wsslow-", false);
    const first = await socket.take(SOCKET_WINDOW);
    // The server waits for an acknowledgement: no message past the window arrives meanwhile.
    await order(keys[0]!, 1);
    await expect(socket.next(500)).rejects.toThrow(/no message/);
    expect(socket.received).toBe(SOCKET_WINDOW);
    socket.ack();
    const rest = await socket.take(22);
    expect(rest.at(-2)!).toEqual({ event: "snapshot-end", data: { prefix: "wsslow-", keys: keys.length }, id: expect.any(String) });
    expect(rest.at(-1)!.data).toEqual({ key: keys[0], value: { count: 2, sum: 2 } });
    const snapshotKeys = [...first, ...rest.slice(0, -2)].map((e) => e.data.key);
    expect(snapshotKeys).toEqual([...keys].sort());
    socket.close();
  });
});

describe("a prefix's socket, fed by every partition's hub", () => {
  const hub = (partition: number) => env.SUBSCRIPTION_HUB!.getByName(subscriptionHubName({ topic: "edge-streams-totals-changelog", partition }));
  const all = () => Promise.all([0, 1, 2, 3].map(async (p) => (await hub(p).stats()).sockets));

  it("holds a socket at each partition's hub while open, and follows a hub's reset on the same socket: each change once", async () => {
    await until(async () => (await all()).every((n) => n === 0), 10_000, "earlier sockets forgotten", 20);
    const befores = [0, 0, 0, 0];
    const socket = await watchSocket("/stores/totals/watch?prefix=wsp-hub-");
    expect((await socket.next()).event).toBe("snapshot-end");
    await until(async () => (await all()).every((n, p) => n === befores[p]! + 1), 10_000, "a socket at each hub", 20);
    const keys = [keyOn(0, "wsp-hub-"), keyOn(3, "wsp-hub-")];
    await order(keys[0]!, 1);
    expect((await socket.next()).data).toEqual({ key: keys[0], value: { count: 1, sum: 1 } });
    await runInDurableObject(hub(3), (_object, state) => state.abort("injected crash: hub")).catch(() => undefined);
    await order(keys[1]!, 2);
    await order(keys[0]!, 1);
    const changes = (await socket.take(3)).map((e) => [e.data.key, e.data.value.count]);
    expect(changes.filter(([key]) => key === keys[1])).toEqual([
      [keys[1], 1],
      [keys[1], 2],
    ]);
    expect(changes.filter(([key]) => key === keys[0])).toEqual([[keys[0], 2]]);
    await expect(socket.next(300)).rejects.toThrow(/no message/);
    socket.close();
    await until(async () => (await all()).every((n, p) => n <= befores[p]!), 10_000, "the hubs forgot the sockets", 20);
  });
});

describe("authentication of a socket", () => {
  it("answers 401 without a credential, and takes a token as a subprotocol, answering edge-streams (never the token)", async () => {
    const path = keyPath(keyOn(0, "ws-auth"));
    expect((await call(path, { headers: UPGRADE, token: null })).status).toBe(401);
    const wrong = await call(path, { headers: { ...UPGRADE, "Sec-WebSocket-Protocol": `edge-streams, bearer.${btoa("wrong")}` }, token: null });
    expect(wrong.status).toBe(401);
    // The token alone, without edge-streams offered, is no credential either.
    expect((await call(path, { headers: { ...UPGRADE, "Sec-WebSocket-Protocol": `bearer.${b64url(TOKEN)}` }, token: null })).status).toBe(401);
    // A produce-only token may not read.
    const produce = TEST_SCOPED_TOKENS.PRODUCE_TOKEN.split(",")[0]!;
    expect((await call(path, { headers: { ...UPGRADE, "Sec-WebSocket-Protocol": `edge-streams, bearer.${b64url(produce)}` }, token: null })).status).toBe(403);

    const response = await call(path, {
      headers: { ...UPGRADE, "Sec-WebSocket-Protocol": `edge-streams, bearer.${b64url(TEST_SCOPED_TOKENS.READ_TOKEN)}` },
      token: null,
    });
    expect(response.headers.get("Sec-WebSocket-Protocol")).toBe("edge-streams");
    const socket = await socketOf(response);
    expect((await socket.next()).data).toEqual({ key: keyOn(0, "ws-auth"), value: null });
    socket.close();
  });

  it("takes the session cookie from this origin's pages, and refuses it from another origin (403)", async () => {
    const login = await exports.default.fetch(
      new Request(`${ORIGIN}/login`, {
        method: "POST",
        body: new URLSearchParams({ token: TOKEN }).toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: ORIGIN, "Sec-Fetch-Site": "same-origin", "CF-Connecting-IP": anyClient() },
        redirect: "manual",
      }),
    );
    expect(login.status).toBe(303);
    const cookie = /(__Host-edge_session=[^;]+)/.exec(login.headers.get("Set-Cookie")!)![1]!;
    const path = keyPath(keyOn(0, "ws-cookie"));
    const browser = (origin: string, site: string) =>
      call(path, { token: null, headers: { ...UPGRADE, Cookie: cookie, Origin: origin, "Sec-Fetch-Site": site } });
    expect((await browser("https://evil.example", "cross-site")).status).toBe(403);
    const socket = await socketOf(await browser(ORIGIN, "same-origin"));
    expect((await socket.next()).data).toEqual({ key: keyOn(0, "ws-cookie"), value: null });
    socket.close();
    // The cookie still opens nothing but subscriptions and the pages: not the stores' reads.
    expect(
      (await call(`/stores/totals/keys/${keyOn(0, "ws-cookie")}`, { token: null, headers: { Cookie: cookie, "Sec-Fetch-Site": "same-origin" } })).status,
    ).toBe(401);
  });
});

describe("limits", () => {
  it("counts sockets in the isolate's subscription slots: 503 when none is left, the slot back when the socket closes", async () => {
    // A prefix's socket (a key's is held by its hub, not the isolate: below).
    await until(async () => watchSlots.taken === 0, 10_000, "earlier subscriptions' slots given back", 20);
    const socket = await watchSocket("/stores/totals/watch?prefix=ws-slots");
    await socket.next();
    expect(watchSlots.taken).toBe(1);
    socket.close();
    await until(async () => watchSlots.taken === 0, 10_000, "the socket's slot given back", 20);

    const held = Array.from({ length: watchSlots.limit }, () => watchSlots.take()!);
    try {
      const refused = await call("/stores/totals/watch?prefix=ws-slots", { headers: UPGRADE });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("1");
    } finally {
      for (const release of held) release();
    }
  });
});

describe("a key's socket, held by its changelog partition's hibernating hub", () => {
  const hub = (partition: number) => env.SUBSCRIPTION_HUB!.getByName(subscriptionHubName({ topic: "edge-streams-totals-changelog", partition }));
  /** The hub series of `GET /metrics` for a partition of the totals changelog. */
  const changelogHubSeries = (partition: number) => hubSeries("edge-streams-totals-changelog", partition);

  it("sees every change once, in order, on the one socket, across a migration and a crash of the task", async () => {
    const key = keyOn(2, "hub-storm");
    const before = await changelogHubSeries(2);
    const socket = await watchSocket(keyPath(key));
    expect((await socket.next()).data).toEqual({ key, value: null });
    await order(key, 2);
    for (const fault of ["migrate", "crash"] as const) {
      await injectFault(driver, "0_2", fault);
      await order(key, 2);
      await recovered(driver, "0_2");
    }
    await order(key, 1);
    expect(counts(await socket.take(7))).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => ["message", n]));
    expect(socket.closed).toBeUndefined();
    expect((await hub(2).stats()).sockets).toBe(1);
    // GET /metrics: the socket held, and its 8 messages (the snapshot's and 7 changes) pushed.
    const after = await changelogHubSeries(2);
    expect(after.get("sockets")).toBe(1);
    expect(after.get("events_pushed_total")! - (before.get("events_pushed_total") ?? 0)).toBe(8);
    expect(after.get("reads_total")).toBeGreaterThan(before.get("reads_total") ?? 0);
    socket.close();
  });

  it("reads nothing while idle (no poll: appends elsewhere and time pass), and unsubscribes once its last socket closed", async () => {
    const key = keyOn(3, "hub-idle");
    const socket = await watchSocket(keyPath(key));
    await socket.next();
    await order(key, 1);
    await socket.next();
    const before = await hub(3).stats();
    expect(before).toMatchObject({ sockets: 1, subscribed: true });
    // Work on the other partitions: a socket held by the Worker would read its changelog each second meanwhile.
    const started = Date.now();
    for (let i = 0; i < 60 && Date.now() - started < 1_500; i++) await order(keyOn(i % 3, "hub-idle-other"), 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect((await hub(3).stats()).reads).toBe(before.reads);
    // An append to its partition is read once and pushed.
    await order(key, 1);
    expect((await socket.next()).data).toEqual({ key, value: { count: 2, sum: 2 } });
    expect((await hub(3).stats()).reads).toBeGreaterThan(before.reads);
    socket.close();
    await until(async () => (await hub(3).stats()).subscribed === false, 10_000, "the hub unsubscribed", 20);
  });

  it("answers a token the changelog no longer holds with a fresh snapshot marked as such, on the same socket (no resync: nothing was sent)", async () => {
    const key = keyOn(0, "hub-stale");
    await order(key, 2);
    const token = encodeToken({ topic: "edge-streams-totals-changelog", positions: new Map([[0, 1_000_000]]) });
    const resyncs = (await changelogHubSeries(0)).get('drops_total{reason="resync"}') ?? 0;
    const socket = await watchSocket(`${keyPath(key)}?lastEventId=${encodeURIComponent(token)}`);
    const snapshot = await socket.next();
    expect(snapshot).toEqual({ event: "snapshot", data: { key, value: { count: 2, sum: 2 } }, id: expect.stringMatching(/^w1\./) });
    await order(key, 1);
    expect(counts(await socket.take(1))).toEqual([["message", 3]]);
    expect(socket.closed).toBeUndefined();
    const after = await changelogHubSeries(0);
    expect(after.get('drops_total{reason="resync"}')).toBe(resyncs + 1);
    expect(after.get('drops_total{reason="slow"}')).toBe(0);
    socket.close();
  });

  it("sends resync and closes with 4009 a socket whose fresh snapshot cannot be taken (its task restores): reconnect without lastEventId", async () => {
    const key = keyOn(2, "hub-stale-restoring");
    await order(key, 1);
    const active = await activeInstance(driver.instances(), 2);
    const token = encodeToken({ topic: "edge-streams-totals-changelog", positions: new Map([[2, 1_000_000]]) });
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      await driver.task(active).corrupt();
      const socket = await watchSocket(`${keyPath(key)}?lastEventId=${encodeURIComponent(token)}`);
      expect((await socket.next()).event).toBe("resync");
      await until(async () => socket.closed !== undefined, 10_000, "the socket closed", 20);
      expect(socket.closed?.code).toBe(4009);
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    // Reconnected without it: the snapshot, from the restored task.
    const again = await watchSocket(keyPath(key));
    expect((await again.next()).data).toEqual({ key, value: { count: 1, sum: 1 } });
    again.close();
  });

  it("gives a slow socket that retention overtook resync, then a snapshot of the current value, then each later change: no gap, no repeat, the same socket", async () => {
    const key = keyOn(3, "hub-slow-resync");
    const tp = { topic: "edge-streams-totals-changelog", partition: 3 };
    const socket = await watchSocket(keyPath(key), false);
    expect(await socket.next()).toMatchObject({ event: "message", data: { key, value: null } });
    // More changes than the window, in one request: the hub stops at the window while the subscriber acknowledges nothing.
    const records = Array.from({ length: SOCKET_WINDOW + 10 }, () => ({ key, value: { amount: 1 } }));
    expect((await call("/topics/orders/records", { body: { records } })).status).toBe(200);
    await driver.runUntilQuiet();
    const window = await socket.take(SOCKET_WINDOW - 1);
    expect(window.map((e) => e.data.value.count)).toEqual(Array.from({ length: SOCKET_WINDOW - 1 }, (_, i) => i + 1));
    expect(socket.received).toBe(SOCKET_WINDOW);
    const before = await hub(3).metrics();
    // Retention removes the changes the subscriber has not read.
    const end = (await json<{ partitions: { latest: number }[] }>(await call(`/topics/${tp.topic}`))).partitions[3]!.latest;
    const deleted = await env.LOG_PARTITION.getByName(`${tp.topic}/3`).deleteRecordsBefore(tp, end);
    if (!deleted.ok) throw new Error(deleted.failure.message);
    socket.ack();
    expect(await socket.next()).toMatchObject({ event: "resync" });
    const snapshot = await socket.next();
    expect(snapshot).toEqual({ event: "snapshot", data: { key, value: { count: records.length, sum: records.length } }, id: expect.stringMatching(/^w1\./) });
    socket.ack();
    await order(key, 2);
    expect(counts(await socket.take(2))).toEqual([
      ["message", records.length + 1],
      ["message", records.length + 2],
    ]);
    expect(socket.closed).toBeUndefined();
    const after = await hub(3).metrics();
    expect(after.drops.resync).toBe(before.drops.resync + 1);
    expect(after.pushed - before.pushed).toBe(4);
    socket.close();
  });

  it("keeps its counters across a reset of the hub (a crash or an eviction): events_pushed_total never falls", async () => {
    const key = keyOn(1, "hub-counted");
    const socket = await watchSocket(keyPath(key));
    await socket.next();
    await order(key, 2);
    await socket.take(2);
    const before = await changelogHubSeries(1);
    expect(before.get("events_pushed_total")).toBeGreaterThanOrEqual(3);
    await runInDurableObject(hub(1), (_object, state) => state.abort("injected crash: hub")).catch(() => undefined);
    await until(async () => socket.closed !== undefined, 10_000, "the hub's reset closed the socket", 20);
    // A new instance of the hub answers: the counts it had, and the same start.
    const after = await changelogHubSeries(1);
    for (const name of ["events_pushed_total", "reads_total", "start_time_seconds"]) expect(after.get(name), name).toBe(before.get(name));
    const again = await watchSocket(keyPath(key));
    expect((await again.next()).data).toEqual({ key, value: { count: 2, sum: 2 } });
    await until(async () => (await changelogHubSeries(1)).get("events_pushed_total")! > before.get("events_pushed_total")!, 10_000, "the count went on", 20);
    again.close();
  });

  it(`refuses a socket past ${HUB_PER_KEY} on one key (503, Retry-After), not on another key, and takes one again once one closed`, async () => {
    const key = keyOn(1, "hub-limit");
    const held = [];
    for (let i = 0; i < HUB_PER_KEY; i++) {
      held.push(await watchSocket(keyPath(key)));
      await held.at(-1)!.next();
    }
    const before = await changelogHubSeries(1);
    const refused = await call(keyPath(key), { headers: UPGRADE });
    expect(refused.status).toBe(503);
    const after = await changelogHubSeries(1);
    expect(after.get('refused_total{limit="key"}')).toBe((before.get('refused_total{limit="key"}') ?? 0) + 1);
    expect(after.get('refused_total{limit="hub"}')).toBe(0);
    expect(after.get("sockets")).toBeGreaterThanOrEqual(HUB_PER_KEY);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(await refused.json()).toMatchObject({ error: "unavailable", message: expect.stringContaining("watch this key already") });
    const other = await watchSocket(keyPath(keyOn(1, "hub-limit-other")));
    expect((await other.next()).event).toBe("message");
    other.close();
    held[0]!.close();
    await until(async () => (await hub(1).stats()).sockets === HUB_PER_KEY - 1, 10_000, "the closed socket forgotten", 20);
    const again = await watchSocket(keyPath(key));
    expect((await again.next()).event).toBe("message");
    for (const socket of [again, ...held]) socket.close();
  });
});

describe("a topic tail over a WebSocket", () => {
  it("sends start, then each record as /kafka renders it with its offset as id, and resumes after ?lastEventId=; a token as a subprotocol opens it", async () => {
    const key = keyOn(3, "ws-tail");
    const path = "/topics/orders/watch?partition=3&from=earliest";
    const first = await watchSocket(path);
    const start = await first.next();
    expect(start).toMatchObject({ event: "start", data: { topic: "orders", partition: 3, from: 0 } });
    await order(key, 2);
    const mine = async (socket: Awaited<ReturnType<typeof watchSocket>>, n: number) => {
      const got: SocketEvent[] = [];
      while (got.length < n) {
        const event = await socket.next();
        if (event.event === "message" && event.data.key === key) got.push(event);
      }
      return got;
    };
    const records = await mine(first, 2);
    expect(records.map((e) => [e.id, e.data.offset, e.data.partition, e.data.topic])).toEqual(
      records.map((e) => [String(e.data.offset), Number(e.id), 3, "orders"]),
    );
    const lastId = records[1]!.id!;
    first.close();

    await order(key, 1);
    const token = b64url(TOKEN);
    const response = await call(path.replace("from=earliest", `lastEventId=${lastId}`), {
      headers: { ...UPGRADE, "Sec-WebSocket-Protocol": `edge-streams, bearer.${token}` },
      token: null,
    });
    expect(response.status).toBe(101);
    expect(response.headers.get("Sec-WebSocket-Protocol")).toBe("edge-streams");
    const resumed = await socketOf(response);
    const after = await mine(resumed, 1);
    expect(Number(after[0]!.id)).toBeGreaterThan(Number(lastId));
    expect(after[0]!.data.value).toBe(JSON.stringify({ amount: 1 }));
    resumed.close();
  });
});

function b64url(text: string): string {
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
