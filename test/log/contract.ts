/**
 * The behavioural contract of the `Log` interface, shared by every backend (as hono runs one
 * router suite against every router): the embedded log runs it in workerd, the `@upstash/kafka`
 * backend both in workerd against the Worker's own `/kafka` (test/kafka-rest/upstash-log.test.ts)
 * and from Node against a real `wrangler dev` (test/node/upstash-log.test.ts).
 */
import { describe, expect, it } from "vitest";
import { DuplicateSequenceMismatch, InvalidRecord, OffsetOutOfRange, OutOfOrderSequence, ProducerFenced, UnknownTopicOrPartition } from "../../src/log/errors";
import type { Log, ProducerRecord, TopicPartition } from "../../src/log/types";

export interface ContractSubject {
  readonly log: Log;
  /** A declared, empty topic with at least two partitions, not used by any other test. */
  readonly topic: string;
}

export interface ContractOptions {
  /** Deleting records below an offset (the Kafka REST dialect has no call for it). */
  readonly retention: boolean;
}

const rec = (value: string, key: string | null = null, extra: Partial<ProducerRecord> = {}): ProducerRecord => ({ key, value, ...extra });
const values = (n: number, prefix = "v") => Array.from({ length: n }, (_, i) => rec(`${prefix}${i}`, `k${i}`));

