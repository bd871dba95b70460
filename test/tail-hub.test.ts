/**
 * Topic tails through their partition's subscription hub (docs/subscriptions.md, *Tailing a
 * topic*): where the log wakes readers, a tail's WebSocket is held by the hibernating
 * `SubscriptionHub` of the tailed partition and a server-sent event tail is that hub's client, so
 * no tail polls. Each test checks the hub held the tail (its sockets, reads or pushes) besides what
 * the subscriber got: with the tails back on the Worker's poll, the hub holds nothing.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Message } from "../src/kafka-rest/dialect";
import { subscriptionHubName } from "../src/names";
import { SOCKET_WINDOW } from "../src/subscriptions/socket-credit";
import { TestDriver } from "../platform/testing/test-driver";
import { watchSlots } from "../workers/api/subscription-stream";
import { call, json } from "./support/api";
import { hubSeries } from "./support/hub-series";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { fetched } from "./kafka-rest/support";
import { recovered } from "./support/recovered";
import { type SocketReader, socketOf } from "./support/socket";
import { EventReader } from "./support/sse";
import { injectFault } from "./support/storm";
import { TEST_SCOPED_TOKENS } from "./support/tokens";
import { until } from "./support/until";

/** Sockets per key a hub takes in this project (vitest.config.ts, HUB_MAX_SOCKETS_PER_KEY): for tails, per partition. */
const HUB_PER_KEY = 3;

const driver = new TestDriver(env, application);
const hub = (topic: string, partition: number) => env.SUBSCRIPTION_HUB!.getByName(subscriptionHubName({ topic, partition }));

async function order(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect((await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } })).status).toBe(200);
  await driver.runUntilQuiet();
}

async function sseTail(path: string, lastId?: string): Promise<EventReader> {
  const response = await call(path, { headers: lastId === undefined ? {} : { "Last-Event-ID": lastId } });
  expect(response.status, response.status === 200 ? "" : await response.clone().text()).toBe(200);
  return new EventReader(response);
}

async function socketTail(path: string, autoAck = true): Promise<SocketReader> {
  return socketOf(await call(path, { headers: { Upgrade: "websocket" } }), autoAck);
}

/** The end offset of a partition now. */
async function latest(topic: string, partition: number): Promise<number> {
  return (await json<{ partitions: { latest: number }[] }>(await call(`/topics/${topic}`))).partitions[partition]!.latest;
}

beforeAll(async () => {
  await driver.instances();
  await driver.runUntilQuiet();
});

