/**
 * Key-value stores of a task kept in its Durable Object SQLite (`kv` table), synchronous so that
 * processing runs inside one `transactionSync`. Each row keeps its value's timestamp.
 *
 * Two in-memory layers save most statements of a commit, neither changing what a commit writes:
 * - a bounded cache (an LRU) of the entries read or written last, so that a key read again costs
 *   no query;
 * - inside a transaction, writes are held per key and written when their commit comes
 *   (`flushWrites`, called by `TaskStorage.transaction` or by the task's commit), in multi-row
 *   upserts: a key written many times in a commit costs one row write. A task that defers its
 *   commit keeps them held across transactions, and every read sees them (its queries read
 *   processed but uncommitted state, as Kafka Streams' do). Outside a transaction, writes go
 *   straight to SQLite. Range and prefix reads lay the held writes over what SQLite returns
 *   (inside a transaction, past a few hundred held writes, they write them first, which the
 *   backend counts: see `SqliteStoreBackend.flushes`).
 * A transaction that rolls back, or a change of the table behind the stores' back (a wipe), must
 * drop both (`forget()`; `TaskStorage.onReset` does it).
 */
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

/** Upper bound for "every key with this prefix": no UTF-8 key sorts above it. */
const AFTER_ALL = "\u{10FFFF}\u{10FFFF}";

/**
 * Most held writes a range read looks over (each read compares every one with its bounds); past
 * this many, the read writes them first, as it always did.
 */
const MERGE_MAX_HELD = 256;

/** A UTF-16 surrogate without its pair: SQLite keeps it as bytes that read back as U+FFFDs, not as it was. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Rows per multi-row upsert: 4 parameters each, under the 100 bound parameters per statement. */
const ROWS_PER_UPSERT = 24;
const upsertTexts = new Map<number, string>();

function upsertText(rows: number): string {
  let text = upsertTexts.get(rows);
  if (!text) {
    text = `INSERT INTO kv (store, key, value, timestamp) VALUES ${Array(rows).fill("(?, ?, ?, ?)").join(", ")}
            ON CONFLICT (store, key) DO UPDATE SET value = excluded.value, timestamp = excluded.timestamp`;
    upsertTexts.set(rows, text);
  }
  return text;
}

/**
 * The same upsert with every row in one bound parameter, a JSON array of `[key, value, timestamp]`
 * triples that SQLite takes apart itself (`json_each`, in array order, so a later one for a key
 * wins): one statement and two parameters instead of one statement and 96 parameters per 24 rows,
 * which is what a commit's store writes cost most. (`WHERE true` lets SQLite parse the `ON CONFLICT`.)
 */
const UPSERT_JSON = `INSERT INTO kv (store, key, value, timestamp) SELECT ?, j.value ->> 0, j.value ->> 1, j.value ->> 2 FROM json_each(?) AS j WHERE true
                     ON CONFLICT (store, key) DO UPDATE SET value = excluded.value, timestamp = excluded.timestamp`;
/**
 * Most UTF-16 code units of keys and values in one JSON parameter, well under the 2 MB a string
 * may have in Durable Object SQLite; a chunk whose JSON comes out much longer (one large pair,
 * many escapes) goes as plain parameters.
 */
const JSON_CHUNK_CHARS = 256 * 1024;
/**
 * JSON.stringify writes `\u` escapes only for control characters and lone surrogates; strings
 * holding those go as plain parameters, so that SQLite's JSON decoding never has to agree with
 * the platform's own string conversion on them (a literal backslash-u takes that path too).
 */
const ESCAPED = "\\u";

/** Bounds of each store's cache: entries, and UTF-16 code units of keys and values together. */
export interface StoreCacheLimits {
  readonly maxEntries: number;
  readonly maxChars: number;
}

export const DEFAULT_CACHE_LIMITS: StoreCacheLimits = { maxEntries: 10_000, maxChars: 4 << 20 };

/** Whether a storage transaction is open now (writes may then wait for its end). */
export interface TransactionScope {
  readonly inTransaction: boolean;
}

