/**
 * A partition's append writes one row, its producer's state kept in memory and rebuilt from the
 * snapshot (`producers`, below `partition_meta.producers_at`) and the rows after it
 * (src/log/partition/producer-state-manager.ts): rows written per append, retries after the
 * object's memory is dropped (a new `PartitionStore` on the same storage, or an aborted object),
 * producers whose rows retention or compaction removed, expiry, a failed transaction, and the
 * migration from the schema that kept `producer_batches`.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../../src/log/durable-log";
import { OutOfOrderSequence, ProducerFenced } from "../../src/log/errors";
import { PartitionStore, PRODUCER_EXPIRY_MS } from "../../src/log/partition-store";
import { SNAPSHOT_EVERY_ROWS } from "../../src/log/partition/producer-state-manager";
import { topicConfig } from "../../src/log/topic-config";
import { TopicCatalog } from "../../src/log/topics";
import type { ProducerRecord } from "../../src/log/types";
import { counted } from "../support/counted-storage";

let scratch = 0;
const T0 = 1_700_000_000_000;
const all = { maxRecords: 100_000, maxBytes: 64 << 20 };
const rec = (value: string, key = "k"): ProducerRecord => ({ key, value, timestamp: T0 });
const producer = (sequence: number, epoch = 0, producerId = "p") => ({ producerId, epoch, sequence });

function withStorage<T>(fn: (storage: DurableObjectStorage, tp: { topic: string; partition: number }) => T | Promise<T>): Promise<T> {
  const name = `snapshots-${++scratch}`;
  return runInDurableObject(env.LOG_PARTITION.getByName(`${name}/0`), (_object, state) => fn(state.storage, { topic: name, partition: 0 }));
}

const one = <T>(storage: DurableObjectStorage, query: string) => storage.sql.exec<T & Record<string, SqlStorageValue>>(query).one() as T;

describe("a partition's append", () => {
  it("writes one row, plain or from an idempotent producer, a new epoch or not", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      let now = T0;
      const store = new PartitionStore(c.storage, () => now);
      store.configure(tp, topicConfig("changelog"));
      store.append(tp, [rec("bind")]);
      c.written();
      now += 1;
      expect(store.append(tp, [rec("plain"), rec("plain", "k2")])).toMatchObject({ baseOffset: 1, duplicate: false });
      expect(c.written()).toEqual({ record_batches: 1 });
      expect(store.append(tp, [rec("a")], producer(0))).toMatchObject({ baseOffset: 3, duplicate: false });
      expect(c.written()).toEqual({ record_batches: 1 });
      for (let s = 1; s < 8; s++) {
        store.append(tp, [rec(`a${s}`)], producer(s));
        expect(c.written()).toEqual({ record_batches: 1 });
      }
      expect(store.append(tp, [rec("b")], producer(0, 1))).toMatchObject({ duplicate: false });
      expect(c.written()).toEqual({ record_batches: 1 });
      // A new object's first append (the state rebuilt, expired producers looked for) too.
      const restarted = new PartitionStore(c.storage, () => now);
      c.written();
      expect(restarted.append(tp, [rec("c")], producer(1, 1))).toMatchObject({ duplicate: false });
      expect(c.written()).toEqual({ record_batches: 1 });
      // A retry writes its producer's row only when it is later than the producer was last seen.
      expect(restarted.append(tp, [rec("c")], producer(1, 1))).toMatchObject({ duplicate: true });
      expect(c.written()).toEqual({});
      now += 1;
      expect(restarted.append(tp, [rec("c")], producer(1, 1))).toMatchObject({ duplicate: true });
      expect(c.written()).toEqual({ producers: 1 });
    }));

  it("takes the snapshot every SNAPSHOT_EVERY_ROWS rows: the producer's row and the snapshot's offset", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const store = new PartitionStore(c.storage, () => T0);
      for (let s = 0; s < SNAPSHOT_EVERY_ROWS - 1; s++) store.append(tp, [rec(`${s}`)], producer(s));
      expect(one<{ producers_at: number }>(raw, "SELECT producers_at FROM partition_meta").producers_at).toBe(0);
      c.written();
      store.append(tp, [rec("last")], producer(SNAPSHOT_EVERY_ROWS - 1));
      expect(c.written()).toEqual({ record_batches: 1, producers: 1, partition_meta: 1 });
      expect(one<{ producers_at: number }>(raw, "SELECT producers_at FROM partition_meta").producers_at).toBe(SNAPSHOT_EVERY_ROWS);
      const row = one<{ epoch: number; last_base: number; batches: string }>(raw, "SELECT epoch, last_base, batches FROM producers WHERE producer_id = 'p'");
      expect(row.last_base).toBe(SNAPSHOT_EVERY_ROWS - 1);
      expect(JSON.parse(row.batches)).toHaveLength(5);
      // The next append writes one row again; a restart replays only that row over the snapshot.
      store.append(tp, [rec("after")], producer(SNAPSHOT_EVERY_ROWS));
      expect(c.written()).toEqual({ record_batches: 1 });
      const restarted = new PartitionStore(c.storage, () => T0);
      expect(restarted.append(tp, [rec("last")], producer(SNAPSHOT_EVERY_ROWS - 1))).toEqual({
        baseOffset: SNAPSHOT_EVERY_ROWS - 1,
        count: 1,
        duplicate: true,
      });
      expect(restarted.append(tp, [rec("after")], producer(SNAPSHOT_EVERY_ROWS))).toMatchObject({ duplicate: true });
      expect(() => restarted.append(tp, [rec("old")], producer(SNAPSHOT_EVERY_ROWS - 5))).toThrow(OutOfOrderSequence);
    }));
});

describe("a partition's maintenance", () => {
  it("writes nothing when it finds nothing to do: a retention check, a compaction with nothing new", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      let now = T0;
      const store = new PartitionStore(c.storage, () => now);
      store.configure(tp, topicConfig("user", { "retention.ms": 60_000 }));
      store.append(tp, [rec("a")], producer(0));
      c.written();
      now += 1_000;
      expect(store.maintain(tp, now).deleted).toBe(0);
      expect(c.written()).toEqual({});
      now += 120_000;
      store.append(tp, [{ key: "k", value: "young", timestamp: now }]);
      c.written();
      expect(store.maintain(tp, now).deleted).toBe(1);
      expect(c.written()).toMatchObject({ compaction: 1, record_batches: 1 });
    }));

  it("writes compaction's progress only when it moved", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const store = new PartitionStore(c.storage, () => T0);
      store.configure(tp, topicConfig("changelog"));
      store.append(tp, [rec("a1", "a"), rec("b1", "b")], producer(0));
      store.append(tp, [rec("a2", "a")], producer(1));
      store.maintain(tp, T0);
      expect(c.written().compaction).toBeGreaterThan(0);
      expect(store.maintain(tp, T0)).toMatchObject({ indexed: 0, compacted: 0 });
      expect(c.written()).toEqual({});
    }));
});

describe("the producers' state after the object's memory is dropped", () => {
  it("answers retries, gaps and zombies as before", () =>
    withStorage((storage, tp) => {
      const store = new PartitionStore(storage, () => T0);
      store.append(tp, [rec("plain")]);
      for (let s = 0; s < 7; s++) store.append(tp, [rec(`v${s}`)], producer(s, 3));
      store.append(tp, [rec("q")], producer(0, 0, "q"));
      const restarted = new PartitionStore(storage, () => T0);
      expect(restarted.append(tp, [rec("v2")], producer(2, 3))).toEqual({ baseOffset: 3, count: 1, duplicate: true });
      expect(restarted.append(tp, [rec("v6")], producer(6, 3))).toEqual({ baseOffset: 7, count: 1, duplicate: true });
      expect(() => restarted.append(tp, [rec("v1")], producer(1, 3))).toThrow(OutOfOrderSequence);
      expect(() => restarted.append(tp, [rec("v2", "other")], producer(2, 3))).toThrow(/already used/);
      expect(() => restarted.append(tp, [rec("gap")], producer(8, 3))).toThrow(OutOfOrderSequence);
      expect(() => restarted.append(tp, [rec("zombie")], producer(7, 2))).toThrow(ProducerFenced);
      expect(restarted.append(tp, [rec("q")], producer(0, 0, "q"))).toMatchObject({ baseOffset: 8, duplicate: true });
      expect(restarted.append(tp, [rec("v7")], producer(7, 3))).toEqual({ baseOffset: 9, count: 1, duplicate: false });
      expect(restarted.offsets(tp)).toEqual({ earliest: 0, latest: 10 });
    }));

  it("answers a retry of a batch stored as several rows with its whole range", () =>
    withStorage((storage, tp) => {
      const big = (i: number) => rec("x".repeat(600_000) + i, `k${i}`);
      const store = new PartitionStore(storage, () => T0);
      store.append(tp, [rec("first")], producer(0));
      expect(store.append(tp, [big(1), big(2), big(3)], producer(1))).toEqual({ baseOffset: 1, count: 3, duplicate: false });
      expect(one<{ n: number }>(storage, "SELECT COUNT(*) AS n FROM record_batches").n).toBeGreaterThan(2);
      const restarted = new PartitionStore(storage, () => T0);
      expect(restarted.append(tp, [big(1), big(2), big(3)], producer(1))).toEqual({ baseOffset: 1, count: 3, duplicate: true });
      expect(restarted.append(tp, [rec("next")], producer(2))).toEqual({ baseOffset: 4, count: 1, duplicate: false });
    }));

  it("keeps producers whose rows deleteRecords removed, and the end when no row is left", () =>
    withStorage((storage, tp) => {
      const store = new PartitionStore(storage, () => T0);
      for (let s = 0; s < 3; s++) store.append(tp, [rec(`v${s}`)], producer(s));
      store.append(tp, [rec("plain")]);
      expect(store.deleteRecordsBefore(tp, 4)).toEqual({ earliest: 4, latest: 4 });
      expect(one<{ n: number }>(storage, "SELECT COUNT(*) AS n FROM record_batches").n).toBe(0);
      const restarted = new PartitionStore(storage, () => T0);
      expect(restarted.offsets(tp)).toEqual({ earliest: 4, latest: 4 });
      expect(restarted.append(tp, [rec("v2")], producer(2))).toEqual({ baseOffset: 2, count: 1, duplicate: true });
      expect(restarted.append(tp, [rec("v3")], producer(3))).toEqual({ baseOffset: 4, count: 1, duplicate: false });
    }));

  it("keeps producers whose rows retention removed", () =>
    withStorage((storage, tp) => {
      let now = T0;
      const store = new PartitionStore(storage, () => now);
      store.configure(tp, topicConfig("user", { "retention.ms": 1_000 }));
      store.append(tp, [rec("v0")], producer(0));
      store.append(tp, [rec("v1")], producer(1));
      now += 10_000;
      store.append(tp, [{ key: "k", value: "young", timestamp: now }]);
      expect(store.maintain(tp, now).deleted).toBe(2);
      const restarted = new PartitionStore(storage, () => now);
      expect(restarted.offsets(tp)).toEqual({ earliest: 2, latest: 3 });
      expect(restarted.append(tp, [rec("v1")], producer(1))).toEqual({ baseOffset: 1, count: 1, duplicate: true });
      expect(restarted.append(tp, [rec("v2")], producer(2))).toEqual({ baseOffset: 3, count: 1, duplicate: false });
    }));

  it("keeps producers whose rows compaction deleted", () =>
    withStorage((storage, tp) => {
      const store = new PartitionStore(storage, () => T0);
      store.configure(tp, topicConfig("changelog"));
      store.append(tp, [rec("a1", "a")], producer(0));
      store.append(tp, [rec("b1", "b")], producer(1));
      store.append(tp, [rec("a2", "a"), rec("b2", "b")], producer(2));
      store.append(tp, [rec("c", "c")]);
      expect(store.maintain(tp, T0).compacted).toBe(2);
      expect(one<{ n: number }>(storage, "SELECT COUNT(*) AS n FROM record_batches").n).toBe(2);
      const restarted = new PartitionStore(storage, () => T0);
      expect(restarted.append(tp, [rec("a1", "a")], producer(0))).toEqual({ baseOffset: 0, count: 1, duplicate: true });
      expect(restarted.append(tp, [rec("a2", "a"), rec("b2", "b")], producer(2))).toEqual({ baseOffset: 2, count: 2, duplicate: true });
      expect(restarted.append(tp, [rec("a3", "a")], producer(3))).toEqual({ baseOffset: 5, count: 1, duplicate: false });
    }));

  it("forgets expired producers for good, and counts a retry as the producer being seen", () =>
    withStorage((storage, tp) => {
      let now = T0;
      const store = () => new PartitionStore(storage, () => now);
      store().append(tp, [rec("p")], producer(0));
      store().append(tp, [rec("r")], producer(0, 0, "r"));
      now = T0 + PRODUCER_EXPIRY_MS - 10;
      store().append(tp, [rec("q")], producer(0, 0, "q"));
      expect(store().append(tp, [rec("r")], producer(0, 0, "r"))).toMatchObject({ duplicate: true });
      // A new object prunes at its first append: p expired; r, seen by its retry, did not.
      now = T0 + PRODUCER_EXPIRY_MS + 1;
      store().append(tp, [rec("q1")], producer(1, 0, "q"));
      expect(store().append(tp, [rec("r")], producer(0, 0, "r"))).toMatchObject({ baseOffset: 1, duplicate: true });
      expect(store().append(tp, [rec("p again")], producer(0))).toMatchObject({ baseOffset: 4, duplicate: false });
    }));

  it("is rebuilt from storage after a failed transaction, as if the append never was", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const store = new PartitionStore(c.storage, () => T0);
      store.append(tp, [rec("v0")], producer(0));
      c.failNextTransaction();
      expect(() => store.append(tp, [rec("v1")], producer(1))).toThrow("crash before commit");
      expect(store.append(tp, [rec("v1")], producer(1))).toEqual({ baseOffset: 1, count: 1, duplicate: false });
      expect(store.append(tp, [rec("v1")], producer(1))).toMatchObject({ duplicate: true });
      c.failNextTransaction();
      expect(() => store.deleteRecordsBefore(tp, 2)).toThrow("crash before commit");
      expect(store.append(tp, [rec("v0")], producer(0))).toMatchObject({ baseOffset: 0, duplicate: true });
      expect(store.fetch(tp, 0, all).records.map((r) => r.value)).toEqual(["v0", "v1"]);
    }));

  it("answers a retry after the object was aborted", async () => {
    const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ "snapshot-abort": 1 }));
    const tp = { topic: "snapshot-abort", partition: 0 };
    await log.append(tp, [rec("v0")], producer(0));
    await log.append(tp, [rec("v1")], producer(1));
    await log.deleteRecordsBefore(tp, 2);
    await log.append(tp, [rec("v2")], producer(2));
    await abortAllDurableObjects();
    expect(await log.append(tp, [rec("v1")], producer(1))).toEqual({ baseOffset: 1, count: 1, duplicate: true });
    expect(await log.append(tp, [rec("v2")], producer(2))).toEqual({ baseOffset: 2, count: 1, duplicate: true });
    expect(await log.append(tp, [rec("v3")], producer(3))).toEqual({ baseOffset: 3, count: 1, duplicate: false });
  });
});

describe("migration 6", () => {
  it("carries producers and their remembered batches into the snapshot, and the end into the last row", () =>
    withStorage((storage, tp) => {
      // Schema 5 as it was: a store bound, three records from producer p (epoch 2) and one plain.
      new PartitionStore(storage, () => T0);
      storage.sql.exec(`
        DROP TABLE producers;
        CREATE TABLE producers (producer_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, last_seen INTEGER NOT NULL);
        CREATE TABLE producer_batches (producer_id TEXT NOT NULL, sequence INTEGER NOT NULL, base_offset INTEGER NOT NULL,
          count INTEGER NOT NULL, PRIMARY KEY (producer_id, sequence));
        ALTER TABLE record_batches DROP COLUMN producer_id;
        ALTER TABLE record_batches DROP COLUMN producer_epoch;
        ALTER TABLE record_batches DROP COLUMN base_sequence;
        ALTER TABLE partition_meta DROP COLUMN producers_at;
        DROP TABLE remote_segments;
        DROP TABLE remote_deletions;
        UPDATE _schema SET version = 5;
      `);
      const entry = (value: string) => JSON.stringify([["k", value, T0]]);
      storage.sql.exec(`INSERT INTO partition_meta (only, topic, partition, log_start, log_end) VALUES (1, ?, 0, 0, 4)`, tp.topic);
      for (const [offset, value] of [
        [0, "s0"],
        [1, "s1"],
        [2, "s2"],
        [3, "plain"],
      ] as const) {
        storage.sql.exec(
          `INSERT INTO record_batches (base_offset, count, span, bytes, max_timestamp, append_time, sizes, records) VALUES (?, 1, 1, ?, ?, ?, ?, ?)`,
          offset,
          1 + value.length,
          T0,
          T0,
          new Uint32Array([1 + value.length]).buffer,
          entry(value),
        );
      }
      storage.sql.exec(`INSERT INTO producers VALUES ('p', 2, ${T0}), ('gone', 0, ${T0})`);
      storage.sql.exec(`INSERT INTO producer_batches VALUES ('p', 1, 1, 1), ('p', 2, 2, 1), ('p', 0, 0, 1)`);
      const store = new PartitionStore(storage, () => T0);
      expect(one<{ version: number }>(storage, "SELECT version FROM _schema").version).toBe(7);
      expect(store.offsets(tp)).toEqual({ earliest: 0, latest: 4 });
      expect(storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'producer_batches'").toArray()).toEqual([]);
      expect(one<{ producers_at: number }>(storage, "SELECT producers_at FROM partition_meta").producers_at).toBe(4);
      expect(store.append(tp, [rec("s1")], producer(1, 2))).toEqual({ baseOffset: 1, count: 1, duplicate: true });
      expect(() => store.append(tp, [rec("s1")], producer(1, 1))).toThrow(ProducerFenced);
      expect(() => store.append(tp, [rec("s4")], producer(4, 2))).toThrow(OutOfOrderSequence);
      expect(store.append(tp, [rec("gone")], producer(0, 0, "gone"))).toMatchObject({ duplicate: false });
      expect(store.append(tp, [rec("s3")], producer(3, 2))).toEqual({ baseOffset: 5, count: 1, duplicate: false });
      const restarted = new PartitionStore(storage, () => T0);
      expect(restarted.append(tp, [rec("s3")], producer(3, 2))).toMatchObject({ baseOffset: 5, duplicate: true });
      expect(restarted.append(tp, [rec("s0")], producer(0, 2))).toMatchObject({ baseOffset: 0, duplicate: true });
      expect(restarted.offsets(tp)).toEqual({ earliest: 0, latest: 6 });
    }));
});