describe("a tail through its partition's hub", () => {
  it("gets each record appended after it subscribed, pushed by the hub: no read while its partition is idle, one on an append", async () => {
    const key = keyOn(2, "th-idle");
    const slots = watchSlots.taken;
    const stream = await sseTail("/topics/orders/watch?partition=2");
    const start = await stream.next();
    expect(start.event).toBe("start");
    const from = JSON.parse(start.data).from as number;
    const socket = await socketTail("/topics/orders/watch?partition=2");
    expect((await socket.next()).data).toEqual({ topic: "orders", partition: 2, from });
    // The Worker's socket (the stream's) and the subscriber's socket, both held by the partition's hub, subscribed to it.
    await until(async () => (await hub("orders", 2).stats()).sockets === 2, 10_000, "two sockets at the hub", 20);
    expect(await hub("orders", 2).stats()).toMatchObject({ subscribed: true });
    // A socket the hub holds takes no slot of the isolate; the stream the Worker holds takes one.
    expect(watchSlots.taken).toBe(slots + 1);
    const before = (await hub("orders", 2).stats()).reads;
    // Appends to the other partitions, and time: a tail polling its partition would read it meanwhile.
    const started = Date.now();
    for (let i = 0; i < 60 && Date.now() - started < 1_500; i++) await order(keyOn(i % 2, "th-idle-other"), 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect((await hub("orders", 2).stats()).reads).toBe(before);

    await order(key, 2);
    const expected = await fetched("orders", 2, from, 2);
    expect(expected.map((r) => r.key)).toEqual([key, key]);
    const events = await stream.take(2);
    expect(events.map((e) => [e.event, e.id, JSON.parse(e.data)])).toEqual(expected.map((r) => ["message", String(r.offset), r]));
    const messages = await socket.take(2);
    expect(messages).toEqual(expected.map((r) => ({ event: "message", data: r, id: String(r.offset) })));
    expect((await hub("orders", 2).stats()).reads).toBeGreaterThan(before);
    // GET /metrics lists the hub of an input topic's partition while it follows it for tails: two sockets; the start handed over and 2 × 2 records pushed.
    const listed = await hubSeries("orders", 2);
    expect([listed.get("sockets"), listed.get("events_pushed_total")]).toEqual([2, 5]);
    expect(await hubSeries("orders", 0)).toEqual(new Map());

    await stream.close();
    socket.close();
    await until(async () => (await hub("orders", 2).stats()).subscribed === false, 10_000, "the hub unsubscribed with its last socket", 20);
    expect(await hubSeries("orders", 2)).toEqual(new Map());
  });

  it("resumes after Last-Event-ID (and ?lastEventId= on a socket) at the next offset, with no gap and no repeat", async () => {
    const key = keyOn(1, "th-resume");
    const first = await sseTail("/topics/orders/watch?partition=1");
    await first.next();
    await order(key, 2);
    await first.take(2);
    const lastId = first.lastId!;
    await first.close();

    await order(key, 3);
    const resumed = await sseTail("/topics/orders/watch?partition=1&from=earliest", lastId);
    expect(JSON.parse((await resumed.next()).data).from).toBe(Number(lastId) + 1);
    const socket = await socketTail(`/topics/orders/watch?partition=1&lastEventId=${lastId}`);
    expect((await socket.next()).data.from).toBe(Number(lastId) + 1);
    await until(async () => (await hub("orders", 1).stats()).sockets === 2, 10_000, "both tails at the hub", 20);
    const expected = await fetched("orders", 1, Number(lastId) + 1, 3);
    expect(expected.map((r) => r.offset)).toEqual([1, 2, 3].map((n) => Number(lastId) + n));
    expect((await resumed.take(3)).map((e) => JSON.parse(e.data))).toEqual(expected);
    expect((await socket.take(3)).map((e) => e.data)).toEqual(expected);
    await order(key, 1);
    expect(Number((await resumed.next()).id)).toBe(Number(lastId) + 4);
    expect(Number((await socket.next()).id)).toBe(Number(lastId) + 4);
    await resumed.close();
    socket.close();
  });

  it("tails an output topic while the application processes, across a migration and a crash of the task writing it: each count once, in order", async () => {
    const key = keyOn(3, "th-output");
    const stream = await sseTail("/topics/totals/watch?partition=3");
    await stream.next();
    const socket = await socketTail("/topics/totals/watch?partition=3");
    await socket.next();
    await until(async () => (await hub("totals", 3).stats()).sockets === 2, 10_000, "both tails at the output partition's hub", 20);
    await order(key, 2);
    for (const fault of ["migrate", "crash"] as const) {
      await injectFault(driver, "0_3", fault);
      await order(key, 2);
      await recovered(driver, "0_3");
    }
    const counts = (values: Message[]) => values.filter((r) => r.key === key).map((r) => JSON.parse(r.value).count);
    const fromStream = (await stream.take(6)).map((e) => JSON.parse(e.data) as Message);
    const fromSocket = (await socket.take(6)).map((e) => e.data as Message);
    expect(counts(fromStream)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(fromSocket).toEqual(fromStream);
    expect(socket.closed).toBeUndefined();
    await stream.close();
    socket.close();
  });

  it("sends a subscriber that does not acknowledge no more than its window, then, once it does, a gap for what retention removed meanwhile and the rest, in order", async () => {
    const topic = "retention-test";
    const from = await latest(topic, 0);
    const socket = await socketTail(`/topics/${topic}/watch?partition=0&from=${from}`, false);
    const records = Array.from({ length: SOCKET_WINDOW + 50 }, (_, i) => ({ key: `th-slow-${i}`, value: i }));
    expect((await call(`/topics/${topic}/records`, { body: { records } })).status).toBe(200);
    // The start and a window's worth of records less one: the hub holds the rest back.
    const window = await socket.take(SOCKET_WINDOW);
    expect(window[0]).toMatchObject({ event: "start", data: { from } });
    expect(window.slice(1).map((e) => Number(e.id))).toEqual(Array.from({ length: SOCKET_WINDOW - 1 }, (_, i) => from + i));
    const pushed = (await hub(topic, 0).metrics()).pushed;
    expect(pushed).toBeGreaterThanOrEqual(SOCKET_WINDOW);
    // More appends wake the hub; the full window sends nothing.
    expect((await call(`/topics/${topic}/records`, { body: { records: [{ key: "th-slow-last", value: 0 }] } })).status).toBe(200);
    await expect(socket.next(500)).rejects.toThrow(/no message/);
    expect((await hub(topic, 0).metrics()).pushed).toBe(pushed);

    // Retention removes records the subscriber has not read yet.
    const cut = from + SOCKET_WINDOW + 10;
    const deleted = await env.LOG_PARTITION.getByName(`${topic}/0`).deleteRecordsBefore({ topic, partition: 0 }, cut);
    if (!deleted.ok) throw new Error(deleted.failure.message);
    socket.ack();
    const gap = await socket.next();
    expect(gap).toEqual({ event: "gap", data: { from: from + SOCKET_WINDOW - 1, to: cut } });
    const end = from + records.length + 1;
    const rest = [];
    while (rest.length < end - cut) {
      rest.push(...(await socket.take(Math.min(SOCKET_WINDOW, end - cut - rest.length))));
      socket.ack();
    }
    expect(rest.map((e) => e.data)).toEqual(await fetched(topic, 0, cut, end - cut));
    expect(rest.at(-1)!.data.key).toBe("th-slow-last");
    expect(socket.closed).toBeUndefined();
    socket.close();
  });

  it(`refuses a tail's socket past ${HUB_PER_KEY} on one partition (503, Retry-After); a stream then reads the partition itself; 401, 403 and 404 before any hub`, async () => {
    const path = "/topics/orders/watch?partition=0";
    const held: SocketReader[] = [];
    for (let i = 0; i < HUB_PER_KEY; i++) {
      held.push(await socketTail(path));
      expect((await held.at(-1)!.next()).event).toBe("start");
    }
    const before = await hubSeries("orders", 0);
    const refused = await call(path, { headers: { Upgrade: "websocket" } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(await refused.json()).toMatchObject({ error: "unavailable", message: expect.stringContaining("tail this partition already") });
    expect((await hubSeries("orders", 0)).get('refused_total{limit="key"}')).toBe((before.get('refused_total{limit="key"}') ?? 0) + 1);
    // A server-sent event tail is refused by the hub too, and follows the partition itself: the same events.
    const stream = await sseTail(path);
    const from = JSON.parse((await stream.next()).data).from as number;
    const key = keyOn(0, "th-limit");
    await order(key, 1);
    expect(JSON.parse((await stream.next()).data)).toEqual((await fetched("orders", 0, from, 1))[0]);
    expect((await hub("orders", 0).stats()).sockets).toBe(HUB_PER_KEY);
    await stream.close();
    held[0]!.close();
    await until(async () => (await hub("orders", 0).stats()).sockets === HUB_PER_KEY - 1, 10_000, "the closed socket forgotten", 20);
    const again = await socketTail(path);
    expect((await again.next()).event).toBe("start");
    for (const socket of [again, ...held]) socket.close();

    const upgrade = { Upgrade: "websocket" };
    expect((await call(path, { headers: upgrade, token: null })).status).toBe(401);
    expect((await call(path, { headers: upgrade, token: TEST_SCOPED_TOKENS.LOG_TOKEN })).status).toBe(403);
    expect((await call("/topics/nope/watch?partition=0", { headers: upgrade })).status).toBe(404);
  });
});
