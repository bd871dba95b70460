/**
 * Restore windows (src/restore/compacted-window.ts): the batches a restore round reads ahead,
 * compacted to each key's latest record. Applied, a window leaves the store exactly as replaying
 * every record it covers would; it names every input position its records named, the dropped
 * ones' too; it counts the records it stands for; and it stays within its bytes, ending before the
 * first record left out, so the checkpoint moved to its end never claims a record not applied.
 * (Windowed stores restored through windows: test/unit/time-keyed-changelog.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { decodeBatches, type EncodedBatch, type Entry } from "../../src/log/record-batch";
import { recordBytes } from "../../src/log/records";
import type { Header, LogRecord } from "../../src/log/types";
import { CompactedWindow } from "../../src/restore/compacted-window";
import { POSITION_HEADER, positionFromHeaders, ReachedPositions } from "../../src/streams/runtime/position-header";
import { TOMBSTONE_HEADER } from "../../src/task/record-collector";
import { topicPartition } from "../../src/names";
import { mulberry32 } from "../model/schedule";

const position = (topic: string, partition: number, offset: number): Header => ({ key: POSITION_HEADER, value: `${topic}/${partition}/${offset}` });
const tombstone: Header = { key: TOMBSTONE_HEADER, value: "1" };

function record(offset: number, key: string | null, value: string, headers: Header[] = []): LogRecord {
  return { offset, key, value, headers, timestamp: 1000 + offset };
}

/** A store replayed from `records` as restoration applies them: a later write of a key wins, a tombstone deletes. */
function replay(records: readonly LogRecord[], into = new Map<string, { value: string; timestamp: number }>()) {
  for (const r of records) {
    if (r.headers.some((h) => h.key === TOMBSTONE_HEADER)) into.delete(r.key ?? "");
    else into.set(r.key ?? "", { value: r.value, timestamp: r.timestamp });
  }
  return into;
}

/** A small deterministic generator, so a failure names its seed. */
const random = mulberry32;

/** A changelog history: `count` records over `keys` keys (some null, some tombstones), from two input partitions, with gaps (a compacted log). */
function history(seed: number, count: number, keys: number): LogRecord[] {
  const next = random(seed);
  const records: LogRecord[] = [];
  let offset = 0;
  const inputs = [0, 0];
  for (let i = 0; i < count; i++) {
    offset += next() < 0.1 ? 3 : 1;
    const k = Math.floor(next() * keys);
    const key = k === 0 ? null : `k${k}`;
    const partition = next() < 0.7 ? 0 : 1;
    inputs[partition]! += 1 + Math.floor(next() * 3);
    const headers = [position("orders", partition, inputs[partition]!)];
    if (next() < 0.15) headers.push(tombstone);
    records.push(record(offset, key, `v${i}-${"x".repeat(Math.floor(next() * 40))}`, headers));
  }
  return records;
}

/** `fetched` split into fetches of `size` records, as the log hands them out. */
function fetches(records: readonly LogRecord[], size: number, end: number) {
  const out: { records: LogRecord[]; nextOffset: number }[] = [];
  for (let i = 0; i < records.length; i += size) {
    const slice = records.slice(i, i + size);
    out.push({ records: slice, nextOffset: i + size < records.length ? records[i + size]!.offset : end });
  }
  return out;
}

/**
 * `fetched` as the log's stored batches carry it (src/log/record-batch.ts): cut into batches at
 * `cuts`, each with its offsets when they have gaps, a record whose timestamp is the batch's append
 * time stored without one. `uncut`: as an uncut fetch serves them, each batch a stretch of a
 * larger stored row (`from`, `count`), with the records' sizes.
 */
function encoded(fetched: { records: readonly LogRecord[]; nextOffset: number }, cuts: readonly number[], uncut = false) {
  const batches: EncodedBatch[] = [];
  let start = 0;
  for (const end of [...cuts.filter((c) => c > 0 && c < fetched.records.length), fetched.records.length]) {
    const slice = fetched.records.slice(start, end);
    start = end;
    if (slice.length === 0) continue;
    const appendTime = slice[0]!.timestamp;
    const entries: Entry[] = slice.map((r) => {
      const timestamp = r.timestamp === appendTime ? null : r.timestamp;
      return r.headers.length > 0 ? [r.key, r.value, timestamp, r.headers.flatMap((h) => [h.key, h.value])] : [r.key, r.value, timestamp];
    });
    const base = slice[0]!.offset;
    const dense = slice.every((r, i) => r.offset === base + i);
    const offsets = dense ? {} : { offsets: slice.map((r) => r.offset) };
    if (!uncut) batches.push({ base, appendTime, records: JSON.stringify(entries), ...offsets });
    else {
      // Records of the row before and after the stretch, which are not the fetch's.
      const other: Entry = ["other", "x".repeat(50), null, [POSITION_HEADER, "orders/0/999999"]];
      const from = start % 3;
      const sizes = Uint32Array.from(slice, (r) => recordBytes(r.key, r.value, r.headers));
      const row = [...Array.from({ length: from }, () => other), ...entries, other];
      batches.push({ base, appendTime, records: JSON.stringify(row), from, count: entries.length, sizes, ...offsets });
    }
  }
  // The encoding itself is right: decoded, it is the records again.
  expect(decodeBatches(batches)).toEqual(fetched.records);
  return { batches, nextOffset: fetched.nextOffset };
}

