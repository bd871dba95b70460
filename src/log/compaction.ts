/**
 * Log compaction's rule, as Kafka applies it: of the records below the cleanable point, a record
 * stays only while it is its key's latest (records without a key always stay), and a tombstone
 * stays `delete.retention.ms` after it was appended, so that readers catching up still see the
 * delete. The partition keeps an index of each key's latest offset up to the point compaction has
 * read (partition/offset-map.ts: in memory, or `latest_keys` for a big section); this module
 * decides, for one stored row, which entries survive.
 */
import type { Entry } from "./record-batch";
import { entryOffset, isTombstone, type StoredRow } from "./stored-batch";

export interface LatestRecord {
  readonly offset: number;
  readonly tombstone: boolean;
}

export interface Survivors {
  /** Indexes of the entries kept, in order. */
  readonly keep: number[];
  /** Keys whose tombstone expired and went: they leave the index too. */
  readonly forgotten: string[];
}

/**
 * The entries of a row (at `offsetOf(i)`, appended at `appendTime`) that compaction keeps, given
 * each key's latest offset. A key the index does not know (it has not been read that far) stays.
 */
export function survivors(
  entries: readonly Entry[],
  offsetOf: (index: number) => number,
  appendTime: number,
  latestOf: (key: string) => LatestRecord | undefined,
  now: number,
  deleteRetentionMs: number,
): Survivors {
  const keep: number[] = [];
  const forgotten: string[] = [];
  entries.forEach((entry, i) => {
    const key = entry[0];
    const latest = key === null ? undefined : latestOf(key);
    if (key === null || latest === undefined) return void keep.push(i);
    if (latest.offset > offsetOf(i)) return;
    if (isTombstone(entry) && now - appendTime > deleteRetentionMs) return void forgotten.push(key);
    keep.push(i);
  });
  return { keep, forgotten };
}

/**
 * Whether a compacted partition is due for a pass by its dirty ratio: Kafka's
 * `min.cleanable.dirty.ratio` (0.5) — at least as many records not yet read by compaction as
 * already compacted — with a floor, so small partitions are left alone. (The other reasons for a
 * pass, `max.compaction.lag.ms` among them, are times: see partition/log-cleaner-manager.ts.)
 */
export function compactionDue(dirty: number, clean: number): boolean {
  return dirty >= MIN_DIRTY_RECORDS && dirty >= clean;
}

/**
 * Fewer records than this are not worth a compaction pass (unless the partition goes quiet or
 * `max.compaction.lag.ms` says so). Kafka never cleans its active segment (1 GiB by default); this
 * floor plays that part at a size a restore replays in a fraction of a second. A pass costs about
 * one index write per distinct key it reads, so with a low floor a busy changelog of few keys paid
 * a pass per commit (a quarter of the example's processing time at a floor of 1,000).
 */
export const MIN_DIRTY_RECORDS = 10_000;

/** A row as a sweep leaves it: gone, as it was, or rewritten with fewer entries. */
export type SweptRow =
  | { readonly kind: "deleted" }
  | { readonly kind: "unchanged" }
  | {
      readonly kind: "thinned";
      readonly count: number;
      readonly bytes: number;
      readonly maxTimestamp: number;
      readonly sizes: Uint32Array;
      /** Each kept entry's offset minus the row's base. */
      readonly offsets: Uint32Array;
      readonly records: string;
    };

export interface RowSweep {
  readonly row: SweptRow;
  /** How many entries went. */
  readonly removed: number;
  /** Keys whose tombstone went: they leave the index too. */
  readonly forgotten: string[];
  /** When a tombstone kept for now (this row's or an earlier one's) calls for another sweep; null: none. */
  readonly tombstonesDue: number | null;
}

/**
 * What a sweep makes of one stored row (its entries parsed), given each key's latest record:
 * `survivors`, and the partition's last record (`lastOffset`) whatever it is, since a restored task
 * resumes from the input position the newest changelog record carries (I5). `tombstonesDue` is
 * the sweep's so far; a tombstone kept for now brings it forward to when its time is up.
 */
export function sweepRow(
  row: StoredRow,
  entries: readonly Entry[],
  latestOf: (key: string) => LatestRecord | undefined,
  { now, deleteRetentionMs, lastOffset, tombstonesDue }: { now: number; deleteRetentionMs: number; lastOffset: number; tombstonesDue: number | null },
): RowSweep {
  const chosen = survivors(entries, (i) => entryOffset(row, i), row.appendTime, latestOf, now, deleteRetentionMs);
  const lastIndex = row.base + row.span > lastOffset ? entries.findIndex((_, i) => entryOffset(row, i) === lastOffset) : -1;
  const keep = lastIndex >= 0 && !chosen.keep.includes(lastIndex) ? [...chosen.keep, lastIndex].sort((a, b) => a - b) : chosen.keep;
  const forgotten = lastIndex >= 0 ? chosen.forgotten.filter((key) => key !== entries[lastIndex]![0]) : chosen.forgotten;
  let due = tombstonesDue ?? Infinity;
  for (const i of keep) if (isTombstone(entries[i]!)) due = Math.min(due, row.appendTime + deleteRetentionMs + 1);
  const next = due === Infinity ? null : due;
  const removed = row.count - keep.length;
  if (keep.length === 0) return { row: { kind: "deleted" }, removed, forgotten, tombstonesDue: next };
  if (keep.length === row.count) return { row: { kind: "unchanged" }, removed, forgotten, tombstonesDue: next };
  const kept = keep.map((i) => entries[i]!);
  const sizes = Uint32Array.from(keep, (i) => row.sizes[i]!);
  const offsets = Uint32Array.from(keep, (i) => entryOffset(row, i) - row.base);
  let bytes = 0;
  let maxTimestamp = 0;
  for (const size of sizes) bytes += size;
  for (const entry of kept) maxTimestamp = Math.max(maxTimestamp, entry[2] ?? row.appendTime);
  return {
    row: { kind: "thinned", count: kept.length, bytes, maxTimestamp, sizes, offsets, records: JSON.stringify(kept) },
    removed,
    forgotten,
    tombstonesDue: next,
  };
}
