/**
 * A versioned key-value store (Kafka's `VersionedKeyValueStore`, KIP-889): every key keeps its
 * latest record and the records before it for `historyRetentionMs` of the store's stream time, so
 * a reader can ask for the value a key had at a time (`getAsOf`). A write may be older than the
 * latest: it goes into the history, between the versions around it, and the store says until when
 * it is valid. A write older than the history retention is not taken at all.
 *
 * It lives in two raw stores, both change-logged like any store:
 * - the latest store holds each key's latest non-null value with its timestamp, laid out as a plain
 *   key-value store — so point reads, scans and restoration of the latest rows work unchanged;
 * - the history store holds, under internal keys (no user key can collide with them):
 *   - `v` + encodeKey(key) + encodeTime(validFrom) → JSON `[value | null, validTo]`: older versions,
 *     tombstones included (a key deleted for a while has no value then);
 *   - `x` + encodeTime(validTo) + encodeKey(key) + encodeTime(validFrom) → "": versions by the end
 *     of their validity, to drop those no reader may see any more;
 *   - `t` + encodeKey(key) → timestamp: a key whose latest record is a tombstone, and when;
 *     `y` + encodeTime(timestamp) + encodeKey(key) → "": those by time, to drop them once no write
 *     can be older;
 *   - `m` → JSON `{ streamTime }`: the largest timestamp written, which is what retention counts
 *     from (kept here so that a restored store expires exactly as the wiped one would have).
 *
 * Versions are contiguous: each one's validTo is the next one's validFrom (the last one's is the
 * latest record's timestamp). A version whose validTo is at or below stream time minus retention
 * can only answer reads that are expired anyway, so it is deleted — exactly, not by segment.
 */
import type { Serde } from "../serdes";
import type { RawKeyValueStore } from "./key-value-store";
import { decodeStored } from "./typed-store";
import { decodeKey, decodeTime, encodeKey, encodeTime, MAX_TIME, TIME_WIDTH } from "./key-codec";

/** `put` made the record the key's latest. */
export const PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1;
/** `put` did not take the record: it is older than the history retention allows. */
export const PUT_RETURN_CODE_NOT_PUT = Number.MIN_SAFE_INTEGER;

/** A `put` result as a change's `isLatest`: absent when the record is the latest (the default), false when it went into the history. */
export function isLatestOf(putReturnCode: number): false | undefined {
  return putReturnCode === PUT_RETURN_CODE_VALID_TO_UNDEFINED ? undefined : false;
}

/** A version of a key: its value, from `timestamp` until `validTo` (undefined for the latest). */
export interface VersionedRecord<V> {
  readonly value: V;
  readonly timestamp: number;
  readonly validTo?: number;
}

interface Version {
  readonly validFrom: number;
  readonly value: string | null;
  readonly validTo: number;
}

/** Expired entries deleted per write at most; the rest go with the next writes (reads ignore them already). */
const PURGE_BATCH = 64;

export class RawVersionedStore {
  constructor(
    private readonly latest: RawKeyValueStore,
    private readonly history: RawKeyValueStore,
    readonly historyRetentionMs: number,
  ) {}

  /** The key's latest record, unless it is a tombstone. */
  get(key: string): VersionedRecord<string> | undefined {
    const row = this.latest.getWithTimestamp(key);
    return row && { value: row.value, timestamp: row.timestamp };
  }

  /**
   * The record valid at `asOf` (the latest one with a timestamp at or before it); undefined when
   * there is none, it is a tombstone, or `asOf` is older than the history retention — unless the
   * latest record itself is valid then: the latest version never expires.
   */
  getAsOf(key: string, asOf: number): VersionedRecord<string> | undefined {
    const row = this.latest.getWithTimestamp(key);
    if (row && row.timestamp <= asOf) return { value: row.value, timestamp: row.timestamp };
    if (asOf < this.streamTime() - this.historyRetentionMs) return undefined;
    const deletedAt = this.tombstoneTime(key);
    if (deletedAt !== undefined && deletedAt <= asOf) return undefined;
    const version = this.versionAt(key, asOf);
    if (version === undefined || version.value === null || version.validTo <= asOf) return undefined;
    return { value: version.value, timestamp: version.validFrom, validTo: version.validTo };
  }

