/**
 * Key-value state stores. A backend keeps serialized strings (`RawKeyValueStore`); processors see
 * typed stores (`KeyValueStore`) that apply the store's serdes. All calls are synchronous, so a
 * backend over Durable Object SQLite can run inside `transactionSync`.
 *
 * Order: keys are ordered by their serialized form compared as UTF-8 bytes (SQLite's BINARY
 * collation; see `compareKeys`). Ranges are inclusive at both ends, as in Kafka Streams.
 *
 * Every entry keeps the timestamp it was written with, as Kafka Streams' timestamped stores keep
 * a `ValueAndTimestamp`: it is the event time of what the value reflects (an aggregate's latest
 * record, a table row's update), what results derived from it are stamped with, and the timestamp
 * of the entry's changelog record — so restoration brings the timestamps back with the values.
 */
import type { KeyValue } from "../record";

/** A value and its timestamp (Kafka Streams' `ValueAndTimestamp`). */
export interface ValueAndTimestamp<V> {
  readonly value: V;
  readonly timestamp: number;
}

/** An entry with the timestamp of its value. */
export interface TimestampedKeyValue<K, V> extends KeyValue<K, V> {
  readonly timestamp: number;
}

/** The timestamp of an entry written without one (Kafka also reads -1 for values of a store upgraded to timestamps). */
export const NO_TIMESTAMP = -1;

export interface RawKeyValueStore {
  get(key: string): string | undefined;
  /** The value with its timestamp (`NO_TIMESTAMP` when it was written without one). */
  getWithTimestamp(key: string): ValueAndTimestamp<string> | undefined;
  /** Writes the value with its timestamp; without one, the store picks (the runtime: the current record's time). */
  put(key: string, value: string, timestamp?: number): void;
  delete(key: string): void;
  /** Entries with `from <= key <= to` in key order; a missing bound is open. */
  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[];
  /** `range`, with each value's timestamp. */
  rangeWithTimestamps(from?: string, to?: string, limit?: number): TimestampedKeyValue<string, string>[];
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
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  // Code units first: where they first differ, two units below the surrogates are two code points
  // that compare as they are (keys are mostly ASCII); the units before them are equal code points
  // either way. Otherwise, or when one key is a prefix of the other, code point by code point.
  let at = 0;
  while (at < length && a.charCodeAt(at) === b.charCodeAt(at)) at++;
  if (at < length) {
    const x = a.charCodeAt(at);
    const y = b.charCodeAt(at);
    if (x < 0xd800 && y < 0xd800) return x - y;
  }
  return compareCodePoints(a, b, length);
}

function compareCodePoints(a: string, b: string, length: number): number {
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    // A code point above U+FFFF takes two UTF-16 units; both strings agree on it, so skip its tail.
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * Stored entries (in key order, as a range read returned them) with newer writes over them (a
 * null value deletes), in key order, at most `limit`. A range read of the stored ones must have
 * taken `limit` plus as many as there are writes: each could hide one.
 */
export function overlayEntries(
  stored: readonly TimestampedKeyValue<string, string>[],
  writes: readonly { readonly key: string; readonly value: string | null; readonly timestamp: number }[],
  limit: number | undefined,
): TimestampedKeyValue<string, string>[] {
  const rows = new Map<string, TimestampedKeyValue<string, string> | null>(stored.map((e) => [e.key, e]));
  for (const { key, value, timestamp } of writes) rows.set(key, value === null ? null : { key, value, timestamp });
  const merged = [...rows.values()].filter((e): e is TimestampedKeyValue<string, string> => e !== null);
  merged.sort((a, b) => compareKeys(a.key, b.key));
  return limit === undefined ? merged : merged.slice(0, limit);
}
