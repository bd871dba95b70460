/**
 * Tailing a topic (docs/subscriptions.md): `GET /topics/:topic/watch?partition=&from=`, read as a
 * client reads server-sent events. A `start` event, then every record from there on as `/kafka`
 * fetch renders it, its offset as the id; a client coming back with its last id continues at the
 * next offset, across a migration and crashes of the task writing the topic; offsets compacted
 * away or below the log's start are named by a `gap` event.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Message } from "../src/kafka-rest/dialect";
import { TestDriver } from "../platform/testing/test-driver";
import { activeInstance } from "./support/active";
import { call, json } from "./support/api";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { EventReader, type ServerSentEvent } from "./support/sse";
import { TEST_SCOPED_TOKENS } from "./support/tokens";
import { until } from "./support/until";
import { fetched } from "./kafka-rest/support";
import { watchSlots } from "../workers/api/subscription-stream";
import { encodeToken } from "../src/subscriptions/resume-token";

const driver = new TestDriver(env, application);

/** A record as `/kafka` renders it (what a tail sends). */
type Rendered = Message;

/** Opens a tail; `lastId` continues after that record. */
async function tail(path: string, lastId?: string): Promise<EventReader> {
  const response = await call(path, { headers: lastId === undefined ? {} : { "Last-Event-ID": lastId } });
  expect(response.status, response.status === 200 ? "" : await response.clone().text()).toBe(200);
  expect(response.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
  return new EventReader(response);
}

/** The `start` event's data, checking it is one. */
async function started(stream: EventReader): Promise<{ topic: string; partition: number; from: number }> {
  const start = await stream.next();
  expect([start.event, start.id]).toEqual(["start", undefined]);
  return JSON.parse(start.data);
}

/** The next `count` events are records: their rendering, each checked to carry its offset as id. */
async function records(stream: EventReader, count: number): Promise<Rendered[]> {
  const events = await stream.take(count);
  return events.map((e: ServerSentEvent) => {
    expect(e.event).toBe("message");
    const record = JSON.parse(e.data) as Rendered;
    expect(e.id).toBe(String(record.offset));
    return record;
  });
}

async function order(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect((await call("/topics/orders/records", { body: { records: [{ key, value: { amount: 1 } }] } })).status).toBe(200);
  await driver.runUntilQuiet();
}

beforeAll(async () => {
  await driver.instances();
  await driver.runUntilQuiet();
});

describe("tailing a topic", () => {
  it("starts at the end by default, then sends each record appended, in order, as /kafka fetch renders it (input, output, changelog)", async () => {
    const key = keyOn(2, "tail-first");
    const streams = await Promise.all(
      ["orders", "totals", "edge-streams-totals-changelog"].map(async (topic) => {
        const stream = await tail(`/topics/${topic}/watch?partition=2`);
        const start = await started(stream);
        expect(start).toMatchObject({ topic, partition: 2 });
        return { topic, stream, from: start.from };
      }),
    );
    for (const { topic, from } of streams) {
      const end = (await json<{ partitions: { latest: number }[] }>(await call(`/topics/${topic}`))).partitions[2]!.latest;
      expect(from, topic).toBe(end);
    }
    await order(key, 3);
    for (const { topic, stream, from } of streams) {
      const got = await records(stream, 3);
      expect(got.map((r) => r.offset)).toEqual([from, from + 1, from + 2]);
      expect(got, topic).toEqual(await fetched(topic, 2, from, 3));
      expect(got.map((r) => r.key)).toEqual([key, key, key]);
      await stream.close();
    }
    const [orders, totals] = await Promise.all(streams.slice(0, 2).map(({ topic, from }) => fetched(topic, 2, from, 3)));
    expect(orders!.map((r) => JSON.parse(r.value))).toEqual([{ amount: 1 }, { amount: 1 }, { amount: 1 }]);
    expect(totals!.map((r) => JSON.parse(r.value).count)).toEqual([1, 2, 3]);
  });

  it("takes from=earliest and from=<offset>; from=latest skips what is there", async () => {
    const key = keyOn(3, "tail-from");
    await order(key, 2);
    const { partitions } = await json<{ partitions: { earliest: number; latest: number }[] }>(await call("/topics/orders"));
    const { earliest, latest } = partitions[3]!;
    const fromEarliest = await tail("/topics/orders/watch?partition=3&from=earliest");
    expect((await started(fromEarliest)).from).toBe(earliest);
    expect(await records(fromEarliest, 1)).toEqual(await fetched("orders", 3, earliest, 1));
    await fromEarliest.close();

    const fromOffset = await tail(`/topics/orders/watch?partition=3&from=${latest - 2}`);
    expect((await started(fromOffset)).from).toBe(latest - 2);
    expect((await records(fromOffset, 2)).map((r) => [r.offset, r.key])).toEqual([
      [latest - 2, key],
      [latest - 1, key],
    ]);
    await fromOffset.close();

    const fromLatest = await tail("/topics/orders/watch?partition=3&from=latest");
    expect((await started(fromLatest)).from).toBe(latest);
    await order(key, 1);
    expect((await records(fromLatest, 1)).map((r) => r.offset)).toEqual([latest]);
    await fromLatest.close();
  });

  it("continues after Last-Event-ID (over `from`), with no gap and no repeat, across a migration and crashes of the task writing the topic", async () => {
    const key = keyOn(1, "tail-faults");
    const path = "/topics/totals/watch?partition=1&from=earliest";
    const counts: number[] = [];
    const offsets: number[] = [];
    const collect = async (stream: EventReader, n: number) => {
      for (const r of await records(stream, n)) {
        offsets.push(r.offset);
        if (r.key === key) counts.push(JSON.parse(r.value).count);
      }
    };
    let stream = await tail("/topics/totals/watch?partition=1");
    const first = (await started(stream)).from;
    await order(key, 2);
    await collect(stream, 2);

    // Migrated while the subscriber is away; it comes back with its last id (which wins over `from`).
    let lastId = stream.lastId!;
    await stream.close();
    const from = (await activeInstance(driver.instances(), 1)).placement;
    expect((await call("/admin/tasks/0_1/migrate", { body: { to: from === "a" ? "b" : "a" } })).status).toBe(200);
    await order(key, 2);
    stream = await tail(path, lastId);
    expect((await started(stream)).from).toBe(Number(lastId) + 1);
    await collect(stream, 2);

    // The task's object dies with the subscriber connected, then again while it is away.
    expect((await call("/admin/tasks/0_1/crash", { method: "POST" })).status).toBe(200);
    await order(key, 2);
    await collect(stream, 2);
    lastId = stream.lastId!;
    await stream.close();
    expect((await call("/admin/tasks/0_1/crash", { method: "POST" })).status).toBe(200);
    await order(key, 2);
    stream = await tail(path, lastId);
    await started(stream);
    await collect(stream, 2);
    await stream.close();

    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(offsets).toEqual(Array.from({ length: 8 }, (_, i) => first + i));
  });

  it("names offsets compacted away or below the log's start with a gap event, then goes on from the next record", async () => {
    const tp = { topic: "retention-test", partition: 0 };
    // The TOPICS var's topic: the application's log does not serve it, the Worker's routes and its partition object do.
    const partition = env.LOG_PARTITION.getByName("retention-test/0");
    const start = (await json<{ partitions: { latest: number }[] }>(await call("/topics/retention-test"))).partitions[0]!.latest;
    const appended = ["v1", "v2", "v3"].map((value) => ({ key: "tail-gap-a", value })).concat([{ key: "tail-gap-b", value: "w" }]);
    expect((await call("/topics/retention-test/records", { body: { records: appended } })).status).toBe(200);
    // Compaction (cleanup.policy=compact,delete) keeps only each key's latest record.
    for (let i = 0; ; i++) {
      expect(i, "compaction finishes").toBeLessThan(200);
      const result = await partition.maintain(tp);
      if (!result.ok) throw new Error(result.failure.message);
      if (!result.value.more) break;
    }
    const stream = await tail(`/topics/retention-test/watch?partition=0&from=${start}`);
    expect((await started(stream)).from).toBe(start);
    const gap = await stream.next();
    expect([gap.event, JSON.parse(gap.data), gap.id]).toEqual(["gap", { from: start, to: start + 2 }, undefined]);
    expect((await records(stream, 2)).map((r) => [r.offset, r.key, r.value])).toEqual([
      [start + 2, "tail-gap-a", '"v3"'],
      [start + 3, "tail-gap-b", '"w"'],
    ]);
    await stream.close();

    // The log's start moves past where a returning subscriber stood (as retention moves it).
    const deleted = await partition.deleteRecordsBefore(tp, start + 3);
    if (!deleted.ok) throw new Error(deleted.failure.message);
    const resumed = await tail("/topics/retention-test/watch?partition=0", String(start + 1));
    expect((await started(resumed)).from).toBe(start + 2);
    const below = await resumed.next();
    expect([below.event, JSON.parse(below.data)]).toEqual(["gap", { from: start + 2, to: start + 3 }]);
    expect((await records(resumed, 1)).map((r) => r.offset)).toEqual([start + 3]);
    await resumed.close();
  });
});

describe("refusals", () => {
  it("400 for a partition missing, not a number or not the topic's, a bad from, an unknown parameter or a Last-Event-ID that is no offset", async () => {
    for (const query of [
      "",
      "?from=earliest",
      "?partition=x",
      "?partition=-1",
      "?partition=4",
      "?partition=01",
      "?partition=0&from=-1",
      "?partition=0&from=soon",
      "?partition=0&fro=1",
    ]) {
      const response = await call(`/topics/orders/watch${query}`);
      expect(response.status, query).toBe(400);
      expect(await json(response), query).toMatchObject({ error: "invalid_input", message: expect.stringMatching(/partition|from|fro/) });
    }
    for (const bad of ["x", "-1", "1.5", "9007199254740991"]) {
      const response = await call("/topics/orders/watch?partition=0", { headers: { "Last-Event-ID": bad } });
      expect(response.status, bad).toBe(400);
      expect(await json(response)).toMatchObject({ error: "invalid_input", message: expect.stringMatching(/Last-Event-ID/) });
    }
  });

  it("404 for an unknown topic; 401 without a token, 403 without the read role (admin reads), as GET /topics/:topic", async () => {
    const missing = await call("/topics/nope/watch?partition=0");
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ error: "unknown_topic", message: 'unknown topic "nope"' });
    for (const path of ["/topics/orders/watch?partition=0", "/topics/orders"]) {
      const refused = await call(path, { token: null });
      expect(refused.status, path).toBe(401);
      for (const token of [TEST_SCOPED_TOKENS.PRODUCE_TOKEN.split(",")[0]!, TEST_SCOPED_TOKENS.LOG_TOKEN])
        expect((await call(path, { token })).status, path).toBe(403);
    }
    const read = await call("/topics/orders/watch?partition=0", { token: TEST_SCOPED_TOKENS.READ_TOKEN });
    expect(read.status).toBe(200);
    const stream = new EventReader(read);
    await started(stream);
    await stream.close();
  });

  it("shares the isolate's subscription slots with store watches: 503 with Retry-After when none is left", async () => {
    await until(async () => watchSlots.taken === 0, 10_000, "earlier subscriptions' slots given back", 20);
    const stream = await tail("/topics/orders/watch?partition=0");
    await started(stream);
    expect(watchSlots.taken).toBe(1);
    await stream.close();
    await until(async () => watchSlots.taken === 0, 10_000, "the tail's slot given back", 20);

    const held = Array.from({ length: watchSlots.limit }, () => watchSlots.take()!);
    try {
      const refused = await call("/topics/orders/watch?partition=0");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("1");
      expect(await json(refused)).toMatchObject({ error: "unavailable" });
    } finally {
      for (const release of held) release();
    }
  });
});

