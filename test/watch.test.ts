/**
 * Live subscriptions over HTTP (docs/subscriptions.md): `GET /stores/:store/keys/:key/watch` and
 * `GET /stores/:store/watch?prefix=`, read as a client reads server-sent events. Each change of a
 * customer's total arrives once, in commit order; a client that comes back with its last event's
 * id gets exactly the changes after it, across a migration, a corruption and its restoration, and
 * a crash of the task's object.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { encodeToken } from "../src/subscriptions/resume-token";
import type { SnapshotAnswer } from "../src/task/protocol";
import { activeInstance } from "./support/active";
import { call, json } from "./support/api";
import { keyOn, keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { EventReader, type ServerSentEvent } from "./support/sse";
import { TEST_SCOPED_TOKENS } from "./support/tokens";
import { until } from "./support/until";
import { watchSlots } from "../workers/api/routes/watch";
import { keySlots } from "../workers/api/subscription-stream";
import { MAX_WATCHES_PER_KEY } from "../src/subscriptions/key-slots";
import { subscriptionHubName } from "../src/names";
import { decodeToken } from "../src/subscriptions/resume-token";
import { socketOf } from "./support/socket";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";

type Total = { count: number; sum: number } | null;

/** Opens a subscription; `lastId` resumes after that event. */
async function watch(path: string, lastId?: string): Promise<EventReader> {
  const response = await call(path, { headers: lastId === undefined ? {} : { "Last-Event-ID": lastId } });
  expect(response.status, await (response.status === 200 ? "" : response.clone().text())).toBe(200);
  expect(response.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
  return new EventReader(response);
}

const watchKey = (key: string, lastId?: string) => watch(`/stores/totals/keys/${encodeURIComponent(key)}/watch`, lastId);

/** Orders of `amount` 1 for `key`, one request each, processed. */
async function order(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const response = await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } });
    expect(response.status).toBe(200);
  }
  await driver.runUntilQuiet();
}

/** An event of a key watch: its key and total. */
function total(event: ServerSentEvent): { key: string; value: Total } {
  return JSON.parse(event.data) as { key: string; value: Total };
}

/** The next `count` events are the changes of `key` whose counts follow `from`: no gap, no repeat. */
async function expectCounts(stream: EventReader, key: string, from: number, count: number): Promise<void> {
  const events = await stream.take(count);
  expect(events.map((e) => e.event)).toEqual(events.map(() => "message"));
  expect(events.map((e) => total(e))).toEqual(Array.from({ length: count }, (_, i) => ({ key, value: { count: from + i, sum: from + i } })));
  expect(events.every((e) => e.id !== undefined)).toBe(true);
}

beforeAll(async () => {
  await driver.instances();
  await driver.runUntilQuiet();
});