export function describeLogContract(backend: string, open: () => Promise<ContractSubject>, options: ContractOptions): void {
  describe(`Log contract: ${backend}`, () => {
    it("gives dense offsets from 0 in append order and returns records as written", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      const first = await log.append(tp, [rec("a", "k1", { headers: [{ key: "h", value: "1" }], timestamp: 1_000 }), rec("b", null, { timestamp: 2_000 })]);
      const second = await log.append(tp, [rec("c", "k3", { timestamp: 3_000 })]);
      expect(first).toEqual({ baseOffset: 0, count: 2, duplicate: false });
      expect(second).toEqual({ baseOffset: 2, count: 1, duplicate: false });
      const fetched = await log.fetch(tp, 0, { maxRecords: 100, maxBytes: 1 << 20 });
      expect(fetched.records).toEqual([
        { offset: 0, key: "k1", value: "a", headers: [{ key: "h", value: "1" }], timestamp: 1_000 },
        { offset: 1, key: null, value: "b", headers: [], timestamp: 2_000 },
        { offset: 2, key: "k3", value: "c", headers: [], timestamp: 3_000 },
      ]);
      expect(fetched.nextOffset).toBe(3);
      expect(await log.offsets(tp)).toEqual({ earliest: 0, latest: 3 });
    });

    it("stamps records without a timestamp with the append time", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      const before = Date.now();
      await log.append(tp, [rec("x")]);
      const [record] = (await log.fetch(tp, 0, { maxRecords: 1, maxBytes: 1 << 20 })).records;
      expect(record!.timestamp).toBeGreaterThanOrEqual(before - 5_000);
      expect(record!.timestamp).toBeLessThanOrEqual(Date.now() + 5_000);
    });

    it("keeps partitions independent", async () => {
      const { log, topic } = await open();
      await log.append({ topic, partition: 0 }, values(3));
      await log.append({ topic, partition: 1 }, values(1, "p1-"));
      expect(await log.offsets({ topic, partition: 0 })).toEqual({ earliest: 0, latest: 3 });
      const p1 = await log.fetch({ topic, partition: 1 }, 0, { maxRecords: 10, maxBytes: 1 << 20 });
      expect(p1.records.map((r) => [r.offset, r.value])).toEqual([[0, "p1-0"]]);
    });

    it("rejects a batch with one bad record as a whole", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      await log.append(tp, values(2));
      const bad = [rec("fine"), { key: null, value: 42 } as unknown as ProducerRecord];
      await expect(log.append(tp, bad)).rejects.toBeInstanceOf(InvalidRecord);
      await expect(log.append(tp, [])).rejects.toBeInstanceOf(InvalidRecord);
      expect(await log.offsets(tp)).toEqual({ earliest: 0, latest: 2 });
    });

    it("bounds a fetch by records and by bytes, always returning at least one record", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      await log.append(
        tp,
        Array.from({ length: 10 }, (_, i) => rec("x".repeat(100), `k${i}`)),
      );
      const byCount = await log.fetch(tp, 2, { maxRecords: 3, maxBytes: 1 << 20 });
      expect(byCount.records.map((r) => r.offset)).toEqual([2, 3, 4]);
      expect(byCount.nextOffset).toBe(5);
      // Each record is 102 bytes (key "kN" + 100-byte value): 350 bytes hold three.
      const byBytes = await log.fetch(tp, 0, { maxRecords: 100, maxBytes: 350 });
      expect(byBytes.records.map((r) => r.offset)).toEqual([0, 1, 2]);
      const tiny = await log.fetch(tp, 7, { maxRecords: 100, maxBytes: 1 });
      expect(tiny.records.map((r) => r.offset)).toEqual([7]);
    });

    it("answers a fetch at the end with nothing and beyond it with OffsetOutOfRange", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      await log.append(tp, values(2));
      const atEnd = await log.fetch(tp, 2, { maxRecords: 10, maxBytes: 1 << 20 });
      expect(atEnd.records).toEqual([]);
      expect(atEnd.nextOffset).toBe(2);
      await expect(log.fetch(tp, 3, { maxRecords: 10, maxBytes: 1 << 20 })).rejects.toBeInstanceOf(OffsetOutOfRange);
    });

    it("refuses unknown topics and partitions", async () => {
      const { log, topic } = await open();
      await expect(log.append({ topic: "no-such-topic", partition: 0 }, values(1))).rejects.toBeInstanceOf(UnknownTopicOrPartition);
      const partitions = (await log.topics()).get(topic)!;
      expect(partitions).toBeGreaterThanOrEqual(2);
      await expect(log.offsets({ topic, partition: partitions })).rejects.toBeInstanceOf(UnknownTopicOrPartition);
    });

    it("finds the first offset at or after a timestamp", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      await log.append(tp, [rec("a", null, { timestamp: 100 }), rec("b", null, { timestamp: 200 }), rec("c", null, { timestamp: 300 })]);
      expect(await log.offsetForTimestamp(tp, 150)).toBe(1);
      expect(await log.offsetForTimestamp(tp, 0)).toBe(0);
      expect(await log.offsetForTimestamp(tp, 1_000)).toBe(3);
    });

    it("commits and reads consumer group offsets per group", async () => {
      const { log, topic } = await open();
      const tp: TopicPartition = { topic, partition: 1 };
      await log.append(tp, values(5));
      expect(await log.committedOffset("g1", tp)).toBeNull();
      await log.commitOffset("g1", tp, { offset: 3, metadata: "" });
      await log.commitOffset("g2", tp, { offset: 5, metadata: "" });
      expect((await log.committedOffset("g1", tp))?.offset).toBe(3);
      expect((await log.committedOffset("g2", tp))?.offset).toBe(5);
      await log.commitOffset("g1", tp, { offset: 4, metadata: "" });
      expect((await log.committedOffset("g1", tp))?.offset).toBe(4);
    });

    it("fences a group's commits once a committer with an epoch owns them: older epochs and commits without one", async () => {
      const { log, topic } = await open();
      const tp: TopicPartition = { topic, partition: 0 };
      await log.append(tp, values(6));
      await log.commitOffset("app", tp, { offset: 2, metadata: "", epoch: 1_000_001 });
      await log.commitOffset("app", tp, { offset: 3, metadata: "", epoch: 2_000_000 });
      await expect(log.commitOffset("app", tp, { offset: 6, metadata: "" })).rejects.toBeInstanceOf(ProducerFenced);
      await expect(log.commitOffset("app", tp, { offset: 6, metadata: "", epoch: 1_000_001 })).rejects.toBeInstanceOf(ProducerFenced);
      expect((await log.committedOffset("app", tp))?.offset).toBe(3);
      // The owner itself (and a newer one) goes on.
      await log.commitOffset("app", tp, { offset: 4, metadata: "", epoch: 2_000_000 });
      await log.commitOffset("app", tp, { offset: 5, metadata: "", epoch: 3_000_000 });
      expect((await log.committedOffset("app", tp))?.offset).toBe(5);
    });

    describe("idempotent, fenced producer", () => {
      it("answers a retried batch with its original offsets and writes it once", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        const producer = { producerId: "p", epoch: 0, sequence: 0 };
        const first = await log.append(tp, values(3), producer);
        const retry = await log.append(tp, values(3), producer);
        expect(first).toEqual({ baseOffset: 0, count: 3, duplicate: false });
        expect(retry).toEqual({ baseOffset: 0, count: 3, duplicate: true });
        const next = await log.append(tp, values(1, "n"), { ...producer, sequence: 1 });
        expect(next).toEqual({ baseOffset: 3, count: 1, duplicate: false });
        // An older batch still within the remembered window is also answered, not rewritten.
        expect(await log.append(tp, values(3), producer)).toEqual({ baseOffset: 0, count: 3, duplicate: true });
        expect(await log.offsets(tp)).toEqual({ earliest: 0, latest: 4 });
      });

      it("rejects a gap in the sequence", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        await log.append(tp, values(1), { producerId: "p", epoch: 0, sequence: 0 });
        await expect(log.append(tp, values(1), { producerId: "p", epoch: 0, sequence: 2 })).rejects.toBeInstanceOf(OutOfOrderSequence);
        expect((await log.offsets(tp)).latest).toBe(1);
      });

      it("fences an older epoch once a newer one has appended", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        await log.append(tp, values(1), { producerId: "task-0_0", epoch: 1, sequence: 0 });
        await log.append(tp, values(1, "new"), { producerId: "task-0_0", epoch: 2, sequence: 0 });
        await expect(log.append(tp, values(1, "zombie"), { producerId: "task-0_0", epoch: 1, sequence: 1 })).rejects.toBeInstanceOf(ProducerFenced);
        const all = await log.fetch(tp, 0, { maxRecords: 10, maxBytes: 1 << 20 });
        expect(all.records.map((r) => r.value)).toEqual(["v0", "new0"]);
        // Producers are independent: another id is not fenced by this one's epoch.
        await expect(log.append(tp, values(1), { producerId: "other", epoch: 0, sequence: 0 })).resolves.toMatchObject({ baseOffset: 2 });
      });

      it("requires a new epoch to start at sequence 0", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        await expect(log.append(tp, values(1), { producerId: "p", epoch: 0, sequence: 5 })).rejects.toBeInstanceOf(OutOfOrderSequence);
        expect((await log.offsets(tp)).latest).toBe(0);
      });

      it("tells a reused sequence with other records from a retry", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        await log.append(tp, values(2), { producerId: "p", epoch: 0, sequence: 0 });
        await expect(log.append(tp, values(2, "other"), { producerId: "p", epoch: 0, sequence: 0 })).rejects.toBeInstanceOf(DuplicateSequenceMismatch);
        expect((await log.offsets(tp)).latest).toBe(2);
      });
    });

    it("says whether it deletes records, and refuses to when it does not", async () => {
      const { log, topic } = await open();
      const tp = { topic, partition: 0 };
      expect(log.capabilities.deletesRecords).toBe(options.retention);
      await log.append(tp, values(2));
      if (options.retention) expect(await log.deleteRecordsBefore(tp, 1)).toEqual({ earliest: 1, latest: 2 });
      else await expect(log.deleteRecordsBefore(tp, 1)).rejects.toBeInstanceOf(InvalidRecord);
      expect((await log.offsets(tp)).earliest).toBe(options.retention ? 1 : 0);
    });

    describe.skipIf(!options.retention)("retention", () => {
      it("drops records below an offset; fetching below the earliest is OffsetOutOfRange", async () => {
        const { log, topic } = await open();
        const tp = { topic, partition: 0 };
        await log.append(tp, values(10));
        expect(await log.deleteRecordsBefore(tp, 6)).toEqual({ earliest: 6, latest: 10 });
        await expect(log.fetch(tp, 5, { maxRecords: 10, maxBytes: 1 << 20 })).rejects.toBeInstanceOf(OffsetOutOfRange);
        const kept = await log.fetch(tp, 6, { maxRecords: 10, maxBytes: 1 << 20 });
        expect(kept.records.map((r) => r.offset)).toEqual([6, 7, 8, 9]);
        // Appends continue from the end; deleting below the earliest again changes nothing.
        expect((await log.append(tp, values(1))).baseOffset).toBe(10);
        expect(await log.deleteRecordsBefore(tp, 3)).toEqual({ earliest: 6, latest: 11 });
        await expect(log.deleteRecordsBefore(tp, 12)).rejects.toBeInstanceOf(OffsetOutOfRange);
        expect(await log.offsetForTimestamp(tp, 0)).toBe(6);
      });
    });
  });
}
