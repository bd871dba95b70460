/**
 * Key-value stores of a task kept in its Durable Object SQLite, synchronous so that processing
 * runs inside one `transactionSync`. A store is pages of sorted keys, one row each (`kv_pages`,
 * `PagedStore`): a commit writes a row per page it touched, not per key. Each entry keeps its
 * value's timestamp.
 *
 * In memory, besides the pages' own bounded cache:
 * - a bounded cache (an LRU) of the entries read or written last, so that a key read again costs
 *   no search;
 * - inside a transaction, writes are held per key and written when their commit comes
 *   (`flushWrites`, called by `TaskStorage.transaction` or by the task's commit): a key written
 *   many times in a commit is written once, and each page touched is rewritten once. A task that
 *   defers its commit keeps them held across transactions, and every read sees them (its queries
 *   read processed but uncommitted state, as Kafka Streams' do). Outside a transaction, writes go
 *   straight to SQLite. Range and prefix reads lay the held writes over what the pages hold
 *   (inside a transaction, past a few hundred held writes, they write them first, which the
 *   backend counts: see `SqliteStoreBackend.flushes`).
 * A transaction that rolls back, or a change of the table behind the stores' back (a wipe), must
 * drop all three (`forget()`; `TaskStorage.onReset` does it).
 */
import { RecordTooLarge } from "../log/errors";
import { type Sql, sql } from "../storage/sql";
import type { KeyValue } from "../streams/record";
import {
  compareKeys,
  NO_TIMESTAMP,
  overlayEntries,
  type RawKeyValueStore,
  type StoreBackend,
  type TimestampedKeyValue,
  type ValueAndTimestamp,
} from "../streams/state/key-value-store";
import { PagedStore, type StoreCacheLimits, type StoreWrite } from "./paged-store";
import { SqlPageRows } from "./page-rows";
import { entryFitsInRow, MAX_ENTRY_BYTES } from "./store-page";

export type { StoreCacheLimits, StoreWrite };

/** Upper bound for "every key with this prefix": no UTF-8 key sorts above it. */
const AFTER_ALL = "\u{10FFFF}\u{10FFFF}";

/**
 * Most held writes a range read looks over (each read compares every one with its bounds); past
 * this many, the read writes them first, as it always did.
 */
const MERGE_MAX_HELD = 256;

export const DEFAULT_CACHE_LIMITS: StoreCacheLimits = { maxEntries: 10_000, maxChars: 4 << 20 };

/** Whether a storage transaction is open now (writes may then wait for its end). */
export interface TransactionScope {
  readonly inTransaction: boolean;
}

const NEVER_IN_TRANSACTION: TransactionScope = { inTransaction: false };

type Entry = ValueAndTimestamp<string>;

export class SqliteKeyValueStore implements RawKeyValueStore {
  /** Key → value and timestamp, or null when the key is known to be absent; least recently used first. */
  private readonly cache = new Map<string, Entry | null>();
  private cachedChars = 0;
  /** Writes not yet in SQLite (of the open transaction, or of a deferred commit): key → value and timestamp, or null for a delete. */
  private readonly held = new Map<string, Entry | null>();
  /** What SQLite holds of the store, in pages. */
  private readonly pages: PagedStore;

  constructor(
    db: Sql,
    readonly store: string,
    private readonly limits: StoreCacheLimits = DEFAULT_CACHE_LIMITS,
    private readonly scope: TransactionScope = NEVER_IN_TRANSACTION,
    /** Told each time held writes are written to SQLite. */
    private readonly onFlushed: () => void = () => {},
  ) {
    this.pages = new PagedStore(new SqlPageRows(db), store, limits);
  }

  get(key: string): string | undefined {
    return this.getWithTimestamp(key)?.value;
  }