describe("watching a key", () => {
  it("starts with the key's value (null when absent) and sends each committed change in order", async () => {
    const key = keyOn(0, "watch-first");
    const stream = await watchKey(key);
    const first = await stream.next();
    expect(first.event).toBe("message");
    expect(total(first)).toEqual({ key, value: null });
    expect(first.id).toMatch(/^w1\./);
    await order(key, 3);
    await expectCounts(stream, key, 1, 3);
    await stream.close();

    // A new subscriber starts from the committed value.
    const again = await watchKey(key);
    expect(total(await again.next())).toEqual({ key, value: { count: 3, sum: 3 } });
    await order(key, 1);
    await expectCounts(again, key, 4, 1);
    await again.close();
  });

  it("resumes with Last-Event-ID: every change after that event, once", async () => {
    const key = keyOn(2, "watch-resume");
    const stream = await watchKey(key);
    await stream.next();
    await order(key, 2);
    await expectCounts(stream, key, 1, 2);
    const resumeAfter = stream.lastId!;
    await stream.close();

    await order(key, 3);
    const resumed = await watchKey(key, resumeAfter);
    await expectCounts(resumed, key, 3, 3);
    // Nothing repeated before the next change: it comes right after.
    await order(key, 1);
    await expectCounts(resumed, key, 6, 1);
    await resumed.close();
  });

  it("loses and repeats nothing across a migration, a corruption and its restoration, and a crash", async () => {
    const key = keyOn(1, "watch-faults");
    let stream = await watchKey(key);
    expect(total(await stream.next()).value).toBeNull();
    await order(key, 2);
    await expectCounts(stream, key, 1, 2);

    // Migrated while the subscriber is away; it comes back with its last id.
    let lastId = stream.lastId!;
    await stream.close();
    const from = (await activeInstance(driver.instances(), 1)).placement;
    const to = from === "a" ? "b" : "a";
    expect((await call("/admin/tasks/0_1/migrate", { body: { to } })).status).toBe(200);
    await order(key, 2);
    stream = await watchKey(key, lastId);
    await expectCounts(stream, key, 3, 2);
    expect((await activeInstance(driver.instances(), 1)).placement).toBe(to);

    // Corrupted (wiped, revived, restored from the changelog) with the subscriber connected.
    expect((await call("/admin/tasks/0_1/corrupt", { method: "POST" })).status).toBe(200);
    await driver.runUntilQuiet();
    await order(key, 2);
    await expectCounts(stream, key, 5, 2);

    // The task's object dies; the subscriber comes back with its last id.
    lastId = stream.lastId!;
    await stream.close();
    expect((await call("/admin/tasks/0_1/crash", { method: "POST" })).status).toBe(200);
    await order(key, 2);
    stream = await watchKey(key, lastId);
    await expectCounts(stream, key, 7, 2);
    await order(key, 1);
    await expectCounts(stream, key, 9, 1);
    await stream.close();

    // A new subscriber after all that starts at the committed total.
    const fresh = await watchKey(key);
    expect(total(await fresh.next()).value).toEqual({ count: 9, sum: 9 });
    await fresh.close();
  });

  it("a token whose offset the changelog does not hold gets a fresh snapshot, marked as such", async () => {
    const key = keyOn(3, "watch-stale");
    await order(key, 2);
    const first = await watchKey(key);
    await first.next();
    await first.close();
    const stale = encodeToken({ topic: CHANGELOG, positions: new Map([[3, 1_000_000]]) });
    const stream = await watchKey(key, stale);
    const snapshot = await stream.next();
    expect(snapshot.event).toBe("snapshot");
    expect(total(snapshot)).toEqual({ key, value: { count: 2, sum: 2 } });
    expect(snapshot.id).toMatch(/^w1\./);
    await order(key, 1);
    await expectCounts(stream, key, 3, 1);
    await stream.close();
  });

  it("a slow subscriber that retention overtook gets resync, then a fresh snapshot of the current value, then each later change, on the same stream", async () => {
    const key = keyOn(2, "watch-slow-resync");
    const stream = await watchKey(key);
    expect(total(await stream.next()).value).toBeNull();
    // More changes than a hub's window (100) while the subscriber reads nothing: the hub stops at its window.
    const records = Array.from({ length: 250 }, () => ({ key, value: { amount: 1 } }));
    expect((await call("/topics/orders/records", { body: { records } })).status).toBe(200);
    await driver.runUntilQuiet();
    // Retention removes the changes it has not read yet.
    const tp = { topic: CHANGELOG, partition: 2 };
    const end = (await json<{ partitions: { latest: number }[] }>(await call(`/topics/${CHANGELOG}`))).partitions[2]!.latest;
    const deleted = await env.LOG_PARTITION.getByName(`${CHANGELOG}/2`).deleteRecordsBefore(tp, end);
    if (!deleted.ok) throw new Error(deleted.failure.message);
    // What was passed on before comes in order, then resync and the fresh snapshot.
    const before: ServerSentEvent[] = [];
    for (let e = await stream.next(); e.event !== "resync"; e = await stream.next()) before.push(e);
    expect(before.length).toBeLessThan(records.length);
    expect(before.map((e) => total(e).value?.count)).toEqual(before.map((_, i) => i + 1));
    const snapshot = await stream.next();
    expect(snapshot.event).toBe("snapshot");
    expect(total(snapshot)).toEqual({ key, value: { count: records.length, sum: records.length } });
    await order(key, 1);
    await expectCounts(stream, key, records.length + 1, 1);
    await stream.close();
  });

  it("refuses a Last-Event-ID that is not this subscription's token (400)", async () => {
    const key = keyOn(0, "watch-bad-id");
    for (const bad of [
      "garbage",
      encodeToken({ topic: CHANGELOG, positions: new Map([[1, 0]]) }),
      encodeToken({ topic: "other", positions: new Map([[0, 0]]) }),
    ]) {
      const response = await call(`/stores/totals/keys/${key}/watch`, { headers: { "Last-Event-ID": bad } });
      expect(response.status, bad).toBe(400);
      expect(await json(response)).toMatchObject({ error: "invalid_input", message: expect.stringMatching(/Last-Event-ID/) });
    }
  });
});

