/**
 * A store with Kafka Streams' caching layer (`CachingKeyValueStore`) over the change-logging one:
 * writes go to the task's record cache, reads look there first, and a flush of the cache (at each
 * commit, or when the cache evicts) writes each dirty key's latest value to the store underneath,
 * which sends it to the changelog, then hands it to the store's flush listener: the operator that
 * owns the store forwards it downstream. So consecutive updates of a key between two commits make
 * one changelog record and one downstream record, each as of the key's last update (its position
 * header, its timestamp), as Kafka's do.
 *
 * A flush that finds neither a new value nor an old one (a key created and deleted between two
 * commits) writes and forwards nothing (Kafka's optimization).
 */
import type { KeyValue } from "../record";
import { overlayEntries, type RawKeyValueStore, type TimestampedKeyValue, type ValueAndTimestamp } from "../state/key-value-store";
import type { DirtyEntry, RecordCache } from "../state/record-cache";
import type { WriteContext } from "./change-logging-store";
import type { CurrentInput, ProcessorState } from "./processor-state";
import { checkRecordForLog } from "./record-for-log";
import type { CacheReads } from "./types";

/** What a cache entry remembers of its write: the record being processed then (none in `init`). */
export type WriteOrigin = CurrentInput | undefined;

/** A flushed key: its new value (null: deleted), the old one when asked for (else null), the write's timestamp and what it happened in. */
export interface FlushedUpdate {
  readonly key: string;
  readonly newValue: ValueAndTimestamp<string> | null;
  readonly oldValue: ValueAndTimestamp<string> | null;
  readonly timestamp: number;
  readonly origin: WriteOrigin;
}

export type StoreFlushListener = (update: FlushedUpdate) => void;

/** The caching side of a store, as the operator that owns it sees it (Kafka's `CachedStateStore`). */
export interface CachedStore {
  /** Where flushed keys go; `sendOldValues` is asked at each flush (an operator added later may turn old values on). */
  setFlushListener(listener: StoreFlushListener, sendOldValues: () => boolean): void;
}

/**
 * Reads of a store with the record cache's entries over it (a cached deletion hides the stored
 * row), changing neither: the caching store's range reads, and interactive queries, which read a
 * cached store as the task sees it. A negative `limit`, like none, takes everything.
 */
export class CacheOverlay {
  constructor(
    private readonly cache: CacheReads,
    private readonly name: string,
    private readonly inner: RawKeyValueStore,
  ) {}

  get(key: string): string | undefined {
    const cached = this.cache.get(this.name, key);
    return cached ? (cached.value ?? undefined) : this.inner.get(key);
  }

  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[] {
    return this.rangeWithTimestamps(from, to, limit).map(({ key, value }) => ({ key, value }));
  }

  rangeWithTimestamps(from?: string, to?: string, limit?: number): TimestampedKeyValue<string, string>[] {
    const cached = this.cache.range(this.name, from, to);
    // Every cached key could hide a stored one: read that many more.
    const stored = this.inner.rangeWithTimestamps(from, to, more(limit, cached.length));
    return overlayEntries(stored, cached, bounded(limit));
  }

  prefix(prefix: string, limit?: number): KeyValue<string, string>[] {
    const cached = this.cache.range(this.name, prefix).filter(({ key }) => key.startsWith(prefix));
    const stored = this.inner.prefix(prefix, more(limit, cached.length)).map((e) => ({ ...e, timestamp: 0 }));
    return overlayEntries(stored, cached, bounded(limit)).map(({ key, value }) => ({ key, value }));
  }
}

/** A limit (undefined: none), or undefined for a negative one. */
function bounded(limit: number | undefined): number | undefined {
  return limit === undefined || limit < 0 ? undefined : limit;
}

/** `limit` raised by `extra`, for a read that other entries may thin out. */
function more(limit: number | undefined, extra: number): number | undefined {
  const bound = bounded(limit);
  return bound === undefined ? undefined : bound + extra;
}

export class CachingKeyValueStore implements RawKeyValueStore, CachedStore {
  private listener: StoreFlushListener | undefined;
  private sendOldValues: () => boolean = () => false;
  private readonly reads: CacheOverlay;

  constructor(
    private readonly name: string,
    private readonly inner: RawKeyValueStore,
    private readonly cache: RecordCache<WriteOrigin>,
    private readonly task: ProcessorState,
    private readonly writeContext: WriteContext,
  ) {
    cache.setFlushListener(name, (entries) => this.flushed(entries));
    this.reads = new CacheOverlay(cache, name, inner);
  }

  setFlushListener(listener: StoreFlushListener, sendOldValues: () => boolean): void {
    this.listener = listener;
    this.sendOldValues = sendOldValues;
  }

  /** Flushes this store's dirty keys (the commit flushes the whole record cache). */
  flush(): void {
    this.cache.flush(this.name);
  }

  get(key: string): string | undefined {
    return this.getWithTimestamp(key)?.value;
  }

  getWithTimestamp(key: string): ValueAndTimestamp<string> | undefined {
    const cached = this.cache.get(this.name, key);
    if (cached) return cached.value === null ? undefined : { value: cached.value, timestamp: cached.timestamp };
    const stored = this.inner.getWithTimestamp(key);
    if (stored) this.cache.putClean(this.name, key, stored.value, stored.timestamp, this.task.current);
    return stored;
  }

  put(key: string, value: string, timestamp?: number): void {
    const context = this.writeContext();
    // Refused now, with the store unchanged, rather than at the flush: the changelog could not carry it.
    const time = timestamp ?? context.timestamp;
    checkRecordForLog(`a write of store ${this.name}`, key, value, context.headers, time);
    this.cache.put(this.name, key, value, time, this.task.current);
  }

  delete(key: string): void {
    this.cache.put(this.name, key, null, this.writeContext().timestamp, this.task.current);
  }

  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[] {
    return this.reads.range(from, to, limit);
  }

  /** The store's range with the cache's entries over it (a cached deletion hides the stored row). */
  rangeWithTimestamps(from?: string, to?: string, limit?: number): TimestampedKeyValue<string, string>[] {
    return this.reads.rangeWithTimestamps(from, to, limit);
  }

  prefix(prefix: string, limit?: number): KeyValue<string, string>[] {
    return this.reads.prefix(prefix, limit);
  }

  /** Writes the flushed keys to the store underneath (and so its changelog) and tells the listener, each as of its write. */
  private flushed(entries: readonly DirtyEntry<WriteOrigin>[]): void {
    const before = this.task.current;
    const sendOldValues = this.listener !== undefined && this.sendOldValues();
    try {
      for (const entry of entries) {
        this.task.current = entry.context;
        const newValue = entry.value === null ? null : { value: entry.value, timestamp: entry.timestamp };
        if (!this.listener) {
          this.write(entry);
          continue;
        }
        const oldValue = newValue === null || sendOldValues ? (this.inner.getWithTimestamp(entry.key) ?? null) : null;
        if (newValue === null && oldValue === null) continue;
        this.write(entry);
        this.listener({ key: entry.key, newValue, oldValue: sendOldValues ? oldValue : null, timestamp: entry.timestamp, origin: entry.context });
      }
    } finally {
      this.task.current = before;
    }
  }

  private write(entry: DirtyEntry<WriteOrigin>): void {
    if (entry.value === null) this.inner.delete(entry.key);
    else this.inner.put(entry.key, entry.value, entry.timestamp);
  }
}
