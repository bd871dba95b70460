/**
 * The `kv_pages` table (migration 7, src/task/schema.ts): one row per page of a store, with the
 * page's first key as JSON (so that a key SQLite's TEXT would not keep, a lone surrogate, still
 * reads back as it was) and its entries (src/task/store-page.ts). Which page holds a key is
 * decided in memory by `compareKeys` (src/task/paged-store.ts), never by SQLite's collation.
 */
import { type Sql, sql } from "../storage/sql";
import type { PageRows } from "./paged-store";
import { emptyPage, encodeWithinRows, entryChars, PAGE_MAX_CHARS, PAGE_MAX_ENTRIES } from "./store-page";

export class SqlPageRows implements PageRows {
  constructor(private readonly db: Sql) {}

  directory(store: string): { page: number; first: string }[] {
    return this.db
      .all<{ page: number; first_key: string }>(sql`SELECT page, first_key FROM kv_pages WHERE store = ${store}`)
      .map((row) => ({ page: row.page, first: JSON.parse(row.first_key) as string }));
  }

  read(store: string, page: number): string | undefined {
    return this.db.one<{ entries: string }>(sql`SELECT entries FROM kv_pages WHERE store = ${store} AND page = ${page}`)?.entries;
  }

  write(store: string, page: number, first: string, entries: string): void {
    this.db.run(sql`INSERT INTO kv_pages (store, page, first_key, entries) VALUES (${store}, ${page}, ${JSON.stringify(first)}, ${entries})
                    ON CONFLICT (store, page) DO UPDATE SET first_key = excluded.first_key, entries = excluded.entries`);
  }

  delete(store: string, page: number): void {
    this.db.run(sql`DELETE FROM kv_pages WHERE store = ${store} AND page = ${page}`);
  }
}

/** Rows of `kv` read at a time by the migration (memory stays bounded by this and one page). */
const MOVE_CHUNK_ROWS = 1000;

/**
 * Migration 7's body: every row of `kv` (in its BINARY order, which is `compareKeys`' order for
 * what a TEXT column holds) into pages half full, so they take writes before splitting. Read in
 * chunks after the last key moved; runs in the migration's transaction, so it is all or nothing.
 */
export function movePagesFromKv(db: Sql): void {
  const rows = new SqlPageRows(db);
  let store: string | null = null;
  let page = emptyPage();
  let first = "";
  let id = 0;
  const close = () => {
    if (store === null || page.keys.length === 0) return;
    for (const piece of encodeWithinRows(page)) rows.write(store, ++id, id === 1 ? first : piece.page.keys[0]!, piece.text);
    page = emptyPage();
  };
  let after: { store: string; key: string } | null = null;
  for (;;) {
    const chunk: { store: string; key: string; value: string; timestamp: number }[] = after
      ? db.all(
          sql`SELECT store, key, value, timestamp FROM kv WHERE store > ${after.store} OR (store = ${after.store} AND key > ${after.key})
              ORDER BY store, key LIMIT ${MOVE_CHUNK_ROWS}`,
        )
      : db.all(sql`SELECT store, key, value, timestamp FROM kv ORDER BY store, key LIMIT ${MOVE_CHUNK_ROWS}`);
    for (const row of chunk) {
      if (row.store !== store) {
        close();
        store = row.store;
        id = 0;
        first = row.key;
      }
      const size = entryChars(row.key, row.value);
      if (page.keys.length > 0 && (page.chars + size > PAGE_MAX_CHARS / 2 || page.keys.length >= PAGE_MAX_ENTRIES / 2)) close();
      page.keys.push(row.key);
      page.values.push(row.value);
      page.timestamps.push(row.timestamp);
      page.chars += size;
    }
    if (chunk.length < MOVE_CHUNK_ROWS) break;
    const last = chunk[chunk.length - 1]!;
    after = { store: last.store, key: last.key };
  }
  close();
}
