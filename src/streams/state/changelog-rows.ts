/**
 * How a store layout keeps its changelog to one record per update: what a change-logged raw store
 * offers besides plain puts and deletes. A layout with rows derived from others (an index, a meta
 * row; see time-keyed-store.ts) writes the derived rows to the store only, and has the records
 * of its data rows carry what restoring needs to rebuild them (see time-keyed-changelog.ts).
 *
 * A raw store that is not change-logged (a test's in-memory store) has nothing to keep out of a
 * changelog: `changelogRows` gives it plain writes.
 */
import type { Header } from "../record";
import type { RawKeyValueStore } from "./key-value-store";

export interface ChangelogRows {
  /** Writes a row to the store only (null deletes it): the layout rebuilds it from logged records on restore. */
  writeUnlogged(key: string, value: string | null): void;
  /**
   * Writes a row to the store now, and its changelog record (with its value then) at the commit,
   * once however often it changed — unless a record logged after its last change carries it.
   */
  writeAtCommit(key: string, value: string): void;
  /**
   * A put (null: a delete) whose changelog record also carries `header`: the value `carried`
   * has now, so that row needs no record of its own while this one stays in the changelog.
   */
  writeCarrying(key: string, value: string | null, timestamp: number | undefined, header: Header, carried: string): void;
}

/** The store's own `ChangelogRows` when it is change-logged, else plain writes. */
export function changelogRows(raw: RawKeyValueStore): ChangelogRows {
  const own = raw as RawKeyValueStore & Partial<ChangelogRows>;
  if (typeof own.writeCarrying === "function") return own as RawKeyValueStore & ChangelogRows;
  const write = (key: string, value: string | null, timestamp?: number) => (value === null ? raw.delete(key) : raw.put(key, value, timestamp));
  return {
    writeUnlogged: (key, value) => write(key, value),
    writeAtCommit: (key, value) => write(key, value),
    writeCarrying: (key, value, timestamp) => write(key, value, timestamp),
  };
}
