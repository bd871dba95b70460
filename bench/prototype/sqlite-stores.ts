/**
 * Key-value stores of a task kept in its Durable Object SQLite (`kv` table), synchronous so that
 * processing runs inside one `transactionSync`.
 */
import { Sql, sql } from "../../src/storage/sql";
import type { KeyValue } from "../../src/streams/record";
import type { RawKeyValueStore, StoreBackend } from "../../src/streams/state/key-value-store";

/** Upper bound for "every key with this prefix": no UTF-8 key sorts above it. */
const AFTER_ALL = "\u{10FFFF}\u{10FFFF}";

/** Rows per multi-row upsert: 3 parameters each, under the 100 bound parameters per statement. */
const ROWS_PER_UPSERT = 32;
const upsertTexts = new Map<number, string>();

function upsertText(rows: number): string {
  let text = upsertTexts.get(rows);
  if (!text) {
    text = `INSERT INTO kv (store, key, value) VALUES ${Array(rows).fill("(?, ?, ?)").join(", ")}
            ON CONFLICT (store, key) DO UPDATE SET value = excluded.value`;
    upsertTexts.set(rows, text);
  }
  return text;
}

/** PROTOTYPE options: `cache` keeps a write-through copy of read/written entries (null: known absent). */
export interface StoreOptions {
  readonly cache?: boolean;
  /** Puts are buffered and written at `flushWrites()` (end of commit), one multi-row upsert per 32. */
  readonly coalesce?: boolean;
}

export class SqliteKeyValueStore implements RawKeyValueStore {
  private readonly cached = new Map<string, string | null>();
  private readonly dirty = new Map<string, string | null>();

  constructor(
    private readonly db: Sql,
    readonly store: string,
    private readonly options: StoreOptions = {},
  ) {}

  get(key: string): string | undefined {
    if (this.options.coalesce && this.dirty.has(key)) return this.dirty.get(key) ?? undefined;
    if (this.options.cache) {
      const hit = this.cached.get(key);
      if (hit !== undefined) return hit ?? undefined;
    }
    const value = this.db.one<{ value: string }>(sql`SELECT value FROM kv WHERE store = ${this.store} AND key = ${key}`)?.value;
    if (this.options.cache) this.cached.set(key, value ?? null);
    return value;
  }

  put(key: string, value: string): void {
    if (this.options.coalesce) {
      this.dirty.set(key, value);
      return;
    }
    this.db.run(sql`INSERT INTO kv (store, key, value) VALUES (${this.store}, ${key}, ${value})
                    ON CONFLICT (store, key) DO UPDATE SET value = excluded.value`);
    if (this.options.cache) this.cached.set(key, value);
  }

  delete(key: string): void {
    if (this.options.coalesce) {
      this.dirty.set(key, null);
      return;
    }
    this.db.run(sql`DELETE FROM kv WHERE store = ${this.store} AND key = ${key}`);
    if (this.options.cache) this.cached.set(key, null);
  }

  /** PROTOTYPE: writes the buffered puts and deletes (call inside the commit's transaction). */
  flushWrites(): void {
    if (this.dirty.size === 0) return;
    const writes = [...this.dirty].map(([key, value]) => ({ key, value }));
    this.dirty.clear();
    const cache = this.options.cache;
    this.writeAllNow(writes);
    if (cache) for (const w of writes) this.cached.set(w.key, w.value);
  }

  /** PROTOTYPE: forgets the cache and the buffered writes (the transaction rolled back, or a wipe). */
  forget(): void {
    this.cached.clear();
    this.dirty.clear();
  }

  /**
   * Applies writes in order (null deletes), as restoration replays a changelog: runs of puts go
   * in multi-row upserts, where a later row for the same key wins as it would one by one.
   */
  writeAll(writes: readonly { key: string; value: string | null }[]): void {
    this.forget();
    this.writeAllNow(writes);
  }

  private writeAllNow(writes: readonly { key: string; value: string | null }[]): void {
    let run: { key: string; value: string }[] = [];
    const flush = () => {
      for (let start = 0; start < run.length; start += ROWS_PER_UPSERT) {
        const rows = run.slice(start, start + ROWS_PER_UPSERT);
        this.db.run({ text: upsertText(rows.length), values: rows.flatMap((r) => [this.store, r.key, r.value]) });
      }
      run = [];
    };
    for (const write of writes) {
      if (write.value === null) {
        flush();
        this.db.run(sql`DELETE FROM kv WHERE store = ${this.store} AND key = ${write.key}`);
      } else run.push({ key: write.key, value: write.value });
    }
    flush();
  }

  range(from?: string, to?: string, limit = -1): KeyValue<string, string>[] {
    this.flushWrites();
    return this.db.all<{ key: string; value: string }>(
      sql`SELECT key, value FROM kv WHERE store = ${this.store} AND key >= ${from ?? ""} AND key <= ${to ?? AFTER_ALL}
          ORDER BY key LIMIT ${limit}`,
    );
  }

  prefix(prefix: string, limit = -1): KeyValue<string, string>[] {
    this.flushWrites();
    return this.db.all<{ key: string; value: string }>(
      sql`SELECT key, value FROM kv WHERE store = ${this.store} AND key >= ${prefix} AND key < ${prefix + AFTER_ALL}
          ORDER BY key LIMIT ${limit}`,
    );
  }
}

export class SqliteStoreBackend implements StoreBackend {
  private readonly stores = new Map<string, SqliteKeyValueStore>();

  constructor(
    private readonly db: Sql,
    private readonly options: StoreOptions = {},
  ) {}

  keyValue(storeName: string): SqliteKeyValueStore {
    let store = this.stores.get(storeName);
    if (!store) this.stores.set(storeName, (store = new SqliteKeyValueStore(this.db, storeName, this.options)));
    return store;
  }

  /** Drops the content of every store (a wipe). */
  clear(): void {
    this.forgetAll();
    this.db.run(sql`DELETE FROM kv`);
  }

  /** PROTOTYPE: writes every store's buffered writes. */
  flushWrites(): void {
    for (const store of this.stores.values()) store.flushWrites();
  }

  /** PROTOTYPE: drops every store's cache and buffered writes. */
  forgetAll(): void {
    for (const store of this.stores.values()) store.forget();
  }
}
