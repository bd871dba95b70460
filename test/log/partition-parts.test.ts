/**
 * The parts of a log partition (src/log/partition/), each alone on a scratch Durable Object's real
 * SQLite storage: `LocalLog` (append, fetch, the log start, and the range a failed transaction
 * undoes), `ProducerStateManager` (retries, reused sequences, fencing, expiry), `GroupOffsets`
 * (commits, fencing, readers' lag), `TopicConfigStore`, `LogRetention` with its checkpoint, and
 * `LogCleaner` with its index (`OffsetMap`).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { checkedBatch } from "../../src/log/append-batch";
import { DuplicateSequenceMismatch, OffsetOutOfRange, OutOfOrderSequence, ProducerFenced, UnknownTopicOrPartition } from "../../src/log/errors";
import { CleanerCheckpoint } from "../../src/log/partition/cleaner-checkpoint";
import { FreshRows } from "../../src/log/partition/fresh-rows";
import { GroupOffsets } from "../../src/log/partition/group-offsets";
import { LocalLog } from "../../src/log/partition/local-log";
import { LogCleaner } from "../../src/log/partition/log-cleaner";
import { LogRetention } from "../../src/log/partition/log-retention";
import { partitionMigrations } from "../../src/log/partition/migrations";
import { MEMORY_INDEX_RECORDS, OffsetMap } from "../../src/log/partition/offset-map";
import { PRODUCER_EXPIRY_MS, ProducerStateManager } from "../../src/log/partition/producer-state-manager";
import { TopicConfigStore } from "../../src/log/partition/topic-config-store";
import { PartitionTransactions } from "../../src/log/partition/transactions";
import type { LatestRecord } from "../../src/log/compaction";
import { decodeFetch, type Entry, toEntry } from "../../src/log/record-batch";
import { checkBatch, recordBytes } from "../../src/log/records";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import { topicConfig } from "../../src/log/topic-config";
import { REMEMBERED_BATCHES, type AppendResult, type ProducerId, type ProducerRecord } from "../../src/log/types";
import { migrate } from "../../src/storage/migrations";

let scratch = 0;
const tp = { topic: "parts-test", partition: 0 };
const NOW = 1_000_000;
const everything = { maxRecords: 10_000, maxBytes: 1 << 20 };

/** The parts on a fresh object's storage, wired as PartitionStore wires them; `forgotten` records what the log start told the index. */
function parts(storage: DurableObjectStorage) {
  const tx = new PartitionTransactions(storage);
  storage.transactionSync(() => migrate(tx.db, partitionMigrations));
  const index = new OffsetMap(tx);
  const startsTold: number[] = [];
  const checkpoint = new CleanerCheckpoint(tx);
  const producers: ProducerStateManager = new ProducerStateManager(tx, (from, to) => log.storedEntries(from, to));
  const log = new LocalLog(
    tx,
    (offset) => {
      startsTold.push(offset);
      index.forgetBelow(offset);
    },
    (offset, logEnd) => producers.beforeRemovingBelow(offset, logEnd),
  );
  return {
    tx,
    log,
    index,
    startsTold,
    checkpoint,
    producers,
    groups: new GroupOffsets(tx),
    configs: new TopicConfigStore(tx),
    retention: new LogRetention(tx, log, checkpoint),
    cleaner: new LogCleaner(tx, checkpoint, index, new FreshRows(), (upTo, logEnd) => producers.coverBelow(upTo, logEnd)),
  };
}
type Parts = ReturnType<typeof parts>;

function withParts<T>(fn: (p: Parts, storage: DurableObjectStorage) => T | Promise<T>): Promise<T> {
  return runInDurableObject(env.LOG_PARTITION.getByName(`parts-scratch-${++scratch}`), (_object, state) => fn(parts(state.storage), state.storage));
}

const put = (key: string, value: string, timestamp?: number): ProducerRecord => ({ key, value, ...(timestamp === undefined ? {} : { timestamp }) });
const tombstone = (key: string): ProducerRecord => ({ key, value: "", headers: [{ key: TOMBSTONE_HEADER, value: "1" }] });

function batchOf(records: readonly ProducerRecord[], now = NOW) {
  const sizes = Uint32Array.from(checkBatch(records, now), (r) => r.bytes);
  return checkedBatch({ entries: records.map(toEntry), sizes }, undefined);
}

