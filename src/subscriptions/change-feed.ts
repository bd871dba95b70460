/**
 * A watch reads a store's changelog (src/subscriptions/watch-loop.ts): each record is one
 * committed write, in commit order. This turns a record into the change of a watched key.
 */
import { TOMBSTONE_HEADER } from "../log/stored-batch";
import type { LogRecord } from "../log/types";

/** One committed write of a watched key: its serialized key and its serialized value (null: deleted). */
export interface Change {
  readonly key: string;
  readonly value: string | null;
}

/** The change `record` is, when `watched` selects its key. */
export function changeOf(record: LogRecord, watched: (key: string) => boolean): Change | undefined {
  const key = record.key ?? "";
  if (!watched(key)) return undefined;
  const deleted = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
  return { key, value: deleted ? null : record.value };
}
