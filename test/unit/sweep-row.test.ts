/** What a compaction sweep makes of one stored row (src/log/compaction.ts `sweepRow`): pure. */
import { describe, expect, it } from "vitest";
import { sweepRow, type LatestRecord } from "../../src/log/compaction";
import type { Entry } from "../../src/log/record-batch";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";

const DELETE_RETENTION = 1_000;
const appendTime = 5_000;
const put = (key: string | null, value: string, timestamp: number | null = null): Entry => [key, value, timestamp];
const tombstone = (key: string): Entry => [key, "", null, [TOMBSTONE_HEADER, "1"]];

/** A dense row of `entries` at `base`, each `index + 1` bytes. */
const denseRow = (base: number, entries: readonly Entry[]) => ({
  base,
  span: entries.length,
  count: entries.length,
  appendTime,
  sizes: Uint32Array.from(entries, (_, i) => i + 1),
  offsets: undefined,
});

const index = (latest: Record<string, LatestRecord>) => (key: string) => latest[key];
const options = (over: Partial<{ now: number; lastOffset: number; tombstonesDue: number | null }> = {}) => ({
  now: appendTime + 10,
  deleteRetentionMs: DELETE_RETENTION,
  lastOffset: 1_000,
  tombstonesDue: null,
  ...over,
});

describe("sweepRow", () => {
  const entries = [put("a", "a1", 4_000), put("b", "b1", 4_100), put("a", "a2", 4_200), tombstone("c")];
  const row = denseRow(10, entries);

  it("thins a row to its keys' latest records, keeping their offsets, sizes and the kept records' greatest timestamp", () => {
    const latest = index({ a: { offset: 12, tombstone: false }, b: { offset: 20, tombstone: false }, c: { offset: 13, tombstone: true } });
    const swept = sweepRow(row, entries, latest, options());
    expect(swept.removed).toBe(2);
    expect(swept.forgotten).toEqual([]);
    expect(swept.row).toEqual({
      kind: "thinned",
      count: 2,
      bytes: 3 + 4,
      maxTimestamp: appendTime,
      sizes: Uint32Array.from([3, 4]),
      offsets: Uint32Array.from([2, 3]),
      records: JSON.stringify([entries[2], entries[3]]),
    });
    // The tombstone kept calls for another sweep once its time is up.
    expect(swept.tombstonesDue).toBe(appendTime + DELETE_RETENTION + 1);
  });

  it("drops a tombstone past delete.retention.ms and forgets its key, unless it is the partition's last record", () => {
    const latest = index({ a: { offset: 12, tombstone: false }, b: { offset: 11, tombstone: false }, c: { offset: 13, tombstone: true } });
    const late = options({ now: appendTime + DELETE_RETENTION + 1, tombstonesDue: 77 });
    const swept = sweepRow(row, entries, latest, late);
    expect(swept.forgotten).toEqual(["c"]);
    expect(swept.row).toMatchObject({ kind: "thinned", offsets: Uint32Array.from([1, 2]) });
    expect(swept.tombstonesDue).toBe(77);
    const last = sweepRow(row, entries, latest, { ...late, lastOffset: 13 });
    expect(last.forgotten).toEqual([]);
    expect(last.row).toMatchObject({ kind: "thinned", offsets: Uint32Array.from([1, 2, 3]) });
  });

  it("keeps the partition's last record even when a later one of its key supersedes it in the index", () => {
    const latest = index({ a: { offset: 99, tombstone: false }, b: { offset: 99, tombstone: false }, c: { offset: 99, tombstone: false } });
    expect(sweepRow(row, entries, latest, options({ lastOffset: 12 })).row).toMatchObject({ kind: "thinned", count: 1, offsets: Uint32Array.from([2]) });
    expect(sweepRow(row, entries, latest, options()).row).toEqual({ kind: "deleted" });
  });

  it("leaves records without a key, and keys the index has not read, as they are", () => {
    const mixed = [put(null, "x"), put("unread", "y")];
    const swept = sweepRow(denseRow(0, mixed), mixed, index({}), options());
    expect(swept).toEqual({ row: { kind: "unchanged" }, removed: 0, forgotten: [], tombstonesDue: null });
  });

  it("reads the offsets of a row compaction thinned before", () => {
    const thinned = [put("a", "a1"), put("b", "b1")];
    const sparse = { base: 100, span: 10, count: 2, appendTime, sizes: Uint32Array.from([5, 6]), offsets: Uint32Array.from([3, 9]) };
    const swept = sweepRow(sparse, thinned, index({ a: { offset: 103, tombstone: false }, b: { offset: 150, tombstone: false } }), options());
    expect(swept.row).toMatchObject({ kind: "thinned", count: 1, bytes: 5, offsets: Uint32Array.from([3]) });
  });
});
