/**
 * Key-value stores of a task kept in its Durable Object SQLite (`kv` table), synchronous so that
 * processing runs inside one `transactionSync`.
 */
import { Sql, sql } from "../storage/sql";
import type { KeyValue } from "../streams/record";
import type { RawKeyValueStore, StoreBackend } from "../streams/state/key-value-store";

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

  /**
   * Applies writes in order (null deletes), as restoration replays a changelog: runs of puts go
   * in multi-row upserts, where a later row for the same key wins as it would one by one.
   */
  writeAll(writes: readonly { key: string; value: string | null }[]): void {
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
        this.delete(write.key);
      } else run.push({ key: write.key, value: write.value });
    }
    flush();
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
