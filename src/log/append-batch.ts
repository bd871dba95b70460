/**
 * A batch on its way into a partition: how many records, each one's size, their greatest
 * timestamp, and its entries, parsed only when something needs them (a batch too big for one row,
 * a producer's retry compared with what the log holds, a compacted topic's index). A batch its
 * sender measured (`BatchMeasure`) is stored without being parsed on the common path; any other is
 * parsed and checked as it arrives.
 */
import { MAX_RECORD_BYTES } from "./records";
import { parseEntries, type BatchMeasure, type CheckedEntries, type Entry } from "./record-batch";
import { fitsInOneRow, splitIntoRows } from "./stored-batch";

export interface AppendBatch {
  readonly count: number;
  readonly sizes: Uint32Array;
  /** The batch as it came encoded, stored as it is when it fits in a row; undefined for records sent as objects. */
  readonly text: string | undefined;
  /** The greatest timestamp of its records, the append time `now` standing for those that gave none. */
  maxTimestamp(now: number): number;
  /** Its entries, parsed on first use. */
  entries(): Entry[];
  /** Its entries when they are parsed already. */
  parsed(): Entry[] | undefined;
}

/** A batch parsed and checked (by `parseEntries`, or from records by `checkBatch`). */
export function checkedBatch({ entries, sizes }: Pick<CheckedEntries, "entries" | "sizes">, text: string | undefined): AppendBatch {
  return {
    count: entries.length,
    sizes,
    text,
    maxTimestamp: (now) => maxTimestampOf(entries, now),
    entries: () => entries,
    parsed: () => entries,
  };
}

/**
 * An encoded batch as it arrives: trusted as measured when a measure comes with it (its sender
 * encoded it with `encodeBatch`), else parsed and checked now. A measure that cannot be
 * `encodeBatch`'s is not trusted: the batch is then parsed and checked as any other.
 */
export function arrivingBatch(text: string, measure?: BatchMeasure): AppendBatch {
  if (!measure || !plausible(measure)) return checkedBatch(parseEntries(text), text);
  const { sizes, maxTimestamp, untimed } = measure;
  let entries: Entry[] | undefined;
  return {
    count: sizes.length,
    sizes,
    text,
    maxTimestamp: (now) => Math.max(0, maxTimestamp, untimed ? now : 0),
    entries: () => (entries ??= JSON.parse(text) as Entry[]),
    parsed: () => entries,
  };
}

/** The greatest timestamp of entries, `now` standing for entries without one. */
export function maxTimestampOf(entries: readonly Entry[], now: number): number {
  let max = 0;
  for (const entry of entries) max = Math.max(max, entry[2] ?? now);
  return max;
}

function plausible({ sizes, maxTimestamp, untimed }: BatchMeasure): boolean {
  if (!(sizes instanceof Uint32Array) || sizes.length === 0 || typeof untimed !== "boolean") return false;
  if (!Number.isSafeInteger(maxTimestamp) || maxTimestamp < -1 || (maxTimestamp === -1 && !untimed)) return false;
  for (const size of sizes) if (size > MAX_RECORD_BYTES) return false;
  return true;
}

/** One row's worth of an appended batch. */
export interface AppendRow {
  readonly count: number;
  readonly sizes: Uint32Array;
  readonly records: string;
  readonly maxTimestamp: number;
  /** Its entries when they were parsed on the way (for a compacted topic's index). */
  readonly entries: Entry[] | undefined;
}

/** The rows a batch is stored in: itself as it came when it fits in one (the common case), else pieces of at most a row. */
export function rowsOf(batch: AppendBatch, now: number): AppendRow[] {
  if (batch.text !== undefined && fitsInOneRow(batch.text, batch.count)) {
    return [{ count: batch.count, sizes: batch.sizes, records: batch.text, maxTimestamp: batch.maxTimestamp(now), entries: batch.parsed() }];
  }
  return splitIntoRows(batch.entries(), batch.sizes, batch.text).map((row) => ({
    count: row.entries.length,
    sizes: row.sizes,
    records: row.records,
    maxTimestamp: maxTimestampOf(row.entries, now),
    entries: row.entries,
  }));
}