  getWithTimestamp(key: string): Entry | undefined {
    const held = this.held.get(key);
    if (held !== undefined) return held ?? undefined;
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      // Most recently used goes last — once the cache is half full: until then nothing is evicted
      // soon, and moving every hit (a delete and an insert) would cost each read for nothing.
      if (this.halfFull()) {
        this.cache.delete(key);
        this.cache.set(key, hit);
      }
      return hit ?? undefined;
    }
    const entry = this.pages.get(key);
    this.remember(key, entry ?? null);
    return entry;
  }

  put(key: string, value: string, timestamp = NO_TIMESTAMP): void {
    // Refused here, where processing can handle it, rather than at the commit: a page holds it whole.
    if (!entryFitsInRow(key, value)) throw new RecordTooLarge(`store ${this.store}: an entry takes at most ${MAX_ENTRY_BYTES} bytes stored`);
    const entry = { value, timestamp };
    this.write(key, entry);
  }

  delete(key: string): void {
    this.write(key, null);
  }

  private write(key: string, entry: Entry | null): void {
    if (this.scope.inTransaction) this.held.set(key, entry);
    else {
      this.held.delete(key);
      this.pages.apply([{ key, value: entry?.value ?? null, timestamp: entry?.timestamp }]);
    }
    this.remember(key, entry);
  }

  /**
   * Writes the held writes to SQLite: each page they touch rewritten once. Call inside the
   * transaction that commits them, which makes the rewrite atomic (it must stay in there).
   */
  flushWrites(): void {
    if (this.held.size === 0) return;
    const writes: StoreWrite[] = new Array(this.held.size);
    let i = 0;
    this.held.forEach((entry, key) => {
      writes[i++] = { key, value: entry?.value ?? null, timestamp: entry?.timestamp };
    });
    this.held.clear();
    this.pages.apply(writes);
    this.onFlushed();
  }

  /** Drops the cached copies and the held writes: the table may hold something else now (a rollback, a wipe). */
  forget(): void {
    this.cache.clear();
    this.cachedChars = 0;
    this.held.clear();
    this.pages.forget();
  }

  /**
   * What SQLite holds of `key`: the committed value, without the held writes or the entry cache
   * (which carry processed but uncommitted writes). Outside a transaction only (a subscription's
   * snapshot, src/task/committed-read.ts).
   */
  committedGet(key: string): string | undefined {
    return this.pages.get(key)?.value;
  }

  /** What SQLite holds of the keys with `prefix`, in key order, at most `limit` (-1: all): as `committedGet`. */
  committedPrefix(prefix: string, limit = -1): KeyValue<string, string>[] {
    return this.pages.range(prefix, prefix + AFTER_ALL, "excluded", limit).map(({ key, value }) => ({ key, value }));
  }

  private halfFull(): boolean {
    return this.cache.size * 2 >= this.limits.maxEntries || this.cachedChars * 2 >= this.limits.maxChars;
  }

  /** The number of cached entries (for tests). */
  cachedEntries(): number {
    return this.cache.size;
  }

  /** Pages of the store, and how many are cached (for tests). */
  pageStats(): { pages: number; cachedPages: number } {
    return this.pages.stats();
  }

  private remember(key: string, entry: Entry | null): void {
    const previous = this.cache.get(key);
    const chars = key.length + (entry?.value.length ?? 0);
    // An entry too big for a fair share of the cache is read from its page each time.
    const fits = chars <= this.limits.maxChars / 16;
    if (previous !== undefined) {
      this.cachedChars -= key.length + (previous?.value.length ?? 0);
      // Replaced where it is while the cache is less than half full, as a read's hit stays where
      // it is: nothing is evicted soon, and moving it (a delete and an insert) costs every write.
      if (fits && !this.halfFull()) {
        this.cache.set(key, entry);
        this.cachedChars += chars;
        return;
      }
      this.cache.delete(key);
    }
    if (!fits) return;
    this.cache.set(key, entry);
    this.cachedChars += chars;
    while (this.cache.size > this.limits.maxEntries || this.cachedChars > this.limits.maxChars) {
      const [oldest, old] = this.cache.entries().next().value as [string, Entry | null];
      this.cache.delete(oldest);
      this.cachedChars -= oldest.length + (old?.value.length ?? 0);
    }
  }

  /**
   * Applies writes in order (null deletes), as restoration replays a changelog: a later write for
   * a key wins, and each page touched is written once (rows = pages, not records).
   */
  writeAll(writes: readonly StoreWrite[]): void {
    this.flushWrites();
    this.pages.apply(writes);
    // Restoration writes many keys once; the entry cache is left to fill again from reads.
    this.cache.clear();
    this.cachedChars = 0;
  }

  range(from?: string, to?: string, limit = -1): KeyValue<string, string>[] {
    return this.rangeWithTimestamps(from, to, limit).map(({ key, value }) => ({ key, value }));
  }

  rangeWithTimestamps(from?: string, to?: string, limit = -1): TimestampedKeyValue<string, string>[] {
    return this.read(from ?? "", to ?? AFTER_ALL, "included", limit);
  }

  prefix(prefix: string, limit = -1): KeyValue<string, string>[] {
    return this.read(prefix, prefix + AFTER_ALL, "excluded", limit).map(({ key, value }) => ({ key, value }));
  }

  /**
   * The keys from `lower` to `upper` (`compareKeys`' order), at most `limit` (-1 for all), with
   * the held writes over them, so that a range read inside a transaction need not write them
   * first (a windowed aggregation reads a range for each record). Inside a transaction, past
   * `MERGE_MAX_HELD` held writes, they are written first; outside one (a query of a task whose
   * commit is deferred) nothing may be written: the read lays them all over.
   */
  private read(lower: string, upper: string, end: "included" | "excluded", limit: number): TimestampedKeyValue<string, string>[] {
    if (this.scope.inTransaction && this.held.size > MERGE_MAX_HELD) this.flushWrites();
    const inRange = (key: string) => compareKeys(key, lower) >= 0 && (end === "included" ? compareKeys(key, upper) <= 0 : compareKeys(key, upper) < 0);
    const over: { key: string; value: string | null; timestamp: number }[] = [];
    for (const [key, entry] of this.held) {
      if (inRange(key)) over.push({ key, value: entry?.value ?? null, timestamp: entry?.timestamp ?? NO_TIMESTAMP });
    }
    if (over.length === 0) return this.pages.range(lower, upper, end, limit);
    return overlayEntries(this.pages.range(lower, upper, end, limit < 0 ? -1 : limit + over.length), over, limit < 0 ? undefined : limit);
  }
}

