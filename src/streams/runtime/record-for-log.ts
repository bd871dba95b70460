/**
 * What the log refuses in one record — more than its size limit, or a timestamp that is not a
 * non-negative integer of milliseconds (a processor may forward any) — checked where a record is
 * made (a sink's output, a store write's changelog record), so that it fails there, through the
 * topology's error handlers, rather than at the log, where the outbox would send the same
 * refused batch again on every retry, for ever.
 */
import { InvalidRecord, RecordTooLarge } from "../../log/errors";
import { MAX_RECORD_BYTES, recordBytes } from "../../log/records";
import type { Header } from "../record";

export function checkRecordForLog(
  what: string,
  key: string | null,
  value: string | null,
  headers: readonly Header[],
  timestamp: number,
  limit = MAX_RECORD_BYTES,
): void {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0)
    throw new InvalidRecord(`${what} has timestamp ${timestamp}; the log takes non-negative integers (milliseconds)`);
  // Cheap first: a record far below the limit needs no exact count.
  let upper = (key?.length ?? 0) + (value?.length ?? 0);
  for (const h of headers) upper += h.key.length + h.value.length;
  if (upper * 3 <= limit) return;
  const bytes = recordBytes(key, value ?? "", headers);
  if (bytes > limit) {
    const why = limit < MAX_RECORD_BYTES ? ` where the topology reads it (room is left for a dead letter's headers)` : "";
    throw new RecordTooLarge(`${what} is ${bytes} bytes; a record holds at most ${limit}${why}`);
  }
}