/** An append as PartitionStore makes one: the producer's rules, the rows, the producer's batch, one transaction. */
function append(p: Parts, records: readonly ProducerRecord[], producer?: ProducerId, now = NOW): AppendResult {
  const batch = batchOf(records, now);
  return p.tx.run(() => {
    const range = p.log.range(tp);
    const retry = producer && p.producers.admit(producer, batch, range.logStart, now);
    if (retry) return retry;
    const baseOffset = range.logEnd;
    const rows = p.log.append(range, batch, now, producer);
    p.producers.appended(producer, baseOffset, batch.count, rows.length, now, range.logEnd);
    return { baseOffset, count: batch.count, duplicate: false };
  });
}

const count = (storage: DurableObjectStorage, table: string) => storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
const values = (p: Parts, from = p.log.offsets(tp).earliest) => decodeFetch(p.log.fetchEncoded(tp, from, everything)).records.map((r) => r.value);

describe("LocalLog", () => {
  it("stores a batch as one row at the end, serves it as stored, and holds one partition only", () =>
    withParts((p, storage) => {
      expect(append(p, [put("a", "1"), put("b", "2"), put("c", "3")])).toEqual({ baseOffset: 0, count: 3, duplicate: false });
      expect(append(p, [put("d", "4")]).baseOffset).toBe(3);
      expect(count(storage, "record_batches")).toBe(2);
      expect(p.log.offsets(tp)).toEqual({ earliest: 0, latest: 4 });
      const whole = p.log.fetchEncoded(tp, 0, { maxRecords: 3, maxBytes: 1 << 20 });
      expect(whole.batches).toHaveLength(1);
      expect(whole.batches[0]!.records).toBe(storage.sql.exec<{ records: string }>("SELECT records FROM record_batches WHERE base_offset = 0").one().records);
      expect(whole.nextOffset).toBe(3);
      const middle = decodeFetch(p.log.fetchEncoded(tp, 1, { maxRecords: 1, maxBytes: 1 << 20 }));
      expect(middle.records.map((r) => [r.offset, r.value])).toEqual([[1, "2"]]);
      expect(middle.nextOffset).toBe(2);
      expect(() => p.log.fetchEncoded(tp, 5, everything)).toThrow(OffsetOutOfRange);
      expect(() => p.log.range({ topic: "parts-test", partition: 1 })).toThrow(UnknownTopicOrPartition);
      expect(p.log.boundPartition()).toEqual(tp);
    }));

  it("moves the log start over whole rows only, and tells the index where it went", () =>
    withParts((p, storage) => {
      for (let i = 0; i < 3; i++) append(p, [put("k", `${2 * i}`), put("k", `${2 * i + 1}`)]);
      const range = p.log.range(tp);
      expect(p.tx.run(() => p.log.advanceStart(range, 3))).toBe(3);
      // The row 2–3 straddles the start: it stays, and offset 2 is never served.
      expect(count(storage, "record_batches")).toBe(2);
      expect(p.startsTold).toEqual([3]);
      expect(values(p)).toEqual(["3", "4", "5"]);
      expect(p.log.kept(3)).toEqual({ records: 3, bytes: 6 });
      expect(p.tx.run(() => p.log.advanceStart(range, 2))).toBe(0);
      expect(p.startsTold).toEqual([3]);
      expect(p.log.offsets(tp)).toEqual({ earliest: 3, latest: 6 });
    }));

  it("finds the first offset at or after a timestamp", () =>
    withParts((p) => {
      append(p, [put("a", "1", 100), put("b", "2", 300)]);
      append(p, [put("c", "3", 200)]);
      expect(p.log.offsetForTimestamp(tp, 150)).toBe(1);
      expect(p.log.offsetForTimestamp(tp, 50)).toBe(0);
      expect(p.log.offsetForTimestamp(tp, 301)).toBe(3);
    }));

  it("forgets its cached range when a transaction fails, so the undone append is not believed", () =>
    withParts((p) => {
      append(p, [put("a", "1")]);
      expect(() =>
        p.tx.run(() => {
          p.log.append(p.log.range(tp), batchOf([put("b", "2")]), NOW);
          throw new Error("crash before commit");
        }),
      ).toThrow("crash before commit");
      expect(p.log.offsets(tp)).toEqual({ earliest: 0, latest: 1 });
      expect(append(p, [put("c", "3")]).baseOffset).toBe(1);
      expect(values(p)).toEqual(["1", "3"]);
    }));
});