describe("subscription metrics", () => {
  /** A subscription family's samples in `GET /metrics`, by their labels' text. */
  async function scrape(): Promise<Map<string, number>> {
    const response = await call("/metrics");
    expect(response.status).toBe(200);
    const samples = new Map<string, number>();
    for (const m of (await response.text()).matchAll(/^edge_streams_subscriptions_([a-z_]+)(\{[^}]*\})? (\d+)$/gm))
      samples.set(`${m[1]}${m[2] ?? ""}`, Number(m[3]));
    return samples;
  }

  it("counts streams open, the limit, events sent, recoveries by kind and refusals, per isolate", async () => {
    await until(async () => watchSlots.taken === 0, 10_000, "earlier subscriptions' slots given back", 20);
    const before = await scrape();
    expect(before.get("open")).toBe(0);
    expect(before.get("limit")).toBe(watchSlots.limit);

    // A tail starting below the log's start: a start event, a gap, a record.
    const tp = { topic: "retention-test", partition: 0 };
    expect((await call("/topics/retention-test/records", { body: { records: [1, 2, 3].map((v) => ({ key: "tail-metrics", value: v })) } })).status).toBe(200);
    const latest = (await json<{ partitions: { latest: number }[] }>(await call("/topics/retention-test"))).partitions[0]!.latest;
    const deleted = await env.LOG_PARTITION.getByName("retention-test/0").deleteRecordsBefore(tp, latest - 1);
    if (!deleted.ok) throw new Error(deleted.failure.message);
    const stream = await tail("/topics/retention-test/watch?partition=0&from=0");
    await stream.take(3);
    // A store watch with a token the changelog does not hold: a fresh snapshot.
    const key = keyOn(0, "tail-metrics-watch");
    const stale = encodeToken({ topic: "edge-streams-totals-changelog", positions: new Map([[0, 1_000_000]]) });
    const watch = new EventReader(await call(`/stores/totals/keys/${key}/watch`, { headers: { "Last-Event-ID": stale } }));
    expect((await watch.next()).event).toBe("snapshot");
    const open = await scrape();
    expect(open.get("open")).toBe(2);
    expect(open.get("events_sent_total")! - before.get("events_sent_total")!).toBe(4);
    expect(open.get('recoveries_total{kind="gap"}')! - before.get('recoveries_total{kind="gap"}')!).toBe(1);
    expect(open.get('recoveries_total{kind="snapshot"}')! - before.get('recoveries_total{kind="snapshot"}')!).toBe(1);
    expect(open.get('recoveries_total{kind="resync"}')).toBe(before.get('recoveries_total{kind="resync"}'));
    await Promise.all([stream.close(), watch.close()]);
    await until(async () => watchSlots.taken === 0, 10_000, "the slots given back", 20);

    const held = Array.from({ length: watchSlots.limit }, () => watchSlots.take()!);
    try {
      expect((await call("/topics/orders/watch?partition=0")).status).toBe(503);
    } finally {
      for (const release of held) release();
    }
    const after = await scrape();
    expect(after.get("open")).toBe(0);
    expect(after.get("refused_total")! - open.get("refused_total")!).toBe(1);
  });
});