  /**
   * Writes `value` (null: a tombstone) for the key as of `timestamp`. Returns
   * `PUT_RETURN_CODE_VALID_TO_UNDEFINED` when it is now the latest record, the end of its validity
   * when it went into the history, `PUT_RETURN_CODE_NOT_PUT` when it is too old to keep.
   */
  put(key: string, value: string | null, timestamp: number): number {
    const streamTime = this.streamTime();
    if (timestamp < streamTime - this.historyRetentionMs) return PUT_RETURN_CODE_NOT_PUT;
    if (timestamp > streamTime) this.history.put("m", JSON.stringify({ streamTime: timestamp }));
    const result = this.write(key, value, timestamp);
    this.purge(Math.max(streamTime, timestamp) - this.historyRetentionMs);
    return result;
  }

  /** Deletes the key as of `timestamp` (a tombstone); returns the record valid then, if the delete was taken. */
  delete(key: string, timestamp: number): VersionedRecord<string> | undefined {
    if (timestamp < this.streamTime() - this.historyRetentionMs) return undefined;
    const existing = this.getAsOf(key, timestamp);
    this.put(key, null, timestamp);
    return existing;
  }

  /** The largest timestamp written; -1 before the first. */
  streamTime(): number {
    const text = this.history.get("m");
    return text === undefined ? -1 : (JSON.parse(text) as { streamTime: number }).streamTime;
  }

  private write(key: string, value: string | null, timestamp: number): number {
    const row = this.latest.getWithTimestamp(key);
    const deletedAt = row === undefined ? this.tombstoneTime(key) : undefined;
    const latestTime = row?.timestamp ?? deletedAt;
    if (latestTime === undefined || timestamp >= latestTime) {
      // The new latest; the one it replaces (unless at the same time) becomes history.
      if (latestTime !== undefined && timestamp > latestTime) this.putVersion(key, { validFrom: latestTime, value: row?.value ?? null, validTo: timestamp });
      if (deletedAt !== undefined) this.clearTombstone(key, deletedAt);
      if (value !== null) {
        this.latest.put(key, value, timestamp);
      } else {
        if (row !== undefined) this.latest.delete(key);
        this.setTombstone(key, timestamp);
      }
      return PUT_RETURN_CODE_VALID_TO_UNDEFINED;
    }
    // Older than the latest: into the history, between the versions around it.
    const versions = this.versionsOf(key);
    const same = versions.find((v) => v.validFrom === timestamp);
    if (same !== undefined) {
      this.putVersion(key, { ...same, value });
      return same.validTo;
    }
    const next = versions.find((v) => v.validFrom > timestamp);
    const validTo = next?.validFrom ?? latestTime;
    const previous = versions.filter((v) => v.validFrom < timestamp).at(-1);
    if (previous !== undefined && previous.validTo > timestamp) {
      this.dropVersion(key, previous);
      this.putVersion(key, { ...previous, validTo: timestamp });
    }
    this.putVersion(key, { validFrom: timestamp, value, validTo });
    return validTo;
  }

  /** The version with the largest validFrom at or before `time`. */
  private versionAt(key: string, time: number): Version | undefined {
    return this.versionsOf(key, time).at(-1);
  }

  /** The key's history versions, by validFrom (up to `until`, inclusive). */
  private versionsOf(key: string, until = MAX_TIME): Version[] {
    const prefix = `v${encodeKey(key)}`;
    return this.history.range(prefix, prefix + encodeTime(until)).map(({ key: dataKey, value }) => {
      const [stored, validTo] = JSON.parse(value) as [string | null, number];
      return { validFrom: decodeTime(dataKey, prefix.length), value: stored, validTo };
    });
  }

