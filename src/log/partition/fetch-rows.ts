/**
 * What a fetch takes from stored rows, oldest first, from an offset within bounds: the rows the
 * bounds take whole go as they are stored; only a row the bounds cut (or the fetch starts inside)
 * is parsed and sliced. Shared by the local log (rows read from SQLite) and the remote log (rows
 * read from a segment in R2), so both serve the same records the same way.
 */
import type { EncodedBatch, Entry } from "../record-batch";
import { entryOffset, firstEntryAt } from "../stored-batch";
import { storedRow, type BatchRow } from "./batch-rows";

export interface TakenRows {
  readonly batches: EncodedBatch[];
  /** Where the next fetch goes on; undefined when the rows ran out before a bound stopped the fetch. */
  readonly nextOffset: number | undefined;
}

/**
 * Rows from the one holding `offset` (or the last one before it) on; no row is read beyond the first
 * one a bound stops in. `uncut` (`FetchBounds.uncut`): a row the bounds cut goes as stored, naming
 * the stretch taken, instead of parsed and encoded again.
 */
export function takeFromRows(rows: Iterable<BatchRow>, offset: number, maxRecords: number, maxBytes: number, uncut = false): TakenRows {
  const batches: EncodedBatch[] = [];
  let records = 0;
  let bytes = 0;
  let nextOffset = offset;
  for (const batch of rows) {
    const row = storedRow(batch);
    if (row.base + row.span <= offset) continue;
    const start = firstEntryAt(row, offset);
    let end = start;
    while (end < row.count && records < maxRecords && (records === 0 || bytes + row.sizes[end]! <= maxBytes)) {
      bytes += row.sizes[end]!;
      records++;
      end++;
    }
    if (end === start && start < row.count) return { batches, nextOffset };
    if (end > start) {
      const whole = start === 0 && end === row.count;
      const base = entryOffset(row, start);
      const sparse = row.offsets !== undefined && entryOffset(row, end - 1) - base !== end - 1 - start;
      const offsets = sparse ? Array.from({ length: end - start }, (_, i) => entryOffset(row, start + i)) : undefined;
      if (!uncut) {
        const text = whole ? batch.records : JSON.stringify((JSON.parse(batch.records) as Entry[]).slice(start, end));
        batches.push({ base, appendTime: row.appendTime, records: text, ...(offsets ? { offsets } : {}) });
      } else {
        const stretch = whole ? {} : { from: start, count: end - start };
        const sizes = row.sizes.slice(start, end);
        batches.push({ base, appendTime: row.appendTime, records: batch.records, ...stretch, sizes, ...(offsets ? { offsets } : {}) });
      }
    }
    // Offsets compaction removed after the last record taken are skipped too.
    nextOffset = end < row.count ? entryOffset(row, end) : row.base + row.span;
    if (end < row.count || records >= maxRecords) return { batches, nextOffset };
  }
  return { batches, nextOffset: undefined };
}
