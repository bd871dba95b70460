/**
 * A partition's retention and compaction, on `PartitionStore` in a scratch Durable Object's real
 * SQLite storage with a controlled clock: compaction keeps each key's latest record (and a
 * tombstone for delete.retention.ms), never the newest row nor records younger than
 * min.compaction.lag.ms; offsets keep their meaning and fetches skip removed ones; a crash
 * between steps loses nothing; time and size retention drop the oldest rows; repartition topics
 * are purged below the committed offset; no stored row exceeds 1 MiB.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ALARM_MAINTENANCE_BUDGET, MAINTENANCE_BUDGET, PartitionStore, QUIET_COMPACTION_MS } from "../../src/log/partition-store";
import { MAX_ROW_BYTES, TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import { topicConfig, type TopicConfig } from "../../src/log/topic-config";
import type { LogRecord, ProducerRecord } from "../../src/log/types";

let scratch = 0;
const tp = { topic: "compaction-test", partition: 0 };
const DAY = 24 * 60 * 60 * 1000;

/** A store on a fresh object's storage, with a clock the test moves. */
async function withStore<T>(
  config: TopicConfig,
  fn: (store: PartitionStore, clock: { now: number }, storage: DurableObjectStorage) => T | Promise<T>,
): Promise<T> {
  return runInDurableObject(env.LOG_PARTITION.getByName(`compaction-scratch-${++scratch}`), (_object, state) => {
    const clock = { now: 1_000_000 };
    const store = new PartitionStore(state.storage, () => clock.now);
    store.offsets(tp);
    store.configure(tp, config);
    return fn(store, clock, state.storage);
  });
}

const put = (key: string, value: string, timestamp?: number): ProducerRecord => ({ key, value, ...(timestamp === undefined ? {} : { timestamp }) });
const tombstone = (key: string): ProducerRecord => ({ key, value: "", headers: [{ key: TOMBSTONE_HEADER, value: "1" }] });

function readAll(store: PartitionStore, from?: number): LogRecord[] {
  const out: LogRecord[] = [];
  let offset = from ?? store.offsets(tp).earliest;
  for (;;) {
    const page = store.fetch(tp, offset, { maxRecords: 7, maxBytes: 1 << 20 });
    out.push(...page.records);
    if (page.nextOffset === offset) break;
    offset = page.nextOffset;
    if (offset >= page.latest) break;
  }
  return out;
}

/** The latest value per key of a record list, tombstones removing. */
function latest(records: readonly LogRecord[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of records) {
    if (r.headers.some((h) => h.key === TOMBSTONE_HEADER)) out.delete(r.key!);
    else out.set(r.key!, r.value);
  }
  return out;
}

function maintainUntilDone(store: PartitionStore, now: number, budget = { indexRecords: 50, sweepRows: 3 }) {
  for (let i = 0; i < 1_000; i++) if (!store.maintain(tp, now, budget).more) return i + 1;
  throw new Error("maintenance never finished");
}

