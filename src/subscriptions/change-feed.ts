/**
 * A watch reads a store's changelog partition from an offset (src/subscriptions/watch-loop.ts):
 * each fetched record is one committed write, in commit order. This turns a fetch into the
 * changes of the watched keys, and notices when the changelog no longer holds every record after
 * the position: compaction removed records there (offsets keep their meaning, so a record missing
 * between two offsets, or before the first one returned, is gone). A watch cannot then tell
 * whether a change of its keys was among them: it starts again from a snapshot.
 */
import { TOMBSTONE_HEADER } from "../log/stored-batch";
import type { LogRecord } from "../log/types";

/** One committed write of a watched key: its serialized key, its serialized value (null: deleted), and the offset after it. */
export interface Change {
  readonly key: string;
  readonly value: string | null;
  /** The position once this change is sent: its record's offset plus one. */
  readonly next: number;
}

/** What a fetch from `position` gave: the changes of watched keys and the position after the records read; or `gap`. */
export type FeedStep = { readonly changes: Change[]; readonly next: number } | "gap";

/**
 * The changes among `records`, fetched from `position` of a log ending at `latest`, of the keys
 * `watched` selects; `gap` when a record at or after `position` is missing (compacted away).
 */
export function changesFrom(records: readonly LogRecord[], position: number, latest: number, watched: (key: string) => boolean): FeedStep {
  if (records.length === 0) return latest > position ? "gap" : { changes: [], next: position };
  const changes: Change[] = [];
  let expected = position;
  for (const record of records) {
    if (record.offset !== expected) return "gap";
    expected = record.offset + 1;
    const key = record.key ?? "";
    if (!watched(key)) continue;
    const deleted = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
    changes.push({ key, value: deleted ? null : record.value, next: expected });
  }
  return { changes, next: expected };
}