describe("a restore window", () => {
  it("keeps each key's latest record, in the order of those records, a tombstone as its key's delete", () => {
    const window = new CompactedWindow(0, 1 << 20);
    expect(
      window.add({
        records: [
          record(0, "a", "1"),
          record(1, "b", "1"),
          record(2, "a", "2"),
          record(3, null, "n1"),
          record(4, "b", "", [tombstone]),
          record(5, "c", "1"),
          record(6, null, "n2"),
        ],
        nextOffset: 7,
      }),
    ).toBe(true);
    expect(window.records().map((r) => [r.offset, r.key, r.value])).toEqual([
      [2, "a", "2"],
      [4, "b", ""],
      [5, "c", "1"],
      [6, null, "n2"],
    ]);
    expect(window.records()[1]!.headers).toEqual([tombstone]);
    expect(window.recordsRead).toBe(7);
    expect(window.nextOffset).toBe(7);
    // Batches go on folding into the same window: a key's latest record moves to where it stands.
    window.add({ records: [record(7, "a", "3"), record(9, "d", "1")], nextOffset: 12 });
    expect(window.records().map((r) => r.offset)).toEqual([4, 5, 6, 7, 9]);
    expect(window.recordsRead).toBe(9);
    // The end is the fetch's (offsets compaction removed after the last record are covered too).
    expect(window.nextOffset).toBe(12);
  });

  it("names every input position its records named, the dropped records' too, without handing them on", () => {
    const window = new CompactedWindow(10, 1 << 20);
    window.add({
      records: [
        record(10, "a", "1", [position("orders", 0, 40)]),
        // Dropped below (its key comes again), and the only record naming partition 1.
        record(11, "b", "1", [position("orders", 1, 7), { key: "other", value: "x" }]),
        record(12, "a", "2", [position("orders", 0, 41)]),
        record(13, "b", "2", [{ key: POSITION_HEADER, value: JSON.stringify({ topic: "orders", partition: 0, offset: 39 }) }]),
        record(14, "c", "1", [position("orders", 2, 5)]),
        record(15, "d", "1", [{ key: POSITION_HEADER, value: "not a position" }]),
      ],
      nextOffset: 16,
    });
    expect(window.positions()).toEqual({ "orders/0": 42, "orders/1": 8, "orders/2": 6 });
    // The records go without their position header (the batch carries them all); other headers stay.
    expect(window.records().map((r) => [r.key, r.headers])).toEqual([
      ["a", []],
      ["b", []],
      ["c", []],
      ["d", []],
    ]);
    const kept = new CompactedWindow(0, 1 << 20);
    kept.add({ records: [record(0, "x", "1", [tombstone, position("orders", 0, 1), { key: "other", value: "y" }])], nextOffset: 1 });
    expect(kept.records()[0]!.headers).toEqual([tombstone, { key: "other", value: "y" }]);
  });

  it("stays within its bytes after compaction: the first record always goes in, a batch that would overflow goes in up to there", () => {
    const big = "x".repeat(100);
    const size = recordBytes("k0", big, []);
    const window = new CompactedWindow(0, 3 * size);
    // A key written again takes no more room than its latest record.
    expect(window.add({ records: [record(0, "k0", big), record(1, "k1", big), record(2, "k0", big), record(3, "k1", big)], nextOffset: 4 })).toBe(true);
    expect(window.bytes).toBe(2 * size);
    expect(window.add({ records: [record(4, "k2", big), record(6, "k3", big), record(7, "k4", big)], nextOffset: 8 })).toBe(false);
    // Ends before the first record left out: the next window reads it again.
    expect(window.nextOffset).toBe(6);
    expect(window.recordsRead).toBe(5);
    expect(window.isFull).toBe(true);
    expect(window.records().map((r) => r.key)).toEqual(["k0", "k1", "k2"]);
    expect(() => window.add({ records: [record(6, "k3", big)], nextOffset: 7 })).toThrow(/full/);

    // A record larger than the bound alone still makes a window (as a fetch takes at least one record).
    const alone = new CompactedWindow(5, 10);
    expect(alone.add({ records: [record(5, "k", big), record(6, "j", big)], nextOffset: 7 })).toBe(false);
    expect([alone.nextOffset, alone.recordsRead]).toEqual([6, 1]);

    // An empty fetch (the changelog's end) leaves the window where it was.
    const empty = new CompactedWindow(9, 10);
    expect(empty.add({ records: [], nextOffset: 9 })).toBe(true);
    expect([empty.nextOffset, empty.recordsRead, empty.records()]).toEqual([9, 0, []]);
    expect(() => new CompactedWindow(9, 100).add({ records: [record(8, "k", "v")], nextOffset: 9 })).toThrow(/before the window's end/);
  });

  it("reads the next batch only as large as its room is likely to take, judged by how much of the last batch it kept", () => {
    const value = "x".repeat(98);
    const size = recordBytes("k0", value, []);
    expect(size).toBe(100);
    // Keys all new: the last batch was kept whole, so the room left is all the next may read.
    const fresh = new CompactedWindow(0, 1000);
    fresh.add({ records: [0, 1, 2, 3].map((i) => record(i, `k${i}`, value)), nextOffset: 4 });
    expect(fresh.nextFetchBytes(10_000)).toBe(600);
    expect(fresh.nextFetchBytes(500)).toBe(500);
    // Half of it kept: twice the room.
    const half = new CompactedWindow(0, 1000);
    half.add({ records: [0, 1, 0, 1].map((k, i) => record(i, `k${k}`, value)), nextOffset: 4 });
    expect(half.bytes).toBe(200);
    half.add({ records: [2, 0, 3, 1].map((k, i) => record(4 + i, `k${k}`, value)), nextOffset: 8 });
    expect(half.bytes).toBe(400);
    expect(half.nextFetchBytes(10_000)).toBe(1200);
    // All of it compacted away: the bound's own, at most 16 times the room.
    const none = new CompactedWindow(0, 1000);
    none.add({ records: [record(0, "k0", value)], nextOffset: 1 });
    none.add({ records: [1, 2, 3].map((i) => record(i, "k0", value)), nextOffset: 4 });
    expect(none.nextFetchBytes(100_000)).toBe(16 * 900);
    expect(none.nextFetchBytes(1000)).toBe(1000);
    // No room for a record of the last batch's size, a full window, or nothing read: nothing more to read.
    const tight = new CompactedWindow(0, 1050);
    tight.add({ records: Array.from({ length: 10 }, (_, i) => record(i, `k${i}`, value)), nextOffset: 10 });
    expect(tight.nextFetchBytes(10_000)).toBe(0);
    const cut = new CompactedWindow(0, 150);
    cut.add({ records: [record(0, "k0", value), record(1, "k1", value)], nextOffset: 2 });
    expect([cut.isFull, cut.nextFetchBytes(10_000)]).toEqual([true, 0]);
    const empty = new CompactedWindow(0, 1000);
    empty.add({ records: [], nextOffset: 0 });
    expect(empty.nextFetchBytes(10_000)).toBe(0);
  });

  it("applied window after window, leaves every store a replay of the records it covers would, at every window's end, from decoded records or stored batches alike", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const records = history(seed, 300, 2 + (seed % 30));
      const end = records.at(-1)!.offset + 1;
      const next = random(seed * 7);
      const fetchSize = 1 + Math.floor(next() * 40);
      const readAhead = Math.floor(next() * 5);
      const maxBytes = 200 + Math.floor(next() * 3000);
      const store = new Map<string, { value: string; timestamp: number }>();
      const reached = new ReachedPositions();
      let at = 0;
      let read = 0;
      while (at < end) {
        // The restorer's loop: a window of up to 1 + readAhead fetches from where the last one ended.
        const window = new CompactedWindow(at, maxBytes);
        // A fetch of at most `fetchSize` records and about `maxBytes` bytes (at least one record), as the log's.
        const fetchAt = (from: number, bytes: number) => {
          const i = records.findIndex((r) => r.offset >= from);
          if (i < 0) return { records: [], nextOffset: end };
          let n = 1;
          let taken = recordBytes(records[i]!.key, records[i]!.value, records[i]!.headers);
          for (; n < fetchSize && i + n < records.length; n++) {
            const r = records[i + n]!;
            taken += recordBytes(r.key, r.value, r.headers);
            if (taken > bytes) break;
          }
          return fetches(records.slice(i, i + n), n, i + n < records.length ? records[i + n]!.offset : end)[0]!;
        };
        // The same window of the same fetches as the log's stored batches carry them (`fetchEncoded`).
        const fromEncoded = new CompactedWindow(at, maxBytes);
        const add = (fetched: { records: LogRecord[]; nextOffset: number }) => {
          const taken = window.add(fetched);
          const cuts = [Math.floor(next() * fetched.records.length), Math.floor(next() * fetched.records.length)].sort((a, b) => a - b);
          expect(fromEncoded.add(encoded(fetched, cuts, next() < 0.5)), `seed ${seed}`).toBe(taken);
          expect([fromEncoded.nextOffset, fromEncoded.recordsRead, fromEncoded.bytes, fromEncoded.lastAdded]).toEqual([
            window.nextOffset,
            window.recordsRead,
            window.bytes,
            window.lastAdded,
          ]);
          expect(fromEncoded.nextFetchBytes(maxBytes)).toBe(window.nextFetchBytes(maxBytes));
          return taken;
        };
        let fetched = fetchAt(at, maxBytes);
        for (let left = readAhead; add(fetched) && left > 0 && fetched.nextOffset < end; left--) {
          // Mostly as the restorer reads; now and then a full batch whatever the room, so that windows get cut too.
          const bytes = next() < 0.3 ? maxBytes : window.nextFetchBytes(maxBytes);
          if (bytes === 0) break;
          fetched = fetchAt(fetched.nextOffset, bytes);
        }
        expect(fromEncoded.records(), `seed ${seed}`).toEqual(window.records());
        expect(fromEncoded.positions(), `seed ${seed}`).toEqual(window.positions());
        expect(window.nextOffset, `seed ${seed}`).toBeGreaterThan(at);
        replay(window.records(), store);
        reached.merge(window.positions());
        read += window.recordsRead;
        at = window.nextOffset;
        // The checkpoint (the window's end) claims exactly what the store holds.
        const below = records.filter((r) => r.offset < at);
        expect(store, `seed ${seed} at ${at}`).toEqual(replay(below));
        expect(read, `seed ${seed}`).toBe(below.length);
        const named = new ReachedPositions();
        for (const r of below) named.add(r.headers);
        expect(reached.reached, `seed ${seed}`).toEqual(named.reached);
      }
    }
  });
});

