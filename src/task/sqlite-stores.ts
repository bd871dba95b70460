/**
 * Key-value stores of a task kept in its Durable Object SQLite (`kv` table), synchronous so that
 * processing runs inside one `transactionSync`.
 */
import { Sql, sql } from "../storage/sql";
import type { KeyValue } from "../streams/record";
import type { RawKeyValueStore, StoreBackend } from "../streams/state/key-value-store";

/** Upper bound for "every key with this prefix": no UTF-8 key sorts above it. */
const AFTER_ALL = "\u{10FFFF}\u{10FFFF}";

export class SqliteKeyValueStore implements RawKeyValueStore {
  constructor(
    private readonly db: Sql,
    readonly store: string,
  ) {}

  get(key: string): string | undefined {
    return this.db.one<{ value: string }>(sql`SELECT value FROM kv WHERE store = ${this.store} AND key = ${key}`)?.value;
  }

  put(key: string, value: string): void {
    this.db.run(sql`INSERT INTO kv (store, key, value) VALUES (${this.store}, ${key}, ${value})
                    ON CONFLICT (store, key) DO UPDATE SET value = excluded.value`);
  }

  delete(key: string): void {
    this.db.run(sql`DELETE FROM kv WHERE store = ${this.store} AND key = ${key}`);
  }

  range(from?: string, to?: string, limit = -1): KeyValue<string, string>[] {
    return this.db.all<{ key: string; value: string }>(
      sql`SELECT key, value FROM kv WHERE store = ${this.store} AND key >= ${from ?? ""} AND key <= ${to ?? AFTER_ALL}
          ORDER BY key LIMIT ${limit}`,
    );
  }

  prefix(prefix: string, limit = -1): KeyValue<string, string>[] {
    return this.db.all<{ key: string; value: string }>(
      sql`SELECT key, value FROM kv WHERE store = ${this.store} AND key >= ${prefix} AND key < ${prefix + AFTER_ALL}
          ORDER BY key LIMIT ${limit}`,
    );
  }
}

export class SqliteStoreBackend implements StoreBackend {
  private readonly stores = new Map<string, SqliteKeyValueStore>();

  constructor(private readonly db: Sql) {}

  keyValue(storeName: string): SqliteKeyValueStore {
    let store = this.stores.get(storeName);
    if (!store) this.stores.set(storeName, (store = new SqliteKeyValueStore(this.db, storeName)));
    return store;
  }

  /** Drops the content of every store (a wipe). */
  clear(): void {
    this.db.run(sql`DELETE FROM kv`);
  }
}