const NEVER_IN_TRANSACTION: TransactionScope = { inTransaction: false };

/** A write to apply: a value with its timestamp, or null for a delete. */
export interface StoreWrite {
  readonly key: string;
  readonly value: string | null;
  readonly timestamp?: number;
}

type Entry = ValueAndTimestamp<string>;

export class SqliteKeyValueStore implements RawKeyValueStore {
  /** Key → value and timestamp, or null when the key is known to be absent; least recently used first. */
  private readonly cache = new Map<string, Entry | null>();
  private cachedChars = 0;
  /** Writes not yet in SQLite (of the open transaction, or of a deferred commit): key → value and timestamp, or null for a delete. */
  private readonly held = new Map<string, Entry | null>();

  constructor(
    private readonly db: Sql,
    readonly store: string,
    private readonly limits: StoreCacheLimits = DEFAULT_CACHE_LIMITS,
    private readonly scope: TransactionScope = NEVER_IN_TRANSACTION,
    /** Told each time held writes are written to SQLite. */
    private readonly onFlushed: () => void = () => {},
  ) {}

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
      if (this.cache.size * 2 >= this.limits.maxEntries || this.cachedChars * 2 >= this.limits.maxChars) {
        this.cache.delete(key);
        this.cache.set(key, hit);
      }
      return hit ?? undefined;
    }
    const row = this.db.one<{ value: string; timestamp: number }>(sql`SELECT value, timestamp FROM kv WHERE store = ${this.store} AND key = ${key}`);
    const entry = row ? { value: row.value, timestamp: row.timestamp } : undefined;
    this.remember(key, entry ?? null);
    return entry;
  }

  put(key: string, value: string, timestamp = NO_TIMESTAMP): void {
    const entry = { value, timestamp };
    if (this.scope.inTransaction) this.held.set(key, entry);
    else
      this.db.run(sql`INSERT INTO kv (store, key, value, timestamp) VALUES (${this.store}, ${key}, ${value}, ${timestamp})
                         ON CONFLICT (store, key) DO UPDATE SET value = excluded.value, timestamp = excluded.timestamp`);
    this.remember(key, entry);
  }

  delete(key: string): void {
    if (this.scope.inTransaction) this.held.set(key, null);
    else this.db.run(sql`DELETE FROM kv WHERE store = ${this.store} AND key = ${key}`);
    this.remember(key, null);
  }

  /** Writes the held writes to SQLite. Call inside the transaction that commits them. */
  flushWrites(): void {
    if (this.held.size === 0) return;
    const writes = [...this.held].map(([key, entry]) => ({ key, value: entry?.value ?? null, timestamp: entry?.timestamp }));
    this.held.clear();
    this.writeRows(writes);
    this.onFlushed();
  }

  /** Drops the cached copy and the held writes: the table may hold something else now (a rollback, a wipe). */
  forget(): void {
    this.cache.clear();
    this.cachedChars = 0;
    this.held.clear();
  }

  /** The number of cached entries (for tests). */
  cachedEntries(): number {
    return this.cache.size;
  }

  private remember(key: string, entry: Entry | null): void {
    const previous = this.cache.get(key);
    if (previous !== undefined) {
      this.cache.delete(key);
      this.cachedChars -= key.length + (previous?.value.length ?? 0);
    }
    const chars = key.length + (entry?.value.length ?? 0);
    // An entry too big for a fair share of the cache is read from SQLite each time.
    if (chars > this.limits.maxChars / 16) return;
    this.cache.set(key, entry);
    this.cachedChars += chars;
    while (this.cache.size > this.limits.maxEntries || this.cachedChars > this.limits.maxChars) {
      const [oldest, old] = this.cache.entries().next().value as [string, Entry | null];
      this.cache.delete(oldest);
      this.cachedChars -= oldest.length + (old?.value.length ?? 0);
    }
  }

  /**
   * Applies writes in order (null deletes), as restoration replays a changelog: runs of puts go
   * in multi-row upserts, where a later row for the same key wins as it would one by one.
   */
  writeAll(writes: readonly StoreWrite[]): void {
    this.flushWrites();
    // Restoration writes many keys once; the cache is left to fill again from reads.
    this.forget();
    this.writeRows(writes);
  }

  private writeRows(writes: readonly StoreWrite[]): void {
    let run: { key: string; value: string; timestamp: number }[] = [];
    let chars = 0;
    const flush = () => {
      if (run.length > 0) this.upsertRows(run);
      run = [];
      chars = 0;
    };
    for (const write of writes) {
      if (write.value === null) {
        flush();
        this.db.run(sql`DELETE FROM kv WHERE store = ${this.store} AND key = ${write.key}`);
        continue;
      }
      const size = write.key.length + write.value.length;
      if (chars + size > JSON_CHUNK_CHARS) flush();
      run.push({ key: write.key, value: write.value, timestamp: write.timestamp ?? NO_TIMESTAMP });
      chars += size;
    }
    flush();
  }

  /** Upserts rows in order (a later row for a key wins): as one JSON parameter when it carries them exactly. */
  private upsertRows(rows: readonly { key: string; value: string; timestamp: number }[]): void {
    const triples: [string, string, number][] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) triples[i] = [rows[i]!.key, rows[i]!.value, rows[i]!.timestamp];
    const json = JSON.stringify(triples);
    if (json.length <= 2 * JSON_CHUNK_CHARS && !json.includes(ESCAPED)) {
      this.db.run({ text: UPSERT_JSON, values: [this.store, json] });
      return;
    }
    for (let start = 0; start < rows.length; start += ROWS_PER_UPSERT) {
      const some = rows.slice(start, start + ROWS_PER_UPSERT);
      this.db.run({ text: upsertText(some.length), values: some.flatMap((r) => [this.store, r.key, r.value, r.timestamp]) });
    }
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
   * The keys from `lower` to `upper` (SQLite's order, which `compareKeys` follows), at most
   * `limit` (-1 for all), with the held writes over them, so that a range read inside a
   * transaction need not write them first (a windowed aggregation reads a range for each record:
   * each would cost a statement of its own). Inside a transaction, past `MERGE_MAX_HELD` held
   * writes, or with a key or value SQLite would not keep as it is (a lone surrogate), they are
   * written first, so that the read returns what it would have. Outside one (a query of a task
   * whose commit is deferred) nothing may be written: the read lays them all over, and such a key
   * or value shows as it was put.
   */
  private read(lower: string, upper: string, end: "included" | "excluded", limit: number): TimestampedKeyValue<string, string>[] {
    const select = (rows: number) =>
      this.db.all<{ key: string; value: string; timestamp: number }>(
        end === "included"
          ? sql`SELECT key, value, timestamp FROM kv WHERE store = ${this.store} AND key >= ${lower} AND key <= ${upper} ORDER BY key LIMIT ${rows}`
          : sql`SELECT key, value, timestamp FROM kv WHERE store = ${this.store} AND key >= ${lower} AND key < ${upper} ORDER BY key LIMIT ${rows}`,
      );
    const inRange = (key: string) => compareKeys(key, lower) >= 0 && (end === "included" ? compareKeys(key, upper) <= 0 : compareKeys(key, upper) < 0);
    const mayWrite = this.scope.inTransaction;
    if (mayWrite && this.held.size > MERGE_MAX_HELD) this.flushWrites();
    const over: { key: string; value: string | null; timestamp: number }[] = [];
    for (const [key, entry] of this.held) {
      // Such a key may be stored as another one, inside the range or not; such a value reads back otherwise.
      if (mayWrite && (LONE_SURROGATE.test(key) || (inRange(key) && entry !== null && LONE_SURROGATE.test(entry.value)))) {
        this.flushWrites();
        return select(limit);
      }
      if (inRange(key)) over.push({ key, value: entry?.value ?? null, timestamp: entry?.timestamp ?? NO_TIMESTAMP });
    }
    if (over.length === 0) return select(limit);
    return overlayEntries(select(limit < 0 ? -1 : limit + over.length), over, limit < 0 ? undefined : limit);
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
    this.db.run(sql`DELETE FROM kv`);
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