describe("compaction", () => {
  const compacted = topicConfig("changelog");

  it("keeps each key's latest record; offsets keep their meaning and fetches skip the rest", () =>
    withStore(compacted, (store, clock) => {
      for (let round = 0; round < 40; round++)
        store.append(
          tp,
          Array.from({ length: 30 }, (_, k) => put(`k${k}`, `v${round}`)),
        );
      store.append(tp, [put("k0", "last"), put("k1", "last")]);
      const before = readAll(store);
      expect(before).toHaveLength(1_202);
      const { earliest, latest: end } = store.offsets(tp);

      maintainUntilDone(store, clock.now);
      const after = readAll(store);
      expect(latest(after)).toEqual(latest(before));
      // Each key's latest record, at its original offset.
      expect(after.length).toBe(30);
      for (const r of after) expect(before.find((b) => b.offset === r.offset)).toEqual(r);
      expect(store.offsets(tp)).toEqual({ earliest, latest: end });
      // A fetch from an offset compaction removed starts at the next record kept.
      const page = store.fetch(tp, 5, { maxRecords: 3, maxBytes: 1 << 20 });
      expect(page.records[0]!.offset).toBeGreaterThan(5);
      expect(page.records.map((r) => r.offset)).toEqual(
        after
          .filter((r) => r.offset > 5)
          .slice(0, 3)
          .map((r) => r.offset),
      );
      expect(store.stats(tp)).toMatchObject({ records: 30 });
    }));

  it("keeps a tombstone for delete.retention.ms, then drops it and its key", () =>
    withStore(compacted, (store, clock) => {
      store.append(tp, [put("a", "1"), put("b", "1")]);
      store.append(tp, [tombstone("a")]);
      store.append(
        tp,
        Array.from({ length: 1_100 }, (_, i) => put(`other${i}`, "x")),
      );
      store.append(tp, [put("c", "newest row")]);
      maintainUntilDone(store, clock.now);
      expect(
        readAll(store)
          .filter((r) => r.key === "a")
          .map((r) => r.headers.length),
      ).toEqual([1]);
      clock.now += DAY + 1;
      maintainUntilDone(store, clock.now);
      expect(readAll(store).filter((r) => r.key === "a")).toEqual([]);
      expect(readAll(store).find((r) => r.key === "b")?.value).toBe("1");
    }));

  it("leaves records younger than min.compaction.lag.ms alone", () =>
    withStore(topicConfig("changelog", { "min.compaction.lag.ms": 60_000 }), (store, clock) => {
      for (let i = 0; i < 5; i++) store.append(tp, [put("k", `old${i}`, clock.now - 120_000)]);
      for (let i = 0; i < 5; i++) store.append(tp, [put("k", `young${i}`, clock.now)]);
      maintainUntilDone(store, clock.now);
      // The old records all went but the last old one, superseded only by young records not yet indexed.
      expect(readAll(store).map((r) => r.value)).toEqual(["old4", "young0", "young1", "young2", "young3", "young4"]);
    }));

  it("is crash-safe: a pass cut short after any step leaves the partition readable and complete, and the next goes on", () =>
    withStore(compacted, async (store, clock, storage) => {
      for (let round = 0; round < 20; round++)
        store.append(
          tp,
          Array.from({ length: 10 }, (_, k) => put(`k${k}`, `v${round}`)),
        );
      store.append(tp, [put("z", "newest")]);
      const expected = latest(readAll(store));
      // One small step at a time, each by a store built afresh on the same storage (a restarted object).
      for (let i = 0; i < 200; i++) {
        const fresh = new PartitionStore(storage, () => clock.now);
        expect(latest(readAll(fresh))).toEqual(expected);
        if (!fresh.maintain(tp, clock.now, { indexRecords: 7, sweepRows: 1 }).more) break;
      }
      expect(latest(readAll(store))).toEqual(expected);
      expect(readAll(new PartitionStore(storage, () => clock.now))).toHaveLength(11);
    }));

  it("never removes the partition's last record, even a tombstone past delete.retention.ms", () =>
    withStore(compacted, (store, clock) => {
      store.append(
        tp,
        Array.from({ length: 1_200 }, (_, i) => put(`k${i % 10}`, `v${i}`)),
      );
      store.append(tp, [tombstone("k0")]);
      clock.now += 2 * DAY;
      maintainUntilDone(store, clock.now);
      const kept = readAll(store);
      expect(kept.at(-1)).toMatchObject({ offset: 1_200, key: "k0" });
      expect(kept.filter((r) => r.key === "k0")).toHaveLength(1);
      expect(kept).toHaveLength(10);
    }));
});

