/**
 * The `@upstash/kafka` backend of the Log interface, from Node against a real `wrangler dev`:
 * the shared contract (without retention, which the dialect lacks), bounded failures, and
 * idempotence and fencing carried by the `edge-producer` header. The log authenticates as the
 * runtime (LOG_TOKEN): only that credential may send producer identities and epochs.
 */
import { Kafka } from "@upstash/kafka";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidRecord, LogUnavailable, ProducerFenced, RecordTooLarge } from "../../src/log/errors";
import { UnsupportedByDialect, UpstashLog, kafkaHttpLayer, type UpstashLogOptions } from "../../src/kafka-rest/upstash-log";
import { describeLogContract } from "../log/contract";
import { freePort, startWranglerDev, type WranglerDev } from "./wrangler-dev";

const CONTRACT_TOPICS = 20;
/** The runtime's credential of the deployment under test (its LOG_TOKEN). */
const LOG_TOKEN = `node-log-${Math.random().toString(36).slice(2)}`;
let dev: WranglerDev;
let nextTopic = 0;

beforeAll(async () => {
  const topics: Record<string, number> = { extra: 3 };
  for (let i = 0; i < CONTRACT_TOPICS; i++) topics[`contract-${i}`] = 3;
  dev = await startWranglerDev({ topics, vars: { LOG_TOKEN } });
});

afterAll(async () => {
  await dev?.stop();
});

const open = (options: Partial<UpstashLogOptions> = {}) =>
  new UpstashLog({ url: `${dev.url}/kafka`, username: "edge", password: LOG_TOKEN, timeoutMs: 10_000, ...options });

describeLogContract(
  "@upstash/kafka backend",
  async () => {
    if (nextTopic >= CONTRACT_TOPICS) throw new Error("declare more contract topics");
    return { log: open(), topic: `contract-${nextTopic++}` };
  },
  { retention: false },
);