describe("a snapshot", () => {
  /** The end offset of the changelog's partition 2. */
  async function changelogEnd(): Promise<number> {
    const topic = await json<{ partitions: { partition: number; latest: number }[] }>(await call(`/topics/${CHANGELOG}`));
    return topic.partitions.find((p) => p.partition === 2)!.latest;
  }

  it("is the task's committed store with the changelog offset it reflects, and none while a changelog batch waits for the log", async () => {
    const key = keyOn(2, "watch-waiting");
    await order(key, 2);
    const task = driver.task(await activeInstance(driver.instances(), 2));
    const parsed = (answer: SnapshotAnswer) =>
      answer.status === "ok" ? { ...answer, entries: answer.entries.map((e) => ({ ...e, value: JSON.parse(e.value) })) } : answer;
    expect(parsed(await task.snapshot("totals", { key }))).toEqual({
      status: "ok",
      entries: [{ key, value: { count: 2, sum: 2 } }],
      offset: await changelogEnd(),
    });

    // The changelog's partition fails: the next commit's batch stays in the outbox.
    const partition = env.LOG_PARTITION.getByName(`${CHANGELOG}/2`);
    await partition.injectFailures(10_000);
    try {
      expect((await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } })).status).toBe(200);
      await task.drain().catch(() => undefined);
      // Processed and committed (the point read shows it), but the changelog may not hold it yet.
      expect(await json(await call(`/stores/totals/keys/${key}`))).toMatchObject({ value: { count: 3, sum: 3 } });
      expect(await task.snapshot("totals", { key })).toEqual({ status: "waiting" });
    } finally {
      await partition.injectFailures(0);
    }
    await driver.runUntilQuiet();
    expect(parsed(await task.snapshot("totals", { key }))).toEqual({
      status: "ok",
      entries: [{ key, value: { count: 3, sum: 3 } }],
      offset: await changelogEnd(),
    });
  });
});

describe("watching a prefix", () => {
  it("starts with every key's value, ends the snapshot with its token, then sends the changes of those keys only", async () => {
    const keys = [keyOn(0, "wpfx-a"), keyOn(1, "wpfx-b"), keyOn(3, "wpfx-c")];
    await order(keys[0]!, 1);
    await order(keys[1]!, 2);
    const stream = await watch("/stores/totals/watch?prefix=wpfx-");
    const snapshot = await stream.take(3);
    expect(snapshot.slice(0, 2).map((e) => [e.event, total(e), e.id])).toEqual(
      [
        [keys[0], { count: 1, sum: 1 }],
        [keys[1], { count: 2, sum: 2 }],
      ]
        .sort(([a], [b]) => (String(a) < String(b) ? -1 : 1))
        .map(([key, value]) => ["message", { key, value }, undefined]),
    );
    expect(snapshot[2]).toMatchObject({ event: "snapshot-end", data: JSON.stringify({ prefix: "wpfx-", keys: 2 }), id: expect.stringMatching(/^w1\./) });

    await order(keysOn(1, 1, "not-watched")[0]!, 1);
    await order(keys[2]!, 1);
    await order(keys[0]!, 1);
    const changes = (await stream.take(2)).map((e) => total(e));
    expect(changes).toEqual([
      { key: keys[2], value: { count: 1, sum: 1 } },
      { key: keys[0], value: { count: 2, sum: 2 } },
    ]);
    const lastId = stream.lastId!;
    await stream.close();

    await order(keys[1]!, 1);
    const resumed = await watch("/stores/totals/watch?prefix=wpfx-", lastId);
    expect(total(await resumed.next())).toEqual({ key: keys[1], value: { count: 3, sum: 3 } });
    await resumed.close();
  });
});

