/**
 * The log's limit on one record, checked where a record is made (a sink's output, a store write's
 * changelog record), so that an oversized record fails there — through the topology's error
 * handlers — rather than at the log, where it would fail the same commit again on every retry.
 */
import { RecordTooLarge } from "../../log/errors";
import { MAX_RECORD_BYTES, recordBytes } from "../../log/records";
import type { Header } from "../record";

export function checkRecordSize(what: string, key: string | null, value: string | null, headers: readonly Header[]): void {
  // Cheap first: a record far below the limit needs no exact count.
  let upper = (key?.length ?? 0) + (value?.length ?? 0);
  for (const h of headers) upper += h.key.length + h.value.length;
  if (upper * 3 <= MAX_RECORD_BYTES) return;
  const bytes = recordBytes(key, value ?? "", headers);
  if (bytes > MAX_RECORD_BYTES) throw new RecordTooLarge(`${what} is ${bytes} bytes; a record holds at most ${MAX_RECORD_BYTES}`);
}
