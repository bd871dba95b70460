import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../../src/log/durable-log";
import { InvalidRecord, LogUnavailable, OffsetOutOfRange, ProducerFenced, RecordTooLarge } from "../../src/log/errors";
import { MAX_RECORD_BYTES } from "../../src/log/records";
import { TopicCatalog } from "../../src/log/topics";
import { restartDurableObject } from "../support/restart";
import { describeLogContract } from "./contract";

const catalog = new TopicCatalog(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`t${i}`, 3])));
let nextTopic = 0;
const open = async () => ({ log: new DurableLog(env.LOG_PARTITION, catalog), topic: `t${nextTopic++}` });

describeLogContract("embedded Durable Object log", open, { retention: true });

describe("embedded log: durability and failures", () => {
  it("keeps records, producer state and committed offsets across a crash and an eviction", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 2 };
    await log.append(tp, [{ key: "k", value: "before" }], { producerId: "p", epoch: 0, sequence: 0 });
    await log.commitOffset("g", tp, { offset: 1, metadata: "m" });
    await abortAllDurableObjects();
    // The retry after the crash is still recognised: nothing is written twice.
    expect(await log.append(tp, [{ key: "k", value: "before" }], { producerId: "p", epoch: 0, sequence: 0 })).toMatchObject({ duplicate: true });
    await log.append(tp, [{ key: "k", value: "after" }]);
    await restartDurableObject(log.partition(tp));
    const fetched = await log.fetch(tp, 0, { maxRecords: 10, maxBytes: 1 << 20 });
    expect(fetched.records.map((r) => r.value)).toEqual(["before", "after"]);
    expect(await log.committedOffset("g", tp)).toEqual({ offset: 1, metadata: "m" });
  });

  it("appends a large batch atomically and fetches it back in bounded pages", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 0 };
    const batch = Array.from({ length: 5_000 }, (_, i) => ({ key: `k${i}`, value: `{"n":${i}}` }));
    expect(await log.append(tp, batch)).toEqual({ baseOffset: 0, count: 5_000, duplicate: false });
    let offset = 0;
    let pages = 0;
    const seen: string[] = [];
    while (offset < 5_000) {
      const page = await log.fetch(tp, offset, { maxRecords: 1_000, maxBytes: 8_000 });
      expect(page.records.length).toBeGreaterThan(0);
      expect(page.records.reduce((n, r) => n + r.key!.length + r.value.length, 0)).toBeLessThanOrEqual(8_000);
      seen.push(...page.records.map((r) => r.value));
      offset = page.nextOffset;
      pages++;
    }
    expect(seen).toEqual(batch.map((r) => r.value));
    expect(pages).toBeGreaterThan(5);
  });

  it("rejects a record over the size limit without writing any of its batch", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 0 };
    await expect(
      log.append(tp, [
        { key: null, value: "ok" },
        { key: null, value: "x".repeat(MAX_RECORD_BYTES + 1) },
      ]),
    ).rejects.toBeInstanceOf(RecordTooLarge);
    expect((await log.offsets(tp)).latest).toBe(0);
  });

  it("rejects invalid offsets and bounds", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 0 };
    await expect(log.fetch(tp, -1, { maxRecords: 1, maxBytes: 1 })).rejects.toBeInstanceOf(InvalidRecord);
    await expect(log.fetch(tp, 0, { maxRecords: 0, maxBytes: 1 })).rejects.toBeInstanceOf(InvalidRecord);
    await expect(log.commitOffset("g", tp, { offset: 9, metadata: "" })).rejects.toBeInstanceOf(OffsetOutOfRange);
  });

  it("fences a commit from an older epoch of the group's committer (I3)", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 0 };
    await log.append(tp, [
      { key: null, value: "a" },
      { key: null, value: "b" },
    ]);
    await log.commitOffset("app", tp, { offset: 1, metadata: "", epoch: 5 });
    await expect(log.commitOffset("app", tp, { offset: 2, metadata: "", epoch: 4 })).rejects.toBeInstanceOf(ProducerFenced);
    expect((await log.committedOffset("app", tp))?.offset).toBe(1);
    await log.commitOffset("app", tp, { offset: 2, metadata: "", epoch: 6 });
    expect((await log.committedOffset("app", tp))?.offset).toBe(2);
  });

  it("fails injected calls as LogUnavailable, then recovers", async () => {
    const { log, topic } = await open();
    const tp = { topic, partition: 1 };
    await log.partition(tp).injectFailures(2);
    await expect(log.append(tp, [{ key: null, value: "a" }])).rejects.toBeInstanceOf(LogUnavailable);
    await expect(log.offsets(tp)).rejects.toBeInstanceOf(LogUnavailable);
    expect(await log.append(tp, [{ key: null, value: "a" }])).toMatchObject({ baseOffset: 0 });
  });

  it("refuses to serve another partition from an object bound to one", async () => {
    const { log, topic } = await open();
    const stub = log.partition({ topic, partition: 0 });
    await log.append({ topic, partition: 0 }, [{ key: null, value: "a" }]);
    const result = await stub.offsets({ topic, partition: 1 });
    expect(result).toMatchObject({ ok: false, failure: { code: "UNKNOWN_TOPIC_OR_PARTITION" } });
  });

  it("stores its schema version once", async () => {
    const { log, topic } = await open();
    const stub = log.partition({ topic, partition: 0 });
    await log.offsets({ topic, partition: 0 });
    const version = await runInDurableObject(stub, (_, state) => state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version);
    expect(version).toBe(7);
  });
});
