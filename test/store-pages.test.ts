/**
 * Stores as pages in a task object's SQLite (`kv_pages`): what a commit writes, counted by
 * SQLite itself (a cursor's `rowsWritten`), is a row per page touched — a commit updating 100 keys
 * of one page writes one row for the store, at the active task and at a restoring instance — and
 * an object whose stores were written under the old schema (`kv`, one row per key) keeps every
 * entry through migration 7.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { compareKeys } from "../src/streams/state/key-value-store";
import { DEFAULT_CACHE_LIMITS, SqliteStoreBackend } from "../src/task/sqlite-stores";
import { StreamTask } from "../src/task/stream-task";
import { TaskStorage } from "../src/task/task-storage";
import { storedEntries } from "./support/store-rows";
import { migrate } from "../src/storage/migrations";
import { Sql } from "../src/storage/sql";
import { taskMigrations } from "../src/task/schema";
import { totalsApp } from "./support/totals-app";

/** `storage` whose SQL statements' rows written are summed per table named after INSERT INTO / DELETE FROM / UPDATE. */
function countingRows(storage: DurableObjectStorage): { storage: DurableObjectStorage; written: (table: string) => number } {
  const cursors: { table: string; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> }[] = [];
  const sql = new Proxy(storage.sql, {
    get(target, property) {
      if (property !== "exec") return Reflect.get(target, property);
      return (text: string, ...values: SqlStorageValue[]) => {
        const cursor = target.exec(text, ...values);
        const table = /^\s*(?:INSERT INTO|DELETE FROM|UPDATE)\s+(\w+)/i.exec(text)?.[1];
        if (table) cursors.push({ table, cursor });
        return cursor;
      };
    },
  });
  const counted = new Proxy(storage, {
    get(target, property) {
      if (property === "sql") return sql;
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { storage: counted, written: (table) => cursors.filter((c) => c.table === table).reduce((sum, c) => sum + c.cursor.rowsWritten, 0) };
}

describe("stores in pages", () => {
  it("write one row for a commit updating 100 keys of one page, at the active task and at a restore", async () => {
    const id = "pages-rows";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-orders`, partition: 0 };
    const store = `${id}-totals`;
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const { storage, written } = countingRows(state.storage);
      const task = new StreamTask({ application: app, log, storage });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      const customers = Array.from({ length: 100 }, (_, i) => `customer-${String(i).padStart(3, "0")}`);
      const orders = (amount: number) => customers.map((key) => ({ key, value: JSON.stringify({ amount }) }));

      await log.append(input, orders(1));
      expect(await task.step()).toBe("more");
      expect(written("kv_pages")).toBe(1);
      // The same 100 keys again, in a later commit: one row rewritten.
      await log.append(input, orders(2));
      expect(await task.step()).toBe("more");
      expect(written("kv_pages")).toBe(2);
      expect(storedEntries(state.storage.sql, store)).toHaveLength(100);
      expect(JSON.parse(task.queries.get(store, "customer-042")!)).toEqual({ count: 2, sum: 3 });
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM kv_pages WHERE store = ?", store).one().n).toBe(1);

      // Restoration from the changelog (200 records: 100 keys twice) writes the page once.
      task.wipe();
      const before = written("kv_pages");
      const meta = task.meta()!;
      const changelog = app.changelogPartitions("0_0")[0]!;
      const fetched = await log.fetch(changelog, 0, { maxRecords: 1000, maxBytes: 1 << 20 });
      expect(fetched.records).toHaveLength(200);
      const reply = task.applyRestoreBatch({
        ...changelog,
        incarnation: meta.incarnation,
        fromOffset: 0,
        nextOffset: fetched.nextOffset,
        earliest: 0,
        end: fetched.latest,
        records: fetched.records,
      });
      expect(reply.applied).toBe(true);
      expect(written("kv_pages") - before).toBe(1);
      expect(JSON.parse(task.queries.get(store, "customer-042")!)).toEqual({ count: 2, sum: 3 });
    });
  });

  it("keep every entry an object wrote under the old schema (kv, a row per key) through migration 7", async () => {
    await runInDurableObject(env.TASK_OBJECT.getByName("pages-migration@x"), (_, state) => {
      // The object as the old schema left it (migrations 1–6: kv, a row per key), then rows of kv
      // in three stores.
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        for (const { name } of sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
          .toArray())
          sql.exec(`DROP TABLE ${name}`);
        migrate(
          new Sql(sql),
          taskMigrations.filter((m) => m.id <= 6),
        );
      });
      const old = new Map<string, { key: string; value: string; timestamp: number }[]>();
      const stores = { big: 2500, "é-store": 3, small: 1 };
      for (const [store, count] of Object.entries(stores)) {
        for (let i = 0; i < count; i++) {
          // Non-ASCII and astral keys among ASCII ones, and values of all sizes.
          const key = [`k${i}`, `é${i}`, `😀${i}`, `\uFFFD${i}`][i % 4]!;
          const value = "v".repeat(i % 97) + (i % 13 === 0 ? "x".repeat(5000) : "");
          state.storage.sql.exec("INSERT INTO kv (store, key, value, timestamp) VALUES (?, ?, ?, ?)", store, key, value, i);
        }
      }
      for (const store of Object.keys(stores)) {
        old.set(
          store,
          state.storage.sql
            .exec<{ key: string; value: string; timestamp: number }>("SELECT key, value, timestamp FROM kv WHERE store = ? ORDER BY key", store)
            .toArray(),
        );
      }

      // The task's storage, as a deploy of this version opens it, migrates.
      const storage = new TaskStorage(state.storage);
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'kv'").one().n).toBe(0);
      const backend = new SqliteStoreBackend(storage.db, DEFAULT_CACHE_LIMITS, storage);
      for (const [store, rows] of old) {
        expect(rows).toHaveLength(stores[store as keyof typeof stores]);
        // SQLite's order of kv (BINARY) was the stores' order, as the pages keep it.
        expect(rows.map((r) => r.key)).toEqual(rows.map((r) => r.key).sort(compareKeys));
        expect(JSON.stringify(backend.keyValue(store).rangeWithTimestamps())).toBe(JSON.stringify(rows));
        expect(storedEntries(state.storage.sql, store)).toEqual(rows);
        for (const row of rows.slice(0, 50)) expect(backend.keyValue(store).getWithTimestamp(row.key)).toEqual({ value: row.value, timestamp: row.timestamp });
      }
      // The big store is many pages, each under a row's cap; the others one each.
      const pages = state.storage.sql
        .exec<{ store: string; n: number; largest: number }>(
          "SELECT store, COUNT(*) AS n, MAX(LENGTH(CAST(entries AS BLOB))) AS largest FROM kv_pages GROUP BY store",
        )
        .toArray();
      const big = pages.find((p) => p.store === "big")!;
      expect(big.n).toBeGreaterThan(10);
      expect(big.largest).toBeLessThanOrEqual(1 << 20);
      expect(pages.find((p) => p.store === "small")!.n).toBe(1);
      // Written after the migration, the stores go on from there.
      storage.transaction(() => backend.keyValue("small").put("k0", "new", 7));
      expect(backend.keyValue("small").rangeWithTimestamps()).toEqual([{ key: "k0", value: "new", timestamp: 7 }]);
    });
  });
});
