/**
 * Kafka Streams' record cache (its `ThreadCache` and `NamedCache`) as pure logic: one byte budget
 * (`statestore.cache.max.bytes`) shared by the named caches of a task's stores, each an LRU map of
 * serialized keys to their latest value (or a deletion, `null`), remembering which keys are dirty
 * (written since the last flush) in the order they were last written.
 *
 * Flushing a named cache hands its dirty entries, oldest write first, to the cache's flush listener
 * in one call, then marks them clean (deletions leave the cache). When a write takes the cache over
 * its budget, the named cache written to evicts its least recently used entries until the cache
 * fits (or it has none left); evicting a dirty entry flushes that named cache first, the evicted
 * entry leading. Consecutive writes of a key between two flushes therefore reach the listener once.
 *
 * What a write happened in (the record being processed) travels with the entry as its `context`,
 * so a flush can write the store and forward downstream as of that record.
 */
import { utf8Length } from "../../log/records";
import { compareKeys } from "./key-value-store";

/** A dirty entry handed to a flush listener: the key's latest value (`null`: deleted), with its timestamp and context. */
export interface DirtyEntry<C> {
  readonly key: string;
  readonly value: string | null;
  readonly timestamp: number;
  readonly context: C;
}

/** What a cache read finds: the key's cached value (`null`: deleted in the cache) and timestamp. */
export interface CachedValue {
  readonly value: string | null;
  readonly timestamp: number;
}

export type FlushListener<C> = (entries: readonly DirtyEntry<C>[]) => void;

/** Kafka's default `statestore.cache.max.bytes`: 10 MiB. */
export const DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024;

/**
 * The estimated memory of an entry: its key and value as UTF-8, plus a fixed part for the
 * timestamp, the dirty flag and the write's position (Kafka's `LRUCacheEntry` estimate, in spirit).
 */
export function cacheEntrySize(key: string, value: string | null): number {
  return utf8Length(key) + (value === null ? 0 : utf8Length(value)) + ENTRY_OVERHEAD_BYTES;
}

/** Timestamp (8), dirty flag (1), the write's offset (8) and partition (4), and the maps' bookkeeping of the entry and its LRU place (35). */
export const ENTRY_OVERHEAD_BYTES = 56;

interface Node<C> {
  value: string | null;
  timestamp: number;
  context: C;
  dirty: boolean;
  size: number;
}

/** One store's cache within a `RecordCache`. */
class NamedCache<C> {
  /** In least recently used order: a read or write moves the key to the end. */
  readonly entries = new Map<string, Node<C>>();
  /** In the order of their last write. */
  private readonly dirtyKeys = new Set<string>();
  bytes = 0;
  listener: FlushListener<C> | undefined;

  get(key: string): Node<C> | undefined {
    const node = this.entries.get(key);
    if (node) this.touch(key, node);
    return node;
  }

  put(key: string, node: Node<C>): void {
    if (!node.dirty && this.dirtyKeys.has(key)) {
      throw new Error(`a clean entry cannot replace the dirty entry of key ${JSON.stringify(key)}: flush first`);
    }
    const previous = this.entries.get(key);
    if (previous) this.bytes -= previous.size;
    this.entries.delete(key);
    this.entries.set(key, node);
    this.bytes += node.size;
    if (node.dirty) {
      this.dirtyKeys.delete(key);
      this.dirtyKeys.add(key);
    }
  }

  get dirtyCount(): number {
    return this.dirtyKeys.size;
  }

  /** Removes the least recently used entry, flushing first when it is dirty; returns the bytes freed. */
  evictEldest(): number {
    const eldest = this.entries.keys().next();
    if (eldest.done) return 0;
    const key = eldest.value;
    const node = this.entries.get(key)!;
    this.remove(key);
    if (node.dirty) this.flush({ key, value: node.value, timestamp: node.timestamp, context: node.context });
    return node.size;
  }

  /** Hands the dirty entries (an evicted one first) to the listener and marks them clean; deletions leave the cache. */
  flush(evicted?: DirtyEntry<C>): void {
    if (!evicted && this.dirtyKeys.size === 0) return;
    const entries: DirtyEntry<C>[] = evicted ? [evicted] : [];
    const deleted: string[] = [];
    for (const key of this.dirtyKeys) {
      const node = this.entries.get(key)!;
      entries.push({ key, value: node.value, timestamp: node.timestamp, context: node.context });
      node.dirty = false;
      if (node.value === null) deleted.push(key);
    }
    // Cleared before the listener runs: it may write to this cache again (re-entrant).
    this.dirtyKeys.clear();
    this.listener?.(entries);
    for (const key of deleted) {
      const node = this.entries.get(key);
      if (node && !node.dirty && node.value === null) this.remove(key);
    }
  }

