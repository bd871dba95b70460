/**
 * Log compaction's rule, as Kafka applies it: of the records below the cleanable point, a record
 * stays only while it is its key's latest (records without a key always stay), and a tombstone
 * stays `delete.retention.ms` after it was appended, so that readers catching up still see the
 * delete. The partition keeps an index of each key's latest offset up to the point compaction has
 * read (`latest_keys`); this module decides, for one stored row, which entries survive.
 */
import type { Entry } from "./record-batch";
import { isTombstone } from "./stored-batch";

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
 * pass, `max.compaction.lag.ms` among them, are times: see PartitionStore's `compactionDueAt`.)
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