describe("ProducerStateManager", () => {
  const producer = (epoch: number, sequence: number) => ({ producerId: "p1", epoch, sequence });

  it("answers a retried batch with its first result, and remembers only the last batches", () =>
    withParts((p, storage) => {
      for (let s = 0; s < REMEMBERED_BATCHES + 3; s++) append(p, [put("k", `v${s}`)], producer(0, s));
      expect(append(p, [put("k", `v${REMEMBERED_BATCHES + 2}`)], producer(0, REMEMBERED_BATCHES + 2))).toEqual({
        baseOffset: REMEMBERED_BATCHES + 2,
        count: 1,
        duplicate: true,
      });
      expect(p.log.offsets(tp).latest).toBe(REMEMBERED_BATCHES + 3);
      expect(p.producers.entry("p1")!.batches.map((b) => b.sequence)).toEqual([3, 4, 5, 6, 7]);
      expect(append(p, [put("k", "v3")], producer(0, 3))).toEqual({ baseOffset: 3, count: 1, duplicate: true });
      expect(() => append(p, [put("k", "v2")], producer(0, 2))).toThrow(OutOfOrderSequence);
      expect(() => append(p, [put("k", "v0")], producer(0, 0))).toThrow(OutOfOrderSequence);
      // Nothing but the rows was written for them.
      expect(count(storage, "producers")).toBe(0);
    }));

  it("refuses a sequence reused for other records, and a gap", () =>
    withParts((p) => {
      append(p, [put("k", "first")], producer(0, 0));
      expect(() => append(p, [put("k", "other")], producer(0, 0))).toThrow(DuplicateSequenceMismatch);
      expect(() => append(p, [put("k", "first"), put("k", "more")], producer(0, 0))).toThrow(DuplicateSequenceMismatch);
      expect(() => append(p, [put("k", "later")], producer(0, 2))).toThrow(OutOfOrderSequence);
      expect(values(p)).toEqual(["first"]);
    }));

  it("fences an older epoch; a newer one starts its sequences afresh", () =>
    withParts((p) => {
      append(p, [put("k", "a")], producer(1, 0));
      append(p, [put("k", "b")], producer(1, 1));
      expect(append(p, [put("k", "c")], producer(2, 0)).duplicate).toBe(false);
      expect(p.producers.entry("p1")).toMatchObject({ epoch: 2, batches: [{ sequence: 0, base: 2, count: 1 }] });
      expect(() => append(p, [put("k", "zombie")], producer(1, 2))).toThrow(ProducerFenced);
      expect(() => append(p, [put("k", "d")], producer(3, 1))).toThrow(OutOfOrderSequence);
      expect(values(p)).toEqual(["a", "b", "c"]);
    }));

  it("forgets producers not heard from for PRODUCER_EXPIRY_MS", () =>
    withParts((p, storage) => {
      append(p, [put("k", "old")], producer(5, 0), NOW);
      append(p, [put("k", "other")], { producerId: "p2", epoch: 0, sequence: 0 }, NOW + PRODUCER_EXPIRY_MS);
      p.tx.run(() => p.producers.maybePrune(NOW + PRODUCER_EXPIRY_MS + 1, p.log.range(tp).logEnd));
      expect(
        storage.sql
          .exec<{ producer_id: string }>("SELECT producer_id FROM producers")
          .toArray()
          .map((r) => r.producer_id),
      ).toEqual(["p2"]);
      expect(JSON.parse(storage.sql.exec<{ batches: string }>("SELECT batches FROM producers").one().batches)).toEqual([[0, 1, 1]]);
      expect(p.producers.entry("p1")).toBeUndefined();
      // Forgotten, so an older epoch is a new producer again.
      expect(append(p, [put("k", "new")], producer(0, 0)).duplicate).toBe(false);
    }));
});

