/**
 * Sinks (docs/connectors.md#sinks) on miniflare's queues and a real HTTP server: topics of the
 * `queues` test application delivered to a Queue (`SINK_QUEUE`, which the Worker consumes into
 * `sink-received`, so every message sent is seen) and to a webhook (test/node/webhook-server.ts on
 * 127.0.0.1). Records are delivered in order with their ids; a crash between a delivery and its
 * commit delivers the batch again with the same ids (the same idempotency key for a webhook) and
 * loses nothing; a failing endpoint is
 * retried with back-off while the other partitions and the appends go on, its lag and failures in
 * `/sinks` and `/metrics`; requests are signed verifiably; a record too large for a message is
 * dead-lettered and the partition goes on.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEAD_LETTER_HEADERS } from "../../src/streams";
import { verifyWebhookSignature } from "../../src/connectors/webhook-signature";
import type { SinkRecord } from "../../src/connectors/sink";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { until } from "../support/until";
import { SINK_RECEIVED, SINK_TOPICS, SMALL_MESSAGE_BYTES, streams } from "./app";
import { DEAD_LETTER_TOPIC } from "../../examples/orders-totals/app";

const application = streams.applicationFor(env);
const driver = new TestDriver(env, application);
const server = (env as unknown as { SINK_WEBHOOK_URL: string }).SINK_WEBHOOK_URL.replace(/\/hook$/, "");
const SECRET = "test-webhook-secret";

type Written = { key: string; value: string; partition: number };

async function write(topic: string, records: readonly Written[]): Promise<void> {
  const response = await call(`/topics/${topic}/records`, { body: { records } });
  expect(response.status).toBe(200);
}

/** The messages the queue sinks sent (as the Worker received them back), in the order received. */
async function received(topic: string, partition?: number): Promise<SinkRecord[]> {
  const messages = (await driver.read(SINK_RECEIVED)).map((r) => JSON.parse(r.value) as SinkRecord);
  return messages.filter((m) => m.topic === topic && (partition === undefined || m.partition === partition));
}

interface Request {
  at: number;
  headers: Record<string, string>;
  body: string;
  status: number;
}
const requests = async (partition?: number): Promise<Request[]> => {
  const all = (await (await fetch(`${server}/received`)).json()) as Request[];
  return all.filter((r) => partition === undefined || (JSON.parse(r.body) as { records: SinkRecord[] }).records[0]!.partition === partition);
};
const recordsOf = (request: Request) => (JSON.parse(request.body) as { records: SinkRecord[] }).records;
const control = (partition: number, status: number | null) => fetch(`${server}/control`, { method: "POST", body: JSON.stringify({ partition, status }) });

interface SinkView {
  name: string;
  lag: number;
  delivered: number;
  failures: number;
  deadLettered: number;
  failing: number[];
  partitions: {
    partition: number;
    position: number;
    end: number;
    lag: number;
    consecutiveFailures: number;
    lastError: string | null;
    nextAttemptAt: number | null;
  }[];
}
const sinkView = async (name: string): Promise<SinkView> => {
  const response = await call("/sinks");
  expect(response.status).toBe(200);
  return (await json<{ sinks: SinkView[] }>(response)).sinks.find((s) => s.name === name)!;
};
const offsetsOf = (records: readonly SinkRecord[]) => records.map((r) => r.offset);
/** A value as these topics keep it: a JSON string (they have no serde: ingest writes values as JSON). */
const stored = (value: string) => JSON.stringify(value);