describe("input positions gathered for a restore", () => {
  it("are what positionFromHeaders reads record by record, in either header form, whatever a header holds, from headers or flattened", () => {
    const values = [
      "orders/0/5",
      "orders/0/12",
      "orders/0/4",
      "orders/0/",
      "orders/0/1e3",
      "orders/0/0",
      "orders/0/007",
      "orders/3/123456789012345678",
      "orders/00/7",
      "orders/0/a/7",
      "orders/1/3",
      "orders/1/03",
      "orders/x/3",
      "orders/1/-3",
      "orders/1/",
      "orders",
      "a/b/1/7",
      "",
      JSON.stringify({ topic: "orders", partition: 1, offset: 9 }),
      JSON.stringify({ topic: "orders", partition: "1", offset: 9 }),
      "{not json",
    ];
    const reached = new ReachedPositions();
    const flat = new ReachedPositions();
    const expected: Record<string, number> = {};
    for (const value of values) {
      const headers = [
        { key: "other", value: "orders/0/99" },
        { key: POSITION_HEADER, value },
        { key: POSITION_HEADER, value: "orders/5/1000" },
      ];
      reached.add(headers);
      // Headers as a stored entry flattens them (a restore window's encoded fetches) name the same.
      flat.addFlat(headers.flatMap((h) => [h.key, h.value]));
      const p = positionFromHeaders(headers);
      if (p) expected[topicPartition(p)] = Math.max(expected[topicPartition(p)] ?? 0, p.offset + 1);
    }
    expect(reached.reached).toEqual(expected);
    expect(flat.reached).toEqual(expected);
    // Value by value, after a header that named another partition, or one whose name starts alike.
    const named = (value: string) => {
      const p = positionFromHeaders([{ key: POSITION_HEADER, value }]);
      return p ? { [topicPartition(p)]: p.offset + 1 } : {};
    };
    for (const before of ["orders/0/0", "orders/00/0", "orders/1/0", "orders/0/a/0", "order/0/0"])
      for (const value of values) {
        const one = new ReachedPositions();
        one.addFlat([POSITION_HEADER, before]);
        one.addFlat(["other", "orders/0/99", POSITION_HEADER, value]);
        const want = { ...named(before) };
        for (const [tp, next] of Object.entries(named(value))) want[tp] = Math.max(want[tp] ?? 0, next);
        expect(one.reached, `${before}, then ${value}`).toEqual(want);
      }
    expect(expected).toEqual({ "orders/0": 13, "orders/1": 10, "orders/3": 123456789012345680 });
    reached.merge({ "orders/1": 4, "orders/2": 8 });
    expect(reached.reached).toEqual({ "orders/0": 13, "orders/1": 10, "orders/2": 8, "orders/3": 123456789012345680 });
  });
});