describe("limits", () => {
  it("holds a slot per open subscription, gives it back when the subscriber leaves, and answers 503 when none is left", async () => {
    const key = keyOn(0, "watch-slots");
    // Every earlier test's subscribers left: their slots come back as their streams end.
    await until(async () => watchSlots.taken === 0, 10_000, "earlier subscriptions' slots given back", 20);
    const streams = [await watchKey(key), await watchKey(key)];
    await Promise.all(streams.map((s) => s.next()));
    expect(watchSlots.taken).toBe(2);
    await Promise.all(streams.map((s) => s.close()));
    await until(async () => watchSlots.taken === 0, 10_000, "the subscriptions' slots given back", 20);

    const held = Array.from({ length: watchSlots.limit - watchSlots.taken }, () => watchSlots.take()!);
    try {
      const refused = await call(`/stores/totals/keys/${key}/watch`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("1");
      expect(await json(refused)).toMatchObject({ error: "unavailable" });
    } finally {
      for (const release of held) release();
    }
    const again = await watchKey(key);
    await again.next();
    await again.close();
  });

  it("holds at most MAX_WATCHES_PER_KEY subscriptions of one key: the next is 503, another key and the prefix still open", async () => {
    const key = keyOn(1, "watch-key-slots");
    await until(async () => watchSlots.taken === 0, 10_000, "earlier subscriptions' slots given back", 20);
    const streams: EventReader[] = [];
    for (let i = 0; i < MAX_WATCHES_PER_KEY; i++) streams.push(await watchKey(key));
    await Promise.all(streams.map((s) => s.next()));
    try {
      const refused = await call(`/stores/totals/keys/${key}/watch`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("1");
      expect((await json(refused)).message).toContain("of this key");
      // The isolate has room: another key, and a prefix covering this key, are not refused.
      const other = await watchKey(keyOn(1, "watch-key-slots-other"));
      const prefix = await watch(`/stores/totals/watch?prefix=${encodeURIComponent(key)}`);
      await Promise.all([other.next(), prefix.next()]);
      await Promise.all([other.close(), prefix.close()]);
      // One leaves: the key takes a subscription again.
      await streams.pop()!.close();
      await until(async () => keySlots.keys === 1 && watchSlots.taken === MAX_WATCHES_PER_KEY - 1, 10_000, "a slot of the key given back", 20);
      streams.push(await watchKey(key));
    } finally {
      await Promise.all(streams.map((s) => s.close()));
    }
    await until(async () => keySlots.keys === 0 && watchSlots.taken === 0, 10_000, "every key's slots given back", 20);
  });
});

describe("access", () => {
  it("answers 401 without a token, 403 for a token without the read role, and 404 for an unknown store, as the other store routes do", async () => {
    const key = keyOn(0, "watch-access");
    for (const path of [`/stores/totals/keys/${key}/watch`, "/stores/totals/watch?prefix=x"]) {
      const refused = await call(path, { token: null });
      expect(refused.status, path).toBe(401);
      expect((await call(path, { token: TEST_SCOPED_TOKENS.PRODUCE_TOKEN.split(",")[0] })).status, path).toBe(403);
      // The same path with the token (or a read token) is a subscription.
      for (const token of [undefined, TEST_SCOPED_TOKENS.READ_TOKEN]) {
        const response = await call(path, { token });
        expect(response.status, path).toBe(200);
        const stream = new EventReader(response);
        await stream.next();
        await stream.close();
      }
    }
    for (const path of ["/stores/nope/keys/k/watch", "/stores/nope/watch?prefix=x"]) {
      const response = await call(path);
      expect(response.status, path).toBe(404);
      expect(await json(response), path).toMatchObject({ error: "not_found", message: 'unknown store "nope"' });
    }
  });
});

describe("server-sent events held through the hubs (the Worker awaits; the hubs hibernate)", () => {
  const hub = (partition: number) => env.SUBSCRIPTION_HUB!.getByName(subscriptionHubName({ topic: CHANGELOG, partition }));
  const sockets = async (partition: number) => (await hub(partition).stats()).sockets;
  /** Sockets per key a hub takes in this project (vitest.config.ts, HUB_MAX_SOCKETS_PER_KEY). */
  const HUB_PER_KEY = 3;
  const latest = async (partition: number) =>
    (await json<{ partitions: { partition: number; latest: number }[] }>(await call(`/topics/${CHANGELOG}`))).partitions.find((p) => p.partition === partition)!
      .latest;

  it("a key's stream is a socket of its partition's hub: no read while idle, each change with the token of the changelog's end, the socket gone when the subscriber leaves", async () => {
    const key = keyOn(3, "sse-hub");
    // Every earlier stream's socket forgotten: the count is this stream's alone.
    await until(async () => (await sockets(3)) === 0, 10_000, "earlier streams' sockets forgotten", 20);
    const before = 0;
    const stream = await watchKey(key);
    expect(total(await stream.next())).toEqual({ key, value: null });
    await until(async () => (await sockets(3)) === before + 1, 10_000, "the stream's socket at the hub", 20);
    await order(key, 1);
    await expectCounts(stream, key, 1, 1);
    const reads = (await hub(3).stats()).reads;
    // Work on the other partitions: the Worker's own poll would read partition 3 each second meanwhile.
    const started = Date.now();
    for (let i = 0; i < 60 && Date.now() - started < 1_500; i++) await order(keyOn(i % 3, "sse-hub-other"), 1);
    expect((await hub(3).stats()).reads).toBe(reads);
    await order(key, 1);
    const change = await stream.next();
    expect(total(change)).toEqual({ key, value: { count: 2, sum: 2 } });
    expect(decodeToken(change.id!)).toEqual({ topic: CHANGELOG, positions: new Map([[3, await latest(3)]]) });
    await stream.close();
    await until(async () => (await sockets(3)) === before, 10_000, "the hub forgot the stream's socket", 20);
  });

  it("a prefix's stream is a socket of every partition's hub", async () => {
    await until(async () => (await Promise.all([0, 1, 2, 3].map(sockets))).every((n) => n === 0), 10_000, "earlier streams' sockets forgotten", 20);
    const befores = [0, 0, 0, 0];
    const stream = await watch("/stores/totals/watch?prefix=sse-hub-pfx");
    expect((await stream.next()).event).toBe("snapshot-end");
    await until(
      async () => (await Promise.all([0, 1, 2, 3].map(sockets))).every((n, p) => n === befores[p]! + 1),
      10_000,
      "a socket at each partition's hub",
      20,
    );
    const keys = [keyOn(0, "sse-hub-pfx"), keyOn(2, "sse-hub-pfx")];
    await order(keys[0]!, 1);
    await order(keys[1]!, 1);
    expect((await stream.take(2)).map((e) => total(e))).toEqual(keys.map((key) => ({ key, value: { count: 1, sum: 1 } })));
    await stream.close();
  });

  it("follows a hub reset from the stream's position: every change once, on the same stream", async () => {
    const key = keyOn(2, "sse-hub-reset");
    const stream = await watchKey(key);
    await stream.next();
    await order(key, 2);
    await expectCounts(stream, key, 1, 2);
    await runInDurableObject(hub(2), (_object, state) => state.abort("injected crash: hub")).catch(() => undefined);
    await order(key, 2);
    await expectCounts(stream, key, 3, 2);
    await until(async () => (await sockets(2)) >= 1, 10_000, "the stream's socket opened again at the hub", 20);
    await order(key, 1);
    await expectCounts(stream, key, 5, 1);
    await stream.close();
  });

  it(`past ${HUB_PER_KEY} sockets on one key, a stream reads the changelog itself; a token of either resumes on the other with no gap and no repeat`, async () => {
    const key = keyOn(1, "sse-hub-full");
    const fed = await watchKey(key);
    await fed.next();
    await order(key, 1);
    await expectCounts(fed, key, 1, 1);
    const held = [];
    for (let i = 0; i < HUB_PER_KEY - 1; i++) {
      held.push(await socketOf(await call(`/stores/totals/keys/${key}/watch`, { headers: { Upgrade: "websocket" } })));
      await held.at(-1)!.next();
    }
    await fed.close();
    // The key's last socket at the hub, once the hub forgot the stream's (503 until then).
    let third: Response | undefined;
    await until(
      async () => {
        third = await call(`/stores/totals/keys/${key}/watch`, { headers: { Upgrade: "websocket" } });
        if (third.status !== 503) return true;
        await third.body?.cancel();
        return false;
      },
      10_000,
      "the hub forgot the stream's socket",
      20,
    );
    held.push(await socketOf(third!));
    await held.at(-1)!.next();
    expect(await sockets(1)).toBeGreaterThanOrEqual(HUB_PER_KEY);
    // The hub refuses this key: the stream resumed from a hub-fed token polls the changelog instead.
    await order(key, 2);
    const polled = await watchKey(key, fed.lastId!);
    await expectCounts(polled, key, 2, 2);
    const lastId = polled.lastId!;
    await polled.close();
    for (const socket of held) socket.close();
    await until(async () => (await sockets(1)) < HUB_PER_KEY, 10_000, "the hub's sockets of the key closed", 20);
    await order(key, 1);
    const again = await watchKey(key, lastId);
    await expectCounts(again, key, 4, 1);
    await again.close();
  });
});
