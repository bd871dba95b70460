import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { partitionForKey } from "../src/log/partitioner";
import { TopicCatalog } from "../src/log/topics";
import { call, json } from "./support/api";

const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ orders: 4, totals: 4, "ingest-test": 4 }));
const endOffsets = async (topic = "orders") => Promise.all([0, 1, 2, 3].map(async (partition) => (await log.offsets({ topic, partition })).latest));

describe("GET /healthz", () => {
  it("answers without a token", async () => {
    const response = await call("/healthz", { token: null });
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ ok: true });
  });
});

describe("POST /topics/:topic/records", () => {
  it("routes keys with Kafka's default partitioner and answers offsets in request order", async () => {
    const before = await endOffsets();
    const keys = ["alice", "bob", "carol", "alice", "dave"];
    const response = await call("/topics/orders/records", { body: { records: keys.map((key, i) => ({ key, value: { amount: i } })) } });
    expect(response.status).toBe(200);
    const { offsets } = await json<{ offsets: { partition: number; offset: number }[] }>(response);
    expect(offsets.map((o) => o.partition)).toEqual(keys.map((k) => partitionForKey(k, 4)));
    // Within a partition, offsets follow request order and continue from the previous end.
    const next = [...before];
    for (const o of offsets) expect(o.offset).toBe(next[o.partition]!++);
    const alice = offsets.filter((_, i) => keys[i] === "alice");
    const page = await log.fetch({ topic: "orders", partition: alice[0]!.partition }, alice[0]!.offset, { maxRecords: 100, maxBytes: 1 << 20 });
    expect(page.records.find((r) => r.offset === alice[1]!.offset)).toMatchObject({ key: "alice", value: '{"amount":3}' });
  });

  it("honours an explicit partition and timestamp", async () => {
    const response = await call("/topics/orders/records", { body: { records: [{ key: "alice", value: { amount: 1 }, partition: 3, timestamp: 1234 }] } });
    const { offsets } = await json(response);
    expect(offsets[0].partition).toBe(3);
    const page = await log.fetch({ topic: "orders", partition: 3 }, offsets[0].offset, { maxRecords: 1, maxBytes: 1 << 20 });
    expect(page.records[0]).toMatchObject({ key: "alice", value: '{"amount":1}', timestamp: 1234 });
  });

  it("makes a retry with the same Idempotency-Key append nothing new and answer the same offsets", async () => {
    const body = { records: ["k1", "k2", "k3", "k4", "k5", "k6"].map((key) => ({ key, value: { amount: 1 } })) };
    const headers = { "Idempotency-Key": "order-batch-42" };
    const first = await json(await call("/topics/orders/records", { body, headers }));
    const before = await endOffsets();
    const retry = await call("/topics/orders/records", { body, headers });
    expect(retry.status).toBe(200);
    expect(await json(retry)).toEqual(first);
    expect(await endOffsets()).toEqual(before);
  });

  it("completes a partially appended request on retry, appending only what is missing", async () => {
    const records = ["p-a", "p-b", "p-c", "p-d", "p-e", "p-f", "p-g", "p-h"].map((key) => ({ key, value: { amount: 2 } }));
    const partitions = [...new Set(records.map((r) => partitionForKey(r.key, 4)))];
    expect(partitions.length).toBeGreaterThan(1);
    const failing = partitions[0]!;
    const headers = { "Idempotency-Key": "partial-1" };
    const before = await endOffsets("ingest-test");
    // No task reads this topic, so the injected failure hits the ingest itself.
    await log.partition({ topic: "ingest-test", partition: failing }).injectFailures(1);
    const failed = await call("/topics/ingest-test/records", { body: { records }, headers });
    expect(failed.status).toBe(503);
    expect(failed.headers.get("Retry-After")).toBeTruthy();
    expect((await json(failed)).error).toBe("unavailable");
    const afterFailure = await endOffsets("ingest-test");
    expect(afterFailure[failing]).toBe(before[failing]);
    const retry = await call("/topics/ingest-test/records", { body: { records }, headers });
    expect(retry.status).toBe(200);
    const after = await endOffsets("ingest-test");
    // Each partition got its records exactly once.
    for (let p = 0; p < 4; p++) {
      expect(after[p]! - before[p]!).toBe(records.filter((r) => partitionForKey(r.key, 4) === p).length);
    }
  });

  it("refuses an Idempotency-Key reused for a different body", async () => {
    const headers = { "Idempotency-Key": "reused-key" };
    await call("/topics/orders/records", { body: { records: [{ key: "x", value: { amount: 1 }, partition: 0 }] }, headers });
    const before = await endOffsets();
    const reused = await call("/topics/orders/records", { body: { records: [{ key: "x", value: { amount: 2 }, partition: 0 }] }, headers });
    expect(reused.status).toBe(409);
    expect((await json(reused)).error).toBe("idempotency_key_reused");
    expect(await endOffsets()).toEqual(before);
  });

  describe("rejects bad requests and changes nothing", () => {
    const cases: [string, Parameters<typeof call>[1], number, string][] = [
      ["no token", { body: { records: [{ key: "a", value: 1 }] }, token: null }, 401, "unauthorized"],
      ["a wrong token", { body: { records: [{ key: "a", value: 1 }] }, token: "nope" }, 401, "unauthorized"],
      ["malformed JSON", { rawBody: '{"records": [' }, 400, "invalid_input"],
      ["no records", { body: { records: [] } }, 400, "invalid_input"],
      ["a key that is not a string", { body: { records: [{ key: 1, value: 1 }] } }, 400, "invalid_input"],
      ["a missing value", { body: { records: [{ key: "a" }] } }, 400, "invalid_input"],
      ["a negative partition", { body: { records: [{ key: "a", value: 1, partition: -1 }] } }, 400, "invalid_input"],
      [
        "a partition the topic lacks",
        {
          body: {
            records: [
              { key: "a", value: 1 },
              { key: "b", value: 1, partition: 4 },
            ],
          },
        },
        400,
        "invalid_input",
      ],
      ["a fractional timestamp", { body: { records: [{ key: "a", value: 1, timestamp: 1.5 }] } }, 400, "invalid_input"],
      ["a body over MAX_BODY_BYTES", { body: { records: [{ key: "a", value: "x".repeat(70_000) }] } }, 413, "too_large"],
    ];
    it.each(cases)("%s", async (_, options, status, code) => {
      const before = await endOffsets();
      const response = await call("/topics/orders/records", options);
      expect(response.status).toBe(status);
      const body = await json(response);
      expect(body.error).toBe(code);
      expect(typeof body.message).toBe("string");
      expect(await endOffsets()).toEqual(before);
    });

    it("an unknown topic", async () => {
      const response = await call("/topics/nope/records", { body: { records: [{ key: "a", value: 1 }] } });
      expect(response.status).toBe(404);
      expect(await json(response)).toMatchObject({ error: "unknown_topic" });
    });
  });

  it("answers unknown routes with the error shape", async () => {
    const response = await call("/nowhere");
    expect(response.status).toBe(404);
    expect(await json(response)).toMatchObject({ error: "not_found" });
  });
});