describe("a topic delivered to a Queue", () => {
  it("sends every record of each partition in offset order, each with its id, and commits the sink's position", async () => {
    const topic = SINK_TOPICS.queued;
    await write(topic, [
      ...["a", "b", "c", "d", "e"].map((value) => ({ key: "k0", value, partition: 0 })),
      ...["x", "y", "z"].map((value) => ({ key: "k1", value, partition: 1 })),
    ]);
    await until(async () => (await received(topic)).length >= 8, 20_000, "eight messages from the sink");
    for (const [partition, values] of [
      [0, ["a", "b", "c", "d", "e"]],
      [1, ["x", "y", "z"]],
    ] as const) {
      const messages = await received(topic, partition);
      expect(offsetsOf(messages)).toEqual(values.map((_, i) => i));
      expect(messages.map((m) => m.id)).toEqual(values.map((_, i) => `${topic}/${partition}/${i}`));
      expect(messages.map((m) => m.value)).toEqual(values.map(stored));
      expect(messages.every((m) => m.key === `k${partition}`)).toBe(true);
    }
    await until(async () => (await sinkView("queued")).lag === 0, 10_000, "the sink's position at the end");
    const view = await sinkView("queued");
    expect(view).toMatchObject({ lag: 0, delivered: 8, failures: 0, failing: [] });
    expect(view.partitions.map((p) => [p.partition, p.position, p.end])).toEqual([
      [0, 5, 5],
      [1, 3, 3],
    ]);
    const metrics = await (await call("/metrics")).text();
    expect(metrics).toMatch(new RegExp(`edge_streams_sink_delivered_records_total\\{sink="queued",topic="${topic}",partition="0"\\} 5`));
    expect(metrics).toMatch(new RegExp(`edge_streams_sink_lag_records\\{sink="queued",topic="${topic}",partition="1"\\} 0`));
  });

  it("sends a batch again, with the same ids, after a crash between its delivery and its commit; nothing is lost", async () => {
    const topic = SINK_TOPICS.queued;
    const before = (await received(topic, 1)).length;
    const start = (await sinkView("queued")).partitions.find((p) => p.partition === 1)!.position;
    // The partition's next delivery dies after sending, before committing.
    await env.LOG_PARTITION.getByName(`${topic}/1`).crashSink("sink:after-delivery");
    await write(
      topic,
      ["p", "q", "r"].map((value) => ({ key: "k1", value, partition: 1 })),
    );
    const ids = [0, 1, 2].map((i) => `${topic}/1/${start + i}`);
    // Delivered twice: before the crash, and again once the partition's alarm runs again.
    await until(async () => (await received(topic, 1)).length >= before + 6, 20_000, "the batch sent again after the crash");
    await until(async () => (await sinkView("queued")).partitions.find((p) => p.partition === 1)!.lag === 0, 10_000, "the position committed");
    const after = (await received(topic, 1)).slice(before);
    expect(after.map((m) => m.id)).toEqual([...ids, ...ids]);
    expect(after.map((m) => m.value)).toEqual(["p", "q", "r", "p", "q", "r"].map(stored));
  });

  it("dead-letters a record too large for a message, and delivers the records after it", async () => {
    const topic = SINK_TOPICS.small;
    const big = "x".repeat(SMALL_MESSAGE_BYTES);
    await write(topic, [
      { key: "s", value: "before", partition: 0 },
      { key: "s", value: big, partition: 0 },
      { key: "s", value: "after", partition: 0 },
    ]);
    await until(async () => (await received(topic)).length >= 2, 20_000, "the two small records");
    expect((await received(topic)).map((m) => [m.offset, m.value])).toEqual([
      [0, stored("before")],
      [2, stored("after")],
    ]);
    const letters = (await driver.read(DEAD_LETTER_TOPIC)).filter((r) => r.headers.some((h) => h.key === "edge-streams.sink" && h.value === "small"));
    expect(letters).toHaveLength(1);
    const header = (name: string) => letters[0]!.headers.find((h) => h.key === name)?.value;
    expect(letters[0]).toMatchObject({ key: "s", value: stored(big) });
    expect([header(DEAD_LETTER_HEADERS.topic), header(DEAD_LETTER_HEADERS.partition), header(DEAD_LETTER_HEADERS.offset)]).toEqual([topic, "0", "1"]);
    expect(header(DEAD_LETTER_HEADERS.message)).toMatch(/takes at most 600/);
    await until(async () => (await sinkView("small")).lag === 0, 10_000, "the small sink caught up");
    expect(await sinkView("small")).toMatchObject({ delivered: 2, deadLettered: 1, lag: 0 });
  });

  it("delivers the example's output, totals, as the tasks write it", async () => {
    await driver.instances();
    await call("/topics/orders/records", { body: { records: [{ key: "sink-alice", value: { amount: 5 } }] } });
    await driver.runUntilQuiet();
    await until(async () => (await received("totals")).some((m) => m.key === "sink-alice"), 20_000, "alice's totals from the sink");
    const [total] = (await received("totals")).filter((m) => m.key === "sink-alice");
    expect(JSON.parse(total!.value)).toEqual({ count: 1, sum: 5 });
    expect(total!.id).toBe(`totals/${total!.partition}/${total!.offset}`);
  });
});