describe("retention", () => {
  it("drops rows whose records and arrival are older than retention.ms, oldest first", () =>
    withStore(topicConfig("user", { "retention.ms": 60_000 }), (store, clock) => {
      store.append(tp, [put("a", "1", 0)]);
      clock.now += 30_000;
      store.append(tp, [put("b", "2", 0)]);
      // Just appended: its old timestamp alone does not make it go.
      expect(store.maintain(tp, clock.now).deleted).toBe(0);
      clock.now += 40_000;
      expect(store.maintain(tp, clock.now).deleted).toBe(1);
      expect(store.offsets(tp)).toEqual({ earliest: 1, latest: 2 });
      clock.now += 60_000;
      store.maintain(tp, clock.now);
      expect(store.offsets(tp)).toEqual({ earliest: 2, latest: 2 });
    }));

  it("is due when the oldest row's time is up, not on a period: a quiet partition whose rows are young arms nothing sooner", () =>
    withStore(topicConfig("user", { "retention.ms": DAY }), (store, clock) => {
      store.append(tp, [put("a", "1")]);
      // Never checked yet: the first check learns when the rows expire.
      expect(store.maintenanceDueAt(clock.now)).toBeLessThanOrEqual(clock.now);
      expect(store.maintain(tp, clock.now).nextAt).toBe(1_000_000 + DAY + 1);
      clock.now += 10 * 60_000;
      const appendedAt = clock.now;
      store.append(tp, [put("b", "2")]);
      // A later append expires later: still the first row's time.
      expect(store.maintenanceDueAt(clock.now)).toBe(1_000_000 + DAY + 1);
      // Not a millisecond sooner: the row is not older than retention.ms yet.
      expect(store.maintain(tp, 1_000_000 + DAY).deleted).toBe(0);
      clock.now = 1_000_000 + DAY + 1;
      const due = store.maintain(tp, clock.now);
      expect(due.deleted).toBe(1);
      expect(due.nextAt).toBe(appendedAt + DAY + 1);
      clock.now = appendedAt + DAY + 1;
      expect(store.maintain(tp, clock.now)).toMatchObject({ deleted: 1, nextAt: undefined });
    }));

  it("takes the full budget from the alarm once the partition is quiet, a fifth of it while appends come", () =>
    withStore(topicConfig("changelog"), (store, clock) => {
      store.append(tp, [put("a", "1")]);
      expect(store.alarmBudget(clock.now)).toEqual(ALARM_MAINTENANCE_BUDGET);
      clock.now += QUIET_COMPACTION_MS;
      expect(store.alarmBudget(clock.now)).toEqual(MAINTENANCE_BUDGET);
    }));

  it("keeps at most retention.bytes, dropping the oldest rows", () =>
    withStore(topicConfig("user", { "retention.bytes": 250, "retention.ms": -1 }), (store, clock) => {
      for (let i = 0; i < 10; i++) store.append(tp, [put(`k${i}`, "x".repeat(98))]);
      store.maintain(tp, clock.now);
      expect(store.stats(tp)).toEqual({ earliest: 8, latest: 10, records: 2, bytes: 200 });
    }));

  it("purges a repartition partition below the offset its reading task committed", () =>
    withStore(topicConfig("repartition"), (store) => {
      store.append(
        tp,
        Array.from({ length: 10 }, (_, i) => put(`k${i}`, "v")),
      );
      store.commitOffset("app", tp, { offset: 6, metadata: "", epoch: 1_000_000 });
      expect(store.offsets(tp)).toEqual({ earliest: 6, latest: 10 });
      // A commit without an epoch (not a task) purges nothing.
      store.commitOffset("other", tp, { offset: 9, metadata: "" });
      expect(store.offsets(tp).earliest).toBe(6);
    }));
});

describe("stored rows", () => {
  it("never exceed 1 MiB: a big append becomes several rows with contiguous offsets", () =>
    withStore(topicConfig("user"), (store, _clock, storage) => {
      const value = "v".repeat(200_000);
      const result = store.append(
        tp,
        Array.from({ length: 40 }, (_, i) => put(`k${i}`, value)),
      );
      expect(result).toMatchObject({ baseOffset: 0, count: 40 });
      const rows = storage.sql.exec<{ n: number; size: number }>("SELECT count AS n, length(records) + length(sizes) AS size FROM record_batches").toArray();
      expect(rows.length).toBeGreaterThan(5);
      for (const row of rows) expect(row.size).toBeLessThanOrEqual(MAX_ROW_BYTES);
      expect(readAll(store).map((r) => r.offset)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    }));
});