  private putVersion(key: string, version: Version): void {
    const dataKey = `v${encodeKey(key)}${encodeTime(version.validFrom)}`;
    const existing = this.history.get(dataKey);
    if (existing !== undefined) {
      const [, oldValidTo] = JSON.parse(existing) as [string | null, number];
      if (oldValidTo !== version.validTo) this.history.delete(this.expiryKey(key, version.validFrom, oldValidTo));
    }
    this.history.put(dataKey, JSON.stringify([version.value, version.validTo]));
    this.history.put(this.expiryKey(key, version.validFrom, version.validTo), "");
  }

  private dropVersion(key: string, version: Version): void {
    this.history.delete(`v${encodeKey(key)}${encodeTime(version.validFrom)}`);
    this.history.delete(this.expiryKey(key, version.validFrom, version.validTo));
  }

  private expiryKey(key: string, validFrom: number, validTo: number): string {
    return `x${encodeTime(validTo)}${encodeKey(key)}${encodeTime(validFrom)}`;
  }

  private tombstoneTime(key: string): number | undefined {
    const text = this.history.get(`t${encodeKey(key)}`);
    return text === undefined ? undefined : Number(text);
  }

  private setTombstone(key: string, timestamp: number): void {
    const previous = this.tombstoneTime(key);
    if (previous !== undefined) this.clearTombstone(key, previous);
    this.history.put(`t${encodeKey(key)}`, String(timestamp));
    this.history.put(`y${encodeTime(timestamp)}${encodeKey(key)}`, "");
  }

  private clearTombstone(key: string, timestamp: number): void {
    this.history.delete(`t${encodeKey(key)}`);
    this.history.delete(`y${encodeTime(timestamp)}${encodeKey(key)}`);
  }

  /**
   * Deletes versions no read may see (validTo at or below `bound`) and latest tombstones no write
   * can precede any more (older than `bound`: a write that old is not taken).
   */
  private purge(bound: number): void {
    if (bound < 0) return;
    for (const { key: indexKey } of this.history.range("x", `x${encodeTime(Math.min(bound, MAX_TIME))}\u{10FFFF}`, PURGE_BATCH)) {
      const validTo = decodeTime(indexKey, 1);
      const { key, next } = decodeKey(indexKey, 1 + TIME_WIDTH);
      const validFrom = decodeTime(indexKey, next);
      this.dropVersion(key, { validFrom, value: null, validTo });
    }
    if (bound < 1) return;
    for (const { key: indexKey } of this.history.range("y", `y${encodeTime(bound - 1)}\u{10FFFF}`, PURGE_BATCH)) {
      const timestamp = decodeTime(indexKey, 1);
      const { key } = decodeKey(indexKey, 1 + TIME_WIDTH);
      this.clearTombstone(key, timestamp);
    }
  }
}

/** A versioned store as processors see it: typed keys and values, serialized with the store's serdes. */
export class VersionedKeyValueStore<K, V> {
  constructor(
    readonly name: string,
    private readonly raw: RawVersionedStore,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  get(key: K): VersionedRecord<V> | undefined {
    return this.decode(this.raw.get(this.keySerde.serialize(key)));
  }

  getAsOf(key: K, asOf: number): VersionedRecord<V> | undefined {
    return this.decode(this.raw.getAsOf(this.keySerde.serialize(key), asOf));
  }

  /** See `RawVersionedStore.put`. */
  put(key: K, value: V | null, timestamp: number): number {
    return this.raw.put(this.keySerde.serialize(key), value === null ? null : this.valueSerde.serialize(value), timestamp);
  }

  delete(key: K, timestamp: number): VersionedRecord<V> | undefined {
    return this.decode(this.raw.delete(this.keySerde.serialize(key), timestamp));
  }

  private decode(record: VersionedRecord<string> | undefined): VersionedRecord<V> | undefined {
    return record && { ...record, value: decodeStored(this.name, this.valueSerde, record.value, "value") };
  }
}