  remove(key: string): void {
    const node = this.entries.get(key);
    if (!node) return;
    this.entries.delete(key);
    this.dirtyKeys.delete(key);
    this.bytes -= node.size;
  }

  clear(): void {
    this.entries.clear();
    this.dirtyKeys.clear();
    this.bytes = 0;
  }

  private touch(key: string, node: Node<C>): void {
    this.entries.delete(key);
    this.entries.set(key, node);
  }
}

/** The record cache of one task: named caches (one per cached store) sharing one byte budget. */
export class RecordCache<C> {
  private readonly caches = new Map<string, NamedCache<C>>();

  constructor(readonly maxBytes: number = DEFAULT_CACHE_MAX_BYTES) {
    if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 0)) throw new RangeError(`a cache's size is a non-negative number of bytes, got ${maxBytes}`);
  }

  /** The listener a named cache's flushes go to (one per named cache: a later one replaces it). */
  setFlushListener(namespace: string, listener: FlushListener<C>): void {
    this.named(namespace).listener = listener;
  }

  /** A key's cached value (a deletion is `null`), undefined when the key is not cached; a hit makes it the most recently used. */
  get(namespace: string, key: string): CachedValue | undefined {
    const node = this.caches.get(namespace)?.get(key);
    return node && { value: node.value, timestamp: node.timestamp };
  }

  /** A write (dirty: it will be flushed): a value, or `null` for a deletion. May evict, and so flush. */
  put(namespace: string, key: string, value: string | null, timestamp: number, context: C): void {
    this.write(namespace, key, { value, timestamp, context, dirty: true, size: cacheEntrySize(key, value) });
  }

  /** A value read from the store underneath, kept to answer the next reads (clean: never flushed). */
  putClean(namespace: string, key: string, value: string, timestamp: number, context: C): void {
    this.write(namespace, key, { value, timestamp, context, dirty: false, size: cacheEntrySize(key, value) });
  }

  /** Flushes one named cache's dirty entries to its listener. */
  flush(namespace: string): void {
    this.caches.get(namespace)?.flush();
  }

  /** Flushes every named cache, in the order they were first used, until none has dirty entries (a flush may write to another). */
  flushAll(): void {
    for (let rounds = 0; this.dirtyCount() > 0; rounds++) {
      if (rounds > 1000) throw new Error("the record cache's flushes keep writing to each other's caches");
      for (const cache of this.caches.values()) cache.flush();
    }
  }

  /** The cached entries of a namespace with `from <= key <= to` (open bounds when missing), in key order; deletions included as `null`. */
  range(namespace: string, from?: string, to?: string): (CachedValue & { readonly key: string })[] {
    const cache = this.caches.get(namespace);
    if (!cache) return [];
    const found: (CachedValue & { key: string })[] = [];
    for (const [key, node] of cache.entries) {
      if ((from === undefined || compareKeys(key, from) >= 0) && (to === undefined || compareKeys(key, to) <= 0))
        found.push({ key, value: node.value, timestamp: node.timestamp });
    }
    return found.sort((a, b) => compareKeys(a.key, b.key));
  }

  /** Forgets a namespace's entries, dirty ones too (Kafka's `close` after its flush). */
  clear(namespace: string): void {
    this.caches.get(namespace)?.clear();
  }

  /** Bytes held by all named caches. */
  get bytes(): number {
    let total = 0;
    for (const cache of this.caches.values()) total += cache.bytes;
    return total;
  }

  /** Entries held by all named caches. */
  get size(): number {
    let total = 0;
    for (const cache of this.caches.values()) total += cache.entries.size;
    return total;
  }

  /** Dirty entries, in all named caches or in one. */
  dirtyCount(namespace?: string): number {
    if (namespace !== undefined) return this.caches.get(namespace)?.dirtyCount ?? 0;
    let total = 0;
    for (const cache of this.caches.values()) total += cache.dirtyCount;
    return total;
  }

  private write(namespace: string, key: string, node: Node<C>): void {
    const cache = this.named(namespace);
    cache.put(key, node);
    // Over budget: this named cache gives up its least recently used entries (a flush of another
    // cache's listener may have filled the rest, which this one cannot free: then it stops).
    while (this.bytes > this.maxBytes && cache.entries.size > 0) cache.evictEldest();
  }

  private named(namespace: string): NamedCache<C> {
    const found = this.caches.get(namespace);
    if (found) return found;
    const cache = new NamedCache<C>();
    this.caches.set(namespace, cache);
    return cache;
  }
}