describe("GroupOffsets", () => {
  it("keeps a group's commit, never past the end, fenced by the epoch that owns it", () =>
    withParts((p) => {
      append(p, [put("k", "1"), put("k", "2")]);
      expect(p.groups.committed("g")).toBeNull();
      p.tx.run(() => p.groups.commit("g", { offset: 1, metadata: "m" }, 2, NOW));
      expect(p.groups.committed("g")).toEqual({ offset: 1, metadata: "m" });
      expect(() => p.tx.run(() => p.groups.commit("g", { offset: 3, metadata: "" }, 2, NOW))).toThrow(OffsetOutOfRange);
      p.tx.run(() => p.groups.commit("g", { offset: 2, metadata: "", epoch: 4 }, 2, NOW));
      expect(() => p.tx.run(() => p.groups.commit("g", { offset: 0, metadata: "", epoch: 3 }, 2, NOW))).toThrow(ProducerFenced);
      expect(() => p.tx.run(() => p.groups.commit("g", { offset: 0, metadata: "" }, 2, NOW))).toThrow(ProducerFenced);
      expect(p.groups.committed("g")).toEqual({ offset: 2, metadata: "", epoch: 4 });
    }));

  it("tells whether the task readers (committers with an epoch) are behind the end", () =>
    withParts((p) => {
      p.tx.run(() => p.groups.commit("plain", { offset: 0, metadata: "" }, 5, NOW));
      expect(p.groups.readers(5)).toBe("unknown");
      p.tx.run(() => p.groups.commit("task", { offset: 3, metadata: "", epoch: 0 }, 5, NOW));
      expect(p.groups.readers(5)).toBe("behind");
      expect(p.groups.readers(3)).toBe("caught-up");
    }));
});

describe("TopicConfigStore", () => {
  it("keeps the topic's configuration, writing it only when it changed", () =>
    withParts((p, storage) => {
      expect(p.configs.current()).toBeNull();
      let binds = 0;
      const bind = () => {
        binds++;
        return p.log.range(tp);
      };
      const config = topicConfig("changelog");
      p.configs.configure(config, bind);
      p.configs.configure({ ...config }, bind);
      expect(binds).toBe(1);
      p.configs.configure(topicConfig("user"), bind);
      expect(binds).toBe(2);
      expect(parts(storage).configs.current()).toEqual(topicConfig("user"));
    }));
});

describe("LogRetention", () => {
  it("drops the rows past retention.ms and records when it ran", () =>
    withParts((p) => {
      append(p, [put("a", "old", NOW - 10_000)], undefined, NOW - 10_000);
      append(p, [put("b", "young", NOW)], undefined, NOW);
      const config = topicConfig("user", { "retention.ms": 5_000 });
      expect(p.tx.run(() => p.retention.apply(p.log.range(tp), config, NOW))).toBe(1);
      expect(values(p)).toEqual(["young"]);
      expect(p.checkpoint.read(0).lastRetention).toBe(NOW);
    }));

  it("writes nothing when a check deletes nothing: when it ran is kept in memory, and stored with the next deletion", () =>
    withParts((p, storage) => {
      append(p, [put("a", "old", NOW)], undefined, NOW);
      const config = topicConfig("user", { "retention.ms": 5_000 });
      const stored = () => storage.sql.exec<{ last_retention: number }>("SELECT last_retention FROM compaction").toArray()[0]?.last_retention;
      expect(p.tx.run(() => p.retention.apply(p.log.range(tp), config, NOW + 1_000))).toBe(0);
      expect(p.checkpoint.read(0).lastRetention).toBe(NOW + 1_000);
      expect(stored()).toBeUndefined();
      // After a restart the check comes sooner; nothing else changed.
      const fresh = parts(storage);
      expect(fresh.checkpoint.read(0).lastRetention).toBe(0);
      expect(fresh.tx.run(() => fresh.retention.apply(fresh.log.range(tp), config, NOW + 10_000))).toBe(1);
      expect(stored()).toBe(NOW + 10_000);
    }));

  it("drops the oldest rows beyond retention.bytes, but a compacted topic keeps its newest row", () =>
    withParts((p) => {
      for (let i = 0; i < 4; i++) append(p, [put("k", "x".repeat(99))]);
      expect(p.tx.run(() => p.retention.apply(p.log.range(tp), topicConfig("user", { "retention.bytes": 250 }), NOW))).toBe(2);
      expect(p.log.offsets(tp).earliest).toBe(2);
      const both = topicConfig("user", { "cleanup.policy": "compact,delete", "retention.ms": 0, "retention.bytes": 0 });
      p.tx.run(() => p.retention.apply(p.log.range(tp), both, NOW + 60_000));
      expect(p.log.offsets(tp)).toEqual({ earliest: 3, latest: 4 });
    }));
});

