/**
 * What a task object's storage holds of a store, read from its rows (`kv_pages`, one per page of
 * sorted keys) without the task's caches: tests check what a commit wrote.
 */
import { compareKeys } from "../../src/streams/state/key-value-store";
import { decodePage } from "../../src/task/store-page";

export interface StoredEntry {
  readonly key: string;
  readonly value: string;
  readonly timestamp: number;
}

/** Every entry of `store` in storage, in key order. */
export function storedEntries(sql: SqlStorage, store: string): StoredEntry[] {
  const pages = sql
    .exec<{ first_key: string; entries: string }>("SELECT first_key, entries FROM kv_pages WHERE store = ?", store)
    .toArray()
    .map((row) => decodePage(row.entries));
  const entries = pages.flatMap((page) => page.keys.map((key, i) => ({ key, value: page.values[i]!, timestamp: page.timestamps[i]! })));
  // Pages' ranges do not overlap, so ordering each page's entries by key orders them all.
  return entries.sort((a, b) => compareKeys(a.key, b.key));
}

/** The value of `key` in `store` in storage, or undefined. */
export function storedValue(sql: SqlStorage, store: string, key: string): string | undefined {
  return storedEntries(sql, store).find((e) => e.key === key)?.value;
}