export class SqliteStoreBackend implements StoreBackend {
  private readonly stores = new Map<string, SqliteKeyValueStore>();
  /**
   * How many times a store wrote its held writes to SQLite: a task that would defer its commit
   * must commit after all when a read had to write them during its transaction.
   */
  private flushCount = 0;

  get flushes(): number {
    return this.flushCount;
  }

  constructor(
    private readonly db: Sql,
    private readonly limits: StoreCacheLimits = DEFAULT_CACHE_LIMITS,
    private readonly scope: TransactionScope = NEVER_IN_TRANSACTION,
  ) {}

  keyValue(storeName: string): SqliteKeyValueStore {
    let store = this.stores.get(storeName);
    if (!store) this.stores.set(storeName, (store = new SqliteKeyValueStore(this.db, storeName, this.limits, this.scope, () => this.flushCount++)));
    return store;
  }

  /** Drops the content of every store (a wipe). */
  clear(): void {
    this.forget();
    this.db.run(sql`DELETE FROM kv_pages`);
  }

  /** Writes every store's held writes (in the transaction that commits them). */
  flushWrites(): void {
    for (const store of this.stores.values()) store.flushWrites();
  }

  /** Drops every store's cached copy and held writes (a transaction rolled back, or the table was cleared). */
  forget(): void {
    for (const store of this.stores.values()) store.forget();
  }
}