describe("a topic delivered to a webhook", () => {
  it("POSTs batches in offset order with idempotency keys and signatures a receiver verifies", async () => {
    const topic = SINK_TOPICS.hooked;
    await write(
      topic,
      ["v0", "v1", "v2", "v3", "v4", "v5", "v6"].map((value) => ({ key: "h", value, partition: 0 })),
    );
    await until(async () => (await requests(0)).flatMap(recordsOf).length >= 7, 20_000, "seven records POSTed");
    const posted = await requests(0);
    expect(posted.map((r) => offsetsOf(recordsOf(r)))).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(posted.map((r) => r.headers["idempotency-key"])).toEqual([`${topic}/0/0-2`, `${topic}/0/3-5`, `${topic}/0/6-6`]);
    for (const request of posted) {
      expect(JSON.parse(request.body)).toMatchObject({ sink: "hook" });
      expect(request.headers["edge-streams-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(await verifyWebhookSignature(SECRET, request.headers["edge-streams-signature"]!, request.body)).toBe(true);
      // Another secret, or another body, does not verify.
      expect(await verifyWebhookSignature("not-the-secret", request.headers["edge-streams-signature"]!, request.body)).toBe(false);
      expect(await verifyWebhookSignature(SECRET, request.headers["edge-streams-signature"]!, `${request.body} `)).toBe(false);
    }
    expect(recordsOf(posted[0]!)[0]).toMatchObject({ id: `${topic}/0/0`, key: "h", value: stored("v0"), topic, partition: 0, offset: 0 });
  });

  it("retries a failing endpoint with back-off while the other partition and the appends go on; lag and failures are visible", async () => {
    const topic = SINK_TOPICS.hooked;
    await control(1, 503);
    try {
      await write(topic, [
        { key: "h", value: "p1-a", partition: 1 },
        { key: "h", value: "p0-a", partition: 0 },
      ]);
      await until(async () => (await requests(1)).length >= 4, 20_000, "four attempts at partition 1");
      // Partition 0 delivered meanwhile; appends to partition 1 go on.
      await until(async () => (await requests(0)).flatMap(recordsOf).some((r) => r.value === stored("p0-a")), 10_000, "partition 0 delivered");
      await write(topic, [{ key: "h", value: "p1-b", partition: 1 }]);
      const attempts = await requests(1);
      expect(attempts.every((r) => r.status === 503)).toBe(true);
      // The same batch each time (its idempotency key), ever longer apart: 200, 400, 800 ms.
      expect(new Set(attempts.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${topic}/1/0-0`]));
      const gaps = attempts.slice(1, 4).map((r, i) => r.at - attempts[i]!.at);
      expect(gaps[0]).toBeGreaterThanOrEqual(180);
      expect(gaps[1]).toBeGreaterThanOrEqual(360);
      expect(gaps[2]).toBeGreaterThanOrEqual(720);
      const view = await sinkView("hook");
      expect(view.failing).toEqual([1]);
      expect(view.failures).toBeGreaterThanOrEqual(4);
      const failing = view.partitions.find((p) => p.partition === 1)!;
      expect(failing).toMatchObject({ position: 0, end: 2, lag: 2 });
      expect(failing.consecutiveFailures).toBeGreaterThanOrEqual(4);
      expect(failing.lastError).toMatch(/answered 503/);
      expect(failing.nextAttemptAt).toBeGreaterThan(0);
      const metrics = await (await call("/metrics")).text();
      expect(metrics).toMatch(new RegExp(`edge_streams_sink_lag_records\\{sink="hook",topic="${topic}",partition="1"\\} 2`));
      expect(metrics).toMatch(new RegExp(`edge_streams_sink_failures_total\\{sink="hook",topic="${topic}",partition="1"\\} [4-9]`));
    } finally {
      await control(1, null);
    }
    // Once the endpoint answers again, both records go, in order, and the lag is gone.
    await until(async () => (await sinkView("hook")).partitions.find((p) => p.partition === 1)!.lag === 0, 20_000, "partition 1 delivered");
    const delivered = (await requests(1)).filter((r) => r.status === 200).flatMap(recordsOf);
    expect(delivered.map((r) => r.value)).toEqual(["p1-a", "p1-b"].map(stored));
    expect((await sinkView("hook")).failing).toEqual([]);
  });

  it("POSTs a batch again, with the same idempotency key and records, after a crash between its delivery and its commit; nothing is lost", async () => {
    const topic = SINK_TOPICS.hooked;
    await until(async () => (await sinkView("hook")).partitions.find((p) => p.partition === 0)!.lag === 0, 20_000, "partition 0 caught up");
    const start = (await sinkView("hook")).partitions.find((p) => p.partition === 0)!.position;
    const before = (await requests(0)).length;
    // The partition's next delivery dies after the endpoint answered 200, before the position is committed.
    await env.LOG_PARTITION.getByName(`${topic}/0`).crashSink("sink:after-delivery");
    await write(
      topic,
      ["c0", "c1"].map((value) => ({ key: "h", value, partition: 0 })),
    );
    await until(async () => (await requests(0)).length >= before + 2, 20_000, "the batch POSTed again after the crash");
    await until(async () => (await sinkView("hook")).partitions.find((p) => p.partition === 0)!.lag === 0, 10_000, "the position committed");
    const after = (await requests(0)).slice(before);
    const key = `${topic}/0/${start}-${start + 1}`;
    expect(after.map((r) => [r.status, r.headers["idempotency-key"]])).toEqual([
      [200, key],
      [200, key],
    ]);
    expect(after.map((r) => recordsOf(r).map((m) => m.id))).toEqual([0, 1].map(() => [`${topic}/0/${start}`, `${topic}/0/${start + 1}`]));
    expect(after.map((r) => recordsOf(r).map((m) => m.value))).toEqual([0, 1].map(() => ["c0", "c1"].map(stored)));
  });
});
