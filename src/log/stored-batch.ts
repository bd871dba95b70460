/**
 * How a partition's rows hold its records: one row per stored batch, each at most MAX_ROW_BYTES
 * (Durable Object SQLite refuses rows above 2 MB in production, while local workerd allows more,
 * so the cap holds by construction rather than by tests). A big append becomes several rows.
 *
 * A row covers the offsets `base … base + span - 1`. Appended rows are dense: their `count`
 * entries are those offsets in order. Compaction rewrites a row with only some of its entries
 * left; it then keeps, per entry, its offset's distance from `base` (`offsets`), and every offset
 * keeps its meaning: a fetch skips the removed ones, as Kafka's do.
 */
import { RecordTooLarge } from "./errors";
import type { Entry } from "./record-batch";
import { utf8Length } from "./records";

/** Largest row: a batch's encoded records plus 8 bytes per record (its size and its offset). */
export const MAX_ROW_BYTES = 1024 * 1024;
const PER_ENTRY_BYTES = 8;
/** UTF-8 bytes of one UTF-16 code unit at most (a surrogate pair's two units make 4). */
const MAX_UTF8_BYTES_PER_UNIT = 3;

/** A stored row, as read. */
export interface StoredRow {
  readonly base: number;
  readonly span: number;
  readonly count: number;
  readonly appendTime: number;
  readonly sizes: Uint32Array;
  /** Offset minus `base` of each entry; undefined for a dense row. */
  readonly offsets: Uint32Array | undefined;
}

export function entryOffset(row: Pick<StoredRow, "base" | "offsets">, index: number): number {
  return row.base + (row.offsets ? row.offsets[index]! : index);
}

/** The index of the first entry at or after `offset` (`count` when there is none). */
export function firstEntryAt(row: StoredRow, offset: number): number {
  if (!row.offsets) return Math.min(row.count, Math.max(0, offset - row.base));
  let lo = 0;
  let hi = row.count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.base + row.offsets[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One row's worth of a batch: its entries, their sizes and the text it stores. */
export interface RowChunk {
  readonly entries: Entry[];
  readonly sizes: Uint32Array;
  readonly records: string;
}

/** Whether a batch of `count` records, encoded as `encoded`, fits in one row as it is. */
export function fitsInOneRow(encoded: string, count: number): boolean {
  const perEntry = PER_ENTRY_BYTES * count;
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most batches fit by their length alone, unscanned.
  if (MAX_UTF8_BYTES_PER_UNIT * encoded.length + perEntry <= MAX_ROW_BYTES) return true;
  return utf8Length(encoded) + perEntry <= MAX_ROW_BYTES;
}

/**
 * Splits a batch into rows of at most MAX_ROW_BYTES. `encoded` (the whole batch as one string) is
 * stored as it is when it fits, which is the common case; only a bigger batch is taken apart.
 * A record that alone cannot fit in a row is `RecordTooLarge`.
 */
export function splitIntoRows(entries: readonly Entry[], sizes: Uint32Array, encoded?: string): RowChunk[] {
  const whole = encoded ?? JSON.stringify(entries);
  if (fitsInOneRow(whole, entries.length)) return [{ entries: [...entries], sizes, records: whole }];
  const chunks: RowChunk[] = [];
  let current: string[] = [];
  let start = 0;
  let bytes = 2;
  const close = (end: number) => {
    if (current.length === 0) return;
    chunks.push({ entries: entries.slice(start, end), sizes: sizes.slice(start, end), records: `[${current.join(",")}]` });
    current = [];
    start = end;
    bytes = 2;
  };
  entries.forEach((entry, i) => {
    const text = JSON.stringify(entry);
    const size = utf8Length(text) + 1 + PER_ENTRY_BYTES;
    if (size + 2 > MAX_ROW_BYTES) throw new RecordTooLarge(`record ${i} takes ${size} bytes stored; a stored row holds at most ${MAX_ROW_BYTES}`);
    if (bytes + size > MAX_ROW_BYTES) close(i);
    current.push(text);
    bytes += size;
  });
  close(entries.length);
  return chunks;
}

/** Whether an entry is a tombstone: a delete of its key (values are strings, so a header marks it). */
export function isTombstone(entry: Entry): boolean {
  const headers = entry[3];
  if (!headers) return false;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === TOMBSTONE_HEADER) return true;
  return false;
}

/** Header marking a record as a delete of its key (the log keeps string values only). */
export const TOMBSTONE_HEADER = "edge-streams.tombstone";