describe("LogCleaner", () => {
  const config = topicConfig("changelog");
  const latestKeys = (storage: DurableObjectStorage) =>
    Object.fromEntries(
      storage.sql
        .exec<{ key: string; offset: number }>("SELECT key, offset FROM latest_keys ORDER BY key")
        .toArray()
        .map((r) => [r.key, r.offset]),
    );
  /** What the index (in memory or in the table) holds for `keys`: key → latest offset. */
  const indexed = (p: Parts, keys: readonly string[]) => {
    const known = new Map<string, LatestRecord | null>();
    p.index.lookUp(
      keys.map((key) => [key, ""] as unknown as Entry),
      known,
    );
    return Object.fromEntries([...known].flatMap(([key, latest]) => (latest ? [[key, latest.offset]] : [])));
  };

  it("indexes each key's latest offset, then thins the rows below the index to them", () =>
    withParts((p, storage) => {
      for (let round = 0; round < 4; round++) append(p, [put("a", `a${round}`), put("b", `b${round}`)]);
      append(p, [put("c", "newest")]);
      const result = p.cleaner.compact(p.log.range(tp), config, NOW, { indexRecords: 1_000, sweepRows: 100 });
      expect(result).toEqual({ indexed: 9, compacted: 6, more: false });
      // A small section's index is kept in memory: no row written for it.
      expect(p.index.inMemory).toBe(true);
      expect(indexed(p, ["a", "b", "c"])).toEqual({ a: 6, b: 7, c: 8 });
      expect(latestKeys(storage)).toEqual({});
      expect(values(p)).toEqual(["a3", "b3", "newest"]);
      expect(p.log.offsets(tp)).toEqual({ earliest: 0, latest: 9 });
      expect(p.checkpoint.read(0)).toMatchObject({ indexedTo: 9, sweepCursor: null, sweepTo: 9, cleanRecords: 3 });
    }));

  it("serves an uncut fetch the rows as stored, naming the stretch taken and its sizes: the records a cut fetch serves, dense or thinned", () =>
    withParts((p, storage) => {
      const headers = [{ key: "h", value: "ü" }];
      for (let round = 0; round < 3; round++)
        append(p, [put("a", `a${round}`), { key: "b", value: `b${round}-é`, headers }, put(`c${round}`, "c"), put("d", `d${round}`, 5 + round)]);
      const stored = new Set(
        storage.sql
          .exec<{ records: string }>("SELECT records FROM record_batches")
          .toArray()
          .map((r) => r.records),
      );
      const same = () => {
        const { latest } = p.log.offsets(tp);
        for (let from = p.log.offsets(tp).earliest; from < latest; from++)
          for (let maxRecords = 1; maxRecords <= 12; maxRecords++)
            for (const maxBytes of [1, 9, 20, 1 << 20]) {
              const bounds = { maxRecords, maxBytes };
              const cut = p.log.fetchEncoded(tp, from, bounds);
              const uncut = p.log.fetchEncoded(tp, from, { ...bounds, uncut: true });
              expect(decodeFetch(uncut), `from ${from}, ${maxRecords} records, ${maxBytes} bytes`).toEqual(decodeFetch(cut));
              const records = decodeFetch(uncut).records;
              // Each row as stored, never encoded again; the sizes as the log measured them on append.
              for (const batch of uncut.batches) expect(stored.has(batch.records)).toBe(true);
              expect(uncut.batches.flatMap((b) => [...b.sizes!])).toEqual(records.map((r) => recordBytes(r.key, r.value, r.headers)));
            }
      };
      same();
      p.cleaner.compact(p.log.range(tp), config, NOW, { indexRecords: 1_000, sweepRows: 100 });
      stored.clear();
      for (const r of storage.sql.exec<{ records: string }>("SELECT records FROM record_batches").toArray()) stored.add(r.records);
      expect(values(p)).toEqual(["c", "c", "a2", "b2-é", "c", "d2"]);
      same();
    }));

  it("sweeps a call's rows in one transaction: the checkpoint is written once per phase, not per row", () =>
    withParts((p) => {
      for (let round = 0; round < 6; round++) append(p, [put("a", `a${round}`), put("b", `b${round}`)]);
      const writes = vi.spyOn(p.checkpoint, "write");
      expect(p.cleaner.compact(p.log.range(tp), config, NOW, { indexRecords: 1_000, sweepRows: 100 })).toMatchObject({ compacted: 10, more: false });
      expect(values(p)).toEqual(["a5", "b5"]);
      // The index phase's and the sweep's (six rows swept, and the sweep found done).
      expect(writes).toHaveBeenCalledTimes(2);
    }));

  it("works within its budget and goes on from the checkpoint, also after a restart", () =>
    withParts((p, storage) => {
      for (let round = 0; round < 10; round++) append(p, [put("a", `a${round}`), put("b", `b${round}`)]);
      const budget = { indexRecords: 4, sweepRows: 2 };
      const first = p.cleaner.compact(p.log.range(tp), config, NOW, budget);
      expect(first).toMatchObject({ indexed: 4, compacted: 0, more: true });
      expect(p.checkpoint.read(0)).toMatchObject({ indexedTo: 4, sweepCursor: null });
      let calls = 1;
      for (let more = true; more; calls++) {
        const fresh = parts(storage);
        more = fresh.cleaner.compact(fresh.log.range(tp), config, NOW, budget).more;
        expect(calls).toBeLessThan(50);
      }
      expect(values(parts(storage))).toEqual(["a9", "b9"]);
      // Each start read the index again from the section: none of it was written.
      expect(latestKeys(storage)).toEqual({});
      const again = parts(storage);
      again.index.load(0, again.checkpoint.read(0).indexedTo);
      expect(indexed(again, ["a", "b"])).toEqual({ a: 18, b: 19 });
    }));

  it("writes the index to latest_keys once the section passes MEMORY_INDEX_RECORDS, and keeps it there after a start", () =>
    withParts((p, storage) => {
      const perBatch = 10_000;
      const batches = Math.ceil(MEMORY_INDEX_RECORDS / perBatch);
      for (let b = 0; b < batches; b++)
        append(
          p,
          Array.from({ length: perBatch }, (_, i) => put(`k${i}`, `${b}`)),
        );
      append(p, [put("last", "x")]);
      const all = { indexRecords: MEMORY_INDEX_RECORDS * 2, sweepRows: 1 };
      // The first call indexes all (the section is past the bound), sweeping nothing yet.
      p.cleaner.compact(p.log.range(tp), config, NOW, { ...all, sweepRows: 0 });
      expect(p.index.inMemory).toBe(false);
      expect(count(storage, "latest_keys")).toBe(perBatch + 1);
      expect(latestKeys(storage).k7).toBe((batches - 1) * perBatch + 7);
      // After a start, the sweep goes on from the table; the keys' latest records stay.
      let calls = 0;
      for (let more = true; more; calls++) {
        const fresh = parts(storage);
        more = fresh.cleaner.compact(fresh.log.range(tp), config, NOW, all).more;
        // Then the section shrinks under the bound, and a start reads it again instead.
        if (calls === 0) expect(fresh.index.inMemory).toBe(false);
        expect(calls).toBeLessThan(2 * batches);
      }
      expect(storage.sql.exec<{ n: number }>("SELECT SUM(count) AS n FROM record_batches").one().n).toBe(perBatch + 1);
      expect(new Set(values(parts(storage)))).toEqual(new Set([`${batches - 1}`]));
      expect(values(parts(storage), batches * perBatch)).toEqual(["x"]);
    }));

  it("forgets what it kept in memory when a transaction fails, and reads it again", () =>
    withParts((p) => {
      for (let round = 0; round < 3; round++) append(p, [put("a", `a${round}`), put("b", `b${round}`)]);
      p.cleaner.compact(p.log.range(tp), config, NOW, { indexRecords: 1_000, sweepRows: 100 });
      expect(p.index.inMemory).toBe(true);
      expect(() =>
        p.tx.run(() => {
          p.index.forget("a");
          throw new Error("crash");
        }),
      ).toThrow("crash");
      expect(p.index.inMemory).toBe(false);
      p.index.load(0, p.checkpoint.read(0).indexedTo);
      expect(indexed(p, ["a", "b"])).toEqual({ a: 4, b: 5 });
    }));

  it("keeps a tombstone for delete.retention.ms, then drops it and forgets its key", () =>
    withParts((p, storage) => {
      append(p, [put("a", "1"), put("b", "1")]);
      append(p, [tombstone("a")]);
      append(p, [put("b", "2")]);
      const all = { indexRecords: 1_000, sweepRows: 100 };
      p.cleaner.compact(p.log.range(tp), config, NOW, all);
      expect(values(p)).toEqual(["", "2"]);
      const due = p.checkpoint.read(0).tombstonesDue;
      expect(due).toBe(NOW + config["delete.retention.ms"] + 1);
      p.cleaner.compact(p.log.range(tp), config, due!, all);
      expect(values(p)).toEqual(["2"]);
      expect(indexed(p, ["a", "b"])).toEqual({ b: 3 });
      expect(latestKeys(storage)).toEqual({});
    }));
});
