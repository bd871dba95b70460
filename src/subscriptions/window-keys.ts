/**
 * What a windows subscription watches in a window or session store's changelog
 * (docs/subscriptions.md): the store is a `TimeKeyedStore` (src/streams/state/time-keyed-store.ts)
 * whose changelog holds one record per window written or deleted, keyed by its data row —
 * `d` + the escaped key + two times. All of a key's windows share the prefix `d` + escaped key,
 * and nothing else of the store does (index and meta rows start with `i` and `m`), so a windows
 * subscription is a prefix subscription of that raw prefix, its events naming each row's window.
 */
import { decodeTime, encodeKey, TIME_WIDTH } from "../streams/state/key-codec";
import type { Window } from "../streams/windowed";

/** The raw prefix of every row of `serializedKey`'s windows (queryable stores have no namespace). */
export function windowRowsPrefix(serializedKey: string): string {
  return `d${encodeKey(serializedKey)}`;
}

/**
 * The window a data row of the key (its raw key, starting with the key's prefix) stands for.
 * Window stores keep the start then the end; session stores the end then the start.
 */
export function windowOfRow(rawKey: string, prefixLength: number, kind: "window" | "session"): Window {
  const first = decodeTime(rawKey, prefixLength);
  const second = decodeTime(rawKey, prefixLength + TIME_WIDTH);
  return kind === "window" ? { start: first, end: second } : { start: second, end: first };
}
