/**
 * Key-value state stores. A backend keeps serialized strings (`RawKeyValueStore`); processors see
 * typed stores (`KeyValueStore`) that apply the store's serdes. All calls are synchronous, so a
 * backend over Durable Object SQLite can run inside `transactionSync`.
 *
 * Order: keys are ordered by their serialized form compared as UTF-8 bytes (SQLite's BINARY
 * collation; see `compareKeys`). Ranges are inclusive at both ends, as in Kafka Streams.
 */
import type { KeyValue } from "../record";

export interface RawKeyValueStore {
  get(key: string): string | undefined;
  put(key: string, value: string): void;
  delete(key: string): void;
  /** Entries with `from <= key <= to` in key order; a missing bound is open. */
  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[];
  /** Entries whose key starts with `prefix`, in key order. */
  prefix(prefix: string, limit?: number): KeyValue<string, string>[];
}

/** Where a task's stores live. One backend per task instance; names are store names. */
export interface StoreBackend {
  keyValue(storeName: string): RawKeyValueStore;
}

/** A store as processors see it: typed keys and values, serialized with the store's serdes. */
export interface KeyValueStore<K, V> {
  readonly name: string;
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  delete(key: K): void;
  /** Puts only when the key is absent; returns the value already there, if any. */
  putIfAbsent(key: K, value: V): V | undefined;
  /** Inclusive range over the serialized keys' order (which for JSON numbers is not numeric). */
  range(from?: K, to?: K, limit?: number): KeyValue<K, V>[];
  /** Entries whose serialized key starts with `prefix`. */
  prefix(serializedPrefix: string, limit?: number): KeyValue<K, V>[];
  all(limit?: number): KeyValue<K, V>[];
}

/** Compares strings by code point, which is the order of their UTF-8 bytes (unlike `<` on UTF-16). */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    // A code point above U+FFFF takes two UTF-16 units; both strings agree on it, so skip its tail.
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