/** A front that answers 503 to the next `failures` requests and passes the others to wrangler. */
async function flakyFront(): Promise<{ url: string; seen: () => number; fail: (n: number) => void; close: () => Promise<void> }> {
  let failures = 0;
  let seen = 0;
  const server: Server = createServer(async (req, res) => {
    seen++;
    if (failures > 0) {
      failures--;
      res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: "try again", status: 503 }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const upstream = await fetch(`${dev.url}${req.url}`, {
      method: req.method,
      headers: { authorization: req.headers.authorization ?? "", "content-type": "application/json" },
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(upstream.status, { "content-type": "application/json" }).end(await upstream.text());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    seen: () => seen,
    fail: (n) => (failures = n),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe("@upstash/kafka backend: bounded failures", () => {
  it("reaches the client's HTTP layer, so the client's own retries are off", () => {
    const layer = kafkaHttpLayer(new Kafka({ url: "http://127.0.0.1:1", username: "u", password: "p" }));
    expect(layer).not.toBeNull();
    expect(open().boundedRetries).toBe(true);
  });

  it("fails fast and typed on a wrong password instead of retrying for 15 s", async () => {
    const log = open({ password: "wrong" });
    const started = Date.now();
    const error = await log.topics().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LogUnavailable);
    expect((error as Error).message).toMatch(/credentials refused/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("bounds the public API's retries by the deadline when the HTTP layer is not used", async () => {
    const log = open({ password: "wrong", publicApiOnly: true, timeoutMs: 1_000 });
    expect(log.boundedRetries).toBe(false);
    const started = Date.now();
    await expect(log.offsets({ topic: "extra", partition: 0 })).rejects.toBeInstanceOf(LogUnavailable);
    expect(Date.now() - started).toBeLessThan(3_000);
    // And it works with the right password.
    const good = open({ publicApiOnly: true });
    const { baseOffset } = await good.append({ topic: "extra", partition: 2 }, [{ key: "k", value: "via public API" }]);
    const page = await good.fetch({ topic: "extra", partition: 2 }, baseOffset, { maxRecords: 1, maxBytes: 1 << 20 });
    expect(page.records[0]).toMatchObject({ key: "k", value: "via public API" });
  });

  it("is LogUnavailable within its budget when nothing answers", async () => {
    const log = new UpstashLog({ url: `http://127.0.0.1:${await freePort()}`, username: "edge", password: "x", timeoutMs: 2_000 });
    const started = Date.now();
    await expect(log.offsets({ topic: "extra", partition: 0 })).rejects.toBeInstanceOf(LogUnavailable);
    await expect(log.append({ topic: "extra", partition: 0 }, [{ key: null, value: "v" }])).rejects.toBeInstanceOf(LogUnavailable);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("repeats reads on transient failures, but never an append", async () => {
    const front = await flakyFront();
    try {
      const log = new UpstashLog({ url: `${front.url}/kafka`, username: "edge", password: dev.token, timeoutMs: 5_000, retries: 2 });
      const tp = { topic: "extra", partition: 1 };
      front.fail(2);
      expect(await log.offsets(tp)).toEqual({ earliest: 0, latest: 0 });
      const before = front.seen();
      front.fail(1);
      const error = await log.append(tp, [{ key: null, value: "once" }]).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LogUnavailable);
      expect(front.seen() - before).toBe(1);
      expect((await log.offsets(tp)).latest).toBe(0);
      // Out of retries: the transient failure surfaces, typed.
      front.fail(100);
      await expect(log.topics()).rejects.toBeInstanceOf(LogUnavailable);
    } finally {
      await front.close();
    }
  });
});

describe("@upstash/kafka backend: what the dialect carries", () => {
  it("fences an older epoch of a producer across two clients, and keeps the header out of the records", async () => {
    const tp = { topic: "extra", partition: 0 };
    const zombie = open();
    const successor = open();
    const { baseOffset } = await zombie.append(tp, [{ key: "k", value: "old" }], { producerId: "task-0_0", epoch: 3, sequence: 0 });
    await successor.append(tp, [{ key: "k", value: "new" }], { producerId: "task-0_0", epoch: 4, sequence: 0 });
    await expect(zombie.append(tp, [{ key: "k", value: "zombie" }], { producerId: "task-0_0", epoch: 3, sequence: 1 })).rejects.toBeInstanceOf(ProducerFenced);
    const page = await successor.fetch(tp, baseOffset, { maxRecords: 10, maxBytes: 1 << 20 });
    expect(page.records.map((r) => [r.value, r.headers])).toEqual([
      ["old", []],
      ["new", []],
    ]);
    // Stored without the header, as a plain client sees it.
    const raw = await new Kafka({ url: `${dev.url}/kafka`, username: "edge", password: dev.token }).consumer().fetch({ ...tp, offset: baseOffset });
    expect(raw.map((m) => m.headers)).toEqual([[], []]);
  });

  it("refuses, without a call, a batch too large for one request", async () => {
    const log = open({ url: "http://127.0.0.1:1/kafka", maxRequestBytes: 10_000 });
    const batch = Array.from({ length: 20 }, () => ({ key: null, value: "x".repeat(600) }));
    await expect(log.append({ topic: "extra", partition: 0 }, batch)).rejects.toBeInstanceOf(RecordTooLarge);
  });

  it("refuses the reserved header name in records", async () => {
    await expect(
      open().append({ topic: "extra", partition: 0 }, [{ key: null, value: "v", headers: [{ key: "edge-producer", value: "p;0;0" }] }]),
    ).rejects.toBeInstanceOf(InvalidRecord);
  });

  it("keeps a null key and an empty key apart", async () => {
    const log = open();
    const tp = { topic: "extra", partition: 2 };
    const { baseOffset } = await log.append(tp, [
      { key: null, value: "a" },
      { key: "", value: "b" },
    ]);
    const page = await log.fetch(tp, baseOffset, { maxRecords: 2, maxBytes: 1 << 20 });
    expect(page.records.map((r) => r.key)).toEqual([null, ""]);
  });

  it("has no retention and carries no commit metadata", async () => {
    const log = open();
    const tp = { topic: "extra", partition: 1 };
    await expect(log.deleteRecordsBefore(tp, 0)).rejects.toBeInstanceOf(UnsupportedByDialect);
    await expect(log.deleteRecordsBefore(tp, 0)).rejects.toBeInstanceOf(InvalidRecord);
    await log.commitOffset("meta-group", tp, { offset: 0, metadata: "not carried" });
    expect(await log.committedOffset("meta-group", tp)).toEqual({ offset: 0, metadata: "" });
  });

  it("encodes group names in paths", async () => {
    const log = open();
    const tp = { topic: "extra", partition: 1 };
    await log.commitOffset("a group/with?odd#chars", tp, { offset: 0, metadata: "" });
    expect(await log.committedOffset("a group/with?odd#chars", tp)).toEqual({ offset: 0, metadata: "" });
    expect(await log.committedOffset("a group", tp)).toBeNull();
  });
});
