/**
 * The embedded log stores one row per appended batch: what the contract cannot see from outside —
 * bounds across and inside batches, retention in the middle of a batch, retries compared with the
 * stored records, and the migration from the one-row-per-record schema.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../../src/log/durable-log";
import { DuplicateSequenceMismatch, InvalidRecord, OffsetOutOfRange } from "../../src/log/errors";
import { PartitionStore } from "../../src/log/partition-store";
import { parseEntries } from "../../src/log/record-batch";
import { utf8Length } from "../../src/log/records";
import { fitsInOneRow, MAX_ROW_BYTES } from "../../src/log/stored-batch";
import { TopicCatalog } from "../../src/log/topics";
import type { ProducerRecord } from "../../src/log/types";

const catalog = new TopicCatalog(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`rb${i}`, 2])));
let nextTopic = 0;
const open = () => {
  const log = new DurableLog(env.LOG_PARTITION, catalog);
  return { log, tp: { topic: `rb${nextTopic++}`, partition: 0 } };
};
const batch = (from: number, n: number, extra: Partial<ProducerRecord> = {}): ProducerRecord[] =>
  Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, value: `v${from + i}`, ...extra }));
const all = { maxRecords: 1_000, maxBytes: 1 << 20 };

describe("embedded log: record batches", () => {
  it("fetches across batch boundaries, starting and stopping inside batches", async () => {
    const { log, tp } = open();
    for (let b = 0; b < 5; b++) await log.append(tp, batch(b * 4, 4));
    const page = await log.fetch(tp, 2, { maxRecords: 7, maxBytes: 1 << 20 });
    expect(page.records.map((r) => r.offset)).toEqual([2, 3, 4, 5, 6, 7, 8]);
    expect(page.records.map((r) => r.value)).toEqual(["v2", "v3", "v4", "v5", "v6", "v7", "v8"]);
    expect(page.nextOffset).toBe(9);
    // Each record is 4 bytes ("kN" + "vN"): 18 bytes hold four, whichever batches they are in.
    expect((await log.fetch(tp, 3, { maxRecords: 100, maxBytes: 18 })).records.map((r) => r.offset)).toEqual([3, 4, 5, 6]);
    expect((await log.fetch(tp, 19, all)).records.map((r) => r.offset)).toEqual([19]);
    expect((await log.fetch(tp, 0, all)).records).toHaveLength(20);
  });

  it("keeps headers and per-record timestamps inside a batch", async () => {
    const { log, tp } = open();
    await log.append(tp, [
      {
        key: null,
        value: "a",
        headers: [
          { key: "h1", value: "x" },
          { key: "h2", value: "" },
        ],
        timestamp: 7,
      },
      { key: "b", value: "", timestamp: 5 },
    ]);
    expect((await log.fetch(tp, 0, all)).records).toEqual([
      {
        offset: 0,
        key: null,
        value: "a",
        headers: [
          { key: "h1", value: "x" },
          { key: "h2", value: "" },
        ],
        timestamp: 7,
      },
      { offset: 1, key: "b", value: "", headers: [], timestamp: 5 },
    ]);
  });

  it("rejects records JSON would change (an undefined key, a NaN timestamp) instead of storing them changed", async () => {
    const { log, tp } = open();
    const bad: unknown[] = [
      { key: undefined, value: "x" },
      { key: null, value: "x", timestamp: Number.NaN },
      { key: null, value: "x", headers: [{ key: "h" }] },
    ];
    for (const record of bad) await expect(log.append(tp, [record as ProducerRecord])).rejects.toBeInstanceOf(InvalidRecord);
    expect((await log.offsets(tp)).latest).toBe(0);
  });

  it("retention in the middle of a batch keeps the exact start offset", async () => {
    const { log, tp } = open();
    await log.append(tp, batch(0, 5, { timestamp: 10 }));
    await log.append(tp, batch(5, 5, { timestamp: 20 }));
    expect(await log.deleteRecordsBefore(tp, 7)).toEqual({ earliest: 7, latest: 10 });
    await expect(log.fetch(tp, 6, all)).rejects.toBeInstanceOf(OffsetOutOfRange);
    expect((await log.fetch(tp, 7, all)).records.map((r) => r.offset)).toEqual([7, 8, 9]);
    // Records below the start are not found by timestamp either, though their batch is kept.
    expect(await log.offsetForTimestamp(tp, 0)).toBe(7);
    expect(await log.offsetForTimestamp(tp, 15)).toBe(7);
    expect(await log.offsetForTimestamp(tp, 21)).toBe(10);
    expect(await log.deleteRecordsBefore(tp, 10)).toEqual({ earliest: 10, latest: 10 });
    expect((await log.fetch(tp, 10, all)).records).toEqual([]);
    expect((await log.append(tp, batch(10, 1))).baseOffset).toBe(10);
    expect((await log.fetch(tp, 10, all)).records.map((r) => r.value)).toEqual(["v10"]);
  });

  it("finds a timestamp inside a later batch, skipping batches with older records", async () => {
    const { log, tp } = open();
    await log.append(
      tp,
      [1, 2, 3].map((t) => ({ key: null, value: `${t}`, timestamp: t * 100 })),
    );
    await log.append(
      tp,
      [9, 4, 12].map((t) => ({ key: null, value: `${t}`, timestamp: t * 100 })),
    );
    expect(await log.offsetForTimestamp(tp, 350)).toBe(3);
    expect(await log.offsetForTimestamp(tp, 1000)).toBe(5);
    expect(await log.offsetForTimestamp(tp, 1300)).toBe(6);
  });

  it("tells a retry from a reused sequence by the stored records, also for each field", async () => {
    const { log, tp } = open();
    const producer = { producerId: "p", epoch: 0, sequence: 0 };
    const first: ProducerRecord[] = [
      { key: "a", value: "1", headers: [{ key: "h", value: "x" }] },
      { key: null, value: "2", timestamp: 50 },
    ];
    await log.append(tp, first, producer);
    // Without a timestamp the first attempt was stamped by the log: a retry without one matches it.
    expect(await log.append(tp, first, producer)).toEqual({ baseOffset: 0, count: 2, duplicate: true });
    const stamped = (await log.fetch(tp, 0, all)).records[0]!.timestamp;
    const variants: ProducerRecord[][] = [
      [{ ...first[0]!, key: "b" }, first[1]!],
      [{ ...first[0]!, value: "9" }, first[1]!],
      [{ ...first[0]!, headers: [{ key: "h", value: "y" }] }, first[1]!],
      [{ ...first[0]!, headers: [] }, first[1]!],
      [first[0]!, { ...first[1]!, timestamp: 51 }],
      [first[0]!, { key: null, value: "2" }],
      // A timestamp where the first attempt had none is another record, even the one the log stamped.
      [{ ...first[0]!, timestamp: stamped }, first[1]!],
      [first[0]!, { ...first[1]!, key: "" }],
      [first[0]!],
    ];
    for (const records of variants) await expect(log.append(tp, records, producer)).rejects.toBeInstanceOf(DuplicateSequenceMismatch);
    expect((await log.offsets(tp)).latest).toBe(2);
  });

  it("still answers a retry once retention dropped some or all of its records", async () => {
    const { log, tp } = open();
    const producer = { producerId: "p", epoch: 0, sequence: 0 };
    await log.append(tp, batch(0, 4), producer);
    await log.deleteRecordsBefore(tp, 2);
    expect(await log.append(tp, batch(0, 4), producer)).toMatchObject({ duplicate: true });
    // What is still kept is compared.
    await expect(log.append(tp, [...batch(0, 3), { key: "other", value: "x" }], producer)).rejects.toBeInstanceOf(DuplicateSequenceMismatch);
    await log.deleteRecordsBefore(tp, 4);
    expect(await log.append(tp, batch(0, 4), producer)).toEqual({ baseOffset: 0, count: 4, duplicate: true });
  });

  it("migrates a partition stored one row per record (schema 3) to batches", async () => {
    const stub = env.LOG_PARTITION.getByName("migration-test/0");
    await runInDurableObject(stub, (_, state) => {
      const db = state.storage.sql;
      // The schema as migrations 1-3 left it, with two records and a remembered producer batch.
      for (const table of [
        "partition_meta",
        "record_batches",
        "producers",
        "producer_batches",
        "committed_offsets",
        "subscribers",
        "compaction",
        "latest_keys",
        "remote_segments",
        "remote_deletions",
        "_schema",
      ]) {
        db.exec(`DROP TABLE IF EXISTS ${table}`);
      }
      db.exec(`
        CREATE TABLE _schema (only INTEGER PRIMARY KEY CHECK (only = 1), version INTEGER NOT NULL);
        INSERT INTO _schema VALUES (1, 3);
        CREATE TABLE partition_meta (only INTEGER PRIMARY KEY CHECK (only = 1), topic TEXT NOT NULL, partition INTEGER NOT NULL,
          log_start INTEGER NOT NULL, log_end INTEGER NOT NULL);
        CREATE TABLE records (offset INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, headers TEXT,
          timestamp INTEGER NOT NULL, bytes INTEGER NOT NULL);
        CREATE TABLE producers (producer_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, last_seen INTEGER NOT NULL);
        CREATE TABLE producer_batches (producer_id TEXT NOT NULL, sequence INTEGER NOT NULL, base_offset INTEGER NOT NULL,
          count INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (producer_id, sequence));
        CREATE TABLE committed_offsets (group_id TEXT PRIMARY KEY, offset INTEGER NOT NULL, metadata TEXT NOT NULL,
          committed_at INTEGER NOT NULL, epoch INTEGER);
        CREATE TABLE subscribers (name TEXT PRIMARY KEY, since INTEGER NOT NULL);
        INSERT INTO partition_meta VALUES (1, 'migration-test', 0, 1, 4);
        INSERT INTO records VALUES (1, 'k1', 'v1', '[{"key":"h","value":"x"}]', 100, 5), (2, NULL, 'v2', NULL, 200, 2), (3, 'k3', 'v3', NULL, 300, 4);
        INSERT INTO producers VALUES ('p', 0, ${Date.now()});
        INSERT INTO producer_batches VALUES ('p', 0, 2, 2, 'digest');
      `);
      const store = new PartitionStore(state.storage);
      const tp = { topic: "migration-test", partition: 0 };
      expect(db.exec<{ version: number }>("SELECT version FROM _schema").one().version).toBe(7);
      expect(store.offsets(tp)).toEqual({ earliest: 1, latest: 4 });
      expect(store.fetch(tp, 1, all).records).toEqual([
        { offset: 1, key: "k1", value: "v1", headers: [{ key: "h", value: "x" }], timestamp: 100 },
        { offset: 2, key: null, value: "v2", headers: [], timestamp: 200 },
        { offset: 3, key: "k3", value: "v3", headers: [], timestamp: 300 },
      ]);
      expect(store.fetch(tp, 1, { maxRecords: 10, maxBytes: 7 }).records.map((r) => r.offset)).toEqual([1, 2]);
      expect(store.offsetForTimestamp(tp, 150)).toBe(2);
      const retry = [
        { key: null, value: "v2", timestamp: 200 },
        { key: "k3", value: "v3", timestamp: 300 },
      ];
      expect(store.append(tp, retry, { producerId: "p", epoch: 0, sequence: 0 })).toEqual({ baseOffset: 2, count: 2, duplicate: true });
      expect(() => store.append(tp, [retry[0]!, { key: "k3", value: "v3" }], { producerId: "p", epoch: 0, sequence: 0 })).toThrow(/already used/);
      expect(store.append(tp, [{ key: "k4", value: "v4" }], { producerId: "p", epoch: 0, sequence: 1 })).toEqual({ baseOffset: 4, count: 1, duplicate: false });
      expect(store.fetch(tp, 3, all).records.map((r) => r.value)).toEqual(["v3", "v4"]);
    });
  });
});

describe("utf8Length", () => {
  it("counts UTF-8 bytes as TextEncoder does, ASCII or not", () => {
    const texts = ["", "abc", "customer-42", "\u007f", "é", "ü-x", "€", "日本語", "😀", "a😀b", "\ud83d", "x\udc00y", "\u0000\u0080\u07ff\u0800\uffff"];
    for (const text of texts) expect(utf8Length(text), JSON.stringify(text)).toBe(new TextEncoder().encode(text).length);
  });
});

describe("fitsInOneRow", () => {
  it("agrees with the exact UTF-8 size at the row cap, for texts short enough to pass by length alone and longer ones", () => {
    const bytes = (text: string) => new TextEncoder().encode(text).length;
    const exact = (text: string, count: number) => bytes(text) + 8 * count <= MAX_ROW_BYTES;
    // 1-, 2- and 3-byte characters and a surrogate pair, at lengths around a third of the cap (where
    // the length alone stops telling) and around the cap itself.
    for (const unit of ["a", "é", "€", "😀"]) {
      for (const count of [1, 1000]) {
        const room = MAX_ROW_BYTES - 8 * count;
        for (const units of [Math.floor(room / 3) - 1, Math.floor(room / 3), Math.floor(room / 3) + 1, Math.floor(room / 2), room - 1, room, room + 1]) {
          const text = unit.repeat(Math.ceil(units / unit.length)).slice(0, units - (units % unit.length));
          expect(fitsInOneRow(text, count), `${unit} x ${text.length} units, ${count} records`).toBe(exact(text, count));
        }
      }
    }
  });
});

describe("parseEntries", () => {
  it("measures each record in UTF-8 bytes, whether the batch is plain ASCII, escaped or not", () => {
    const bytes = (text: string) => new TextEncoder().encode(text).length;
    const records: [string, string][] = [
      ["k", "plain"],
      ["clé", "é"],
      ["x", "😀"],
      ["\\u00e9", "a\\\\ub"],
      ["nl", "line\nbreak"],
    ];
    const ascii = JSON.stringify([
      ["k", "plain", null],
      ["nl", "line\nbreak", null],
    ]);
    const raw = JSON.stringify(records.map(([k, v]) => [k, v, null]));
    // The same strings written with \u escapes, which an ASCII-only text may still stand for.
    const escaped = raw.replace(/[^\x00-\x7f]/gu, (c) =>
      c
        .split("")
        .map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`)
        .join(""),
    );
    expect(escaped).toMatch(/^[\x00-\x7f]*$/);
    expect(Array.from(parseEntries(ascii).sizes)).toEqual([1 + 5, 2 + 10]);
    for (const text of [raw, escaped]) {
      const checked = parseEntries(text);
      expect(Array.from(checked.sizes)).toEqual(records.map(([k, v]) => bytes(k) + bytes(v)));
      expect(checked.bytes).toBe(records.reduce((n, [k, v]) => n + bytes(k) + bytes(v), 0));
    }
    expect(() => parseEntries(JSON.stringify([["k", "\u00e9".repeat(3), null]]), 5)).toThrow(/is 7 bytes/);
    expect(() => parseEntries(JSON.stringify([["k", "\\u00e9".repeat(3), null]]).replaceAll("\\\\", "\\"), 5)).toThrow(/is 7 bytes/);
  });
});

describe("a partition's kept range in memory", () => {
  it("never outlives a failed append, and always matches what storage holds", async () => {
    const stub = env.LOG_PARTITION.getByName("meta-cache/0");
    await runInDurableObject(stub, (_, state) => {
      const tp = { topic: "meta-cache", partition: 0 };
      const store = new PartitionStore(state.storage);
      const fresh = () => new PartitionStore(state.storage).offsets(tp);
      // The first call binds the partition inside a transaction that then fails: both are undone.
      expect(() => store.append(tp, [{ key: "a", value: "1" }], { producerId: "p", epoch: 0, sequence: 1 })).toThrow(/must start at sequence 0/);
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM partition_meta").one().n).toBe(0);
      expect(
        store.append(tp, [
          { key: "a", value: "1" },
          { key: "b", value: "2" },
        ]),
      ).toMatchObject({ baseOffset: 0, count: 2 });
      expect(() => store.append(tp, [{ key: "c", value: "3" }], { producerId: "p", epoch: 0, sequence: 2 })).toThrow(/must start at sequence 0/);
      expect(store.append(tp, [{ key: "c", value: "3" }])).toMatchObject({ baseOffset: 2, count: 1 });
      expect(store.deleteRecordsBefore(tp, 2)).toEqual({ earliest: 2, latest: 3 });
      expect(store.offsets(tp)).toEqual({ earliest: 2, latest: 3 });
      expect(fresh()).toEqual({ earliest: 2, latest: 3 });
      expect(() => store.offsets({ topic: "other", partition: 0 })).toThrow(/holds meta-cache\/0/);
    });
  });
});
