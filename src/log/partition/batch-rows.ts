/**
 * A `record_batches` row as SQLite returns it, and as the rest of the partition reads it
 * (`StoredRow`, see stored-batch.ts).
 */
import type { StoredRow } from "../stored-batch";

/**
 * A stored batch: `records` as record-batch.ts encodes them, `sizes` each record's size (key, value
 * and headers in UTF-8 bytes) as a Uint32Array in the host's byte order, `append_time` the
 * timestamp of records stored without one, `max_timestamp` the largest timestamp in the batch.
 */
export type BatchRow = {
  base_offset: number;
  count: number;
  span: number;
  append_time: number;
  max_timestamp: number;
  sizes: ArrayBuffer;
  offsets: ArrayBuffer | null;
  records: string;
};

export function storedRow(row: BatchRow): StoredRow {
  return {
    base: row.base_offset,
    span: row.span,
    count: row.count,
    appendTime: row.append_time,
    sizes: new Uint32Array(row.sizes),
    offsets: row.offsets ? new Uint32Array(row.offsets) : undefined,
  };
}
