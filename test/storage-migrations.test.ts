/**
 * Numbered migrations (src/storage/migrations.ts) on a Durable Object's real SQLite: applied once
 * and in order, and an object whose schema is current writes no row when it starts (every start of
 * every object migrates; a row rewritten with what it holds is still billed).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type Migration, migrate } from "../src/storage/migrations";
import { Sql } from "../src/storage/sql";

/** `storage.sql` whose statements' rows written are summed. */
function counting(storage: DurableObjectStorage): { sql: SqlStorage; written: () => number } {
  const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  const sql = new Proxy(storage.sql, {
    get(target, property) {
      if (property !== "exec") return Reflect.get(target, property);
      return (text: string, ...values: SqlStorageValue[]) => {
        const cursor = target.exec(text, ...values);
        cursors.push(cursor);
        return cursor;
      };
    },
  });
  return { sql, written: () => cursors.splice(0).reduce((sum, cursor) => sum + cursor.rowsWritten, 0) };
}

const migrations: Migration[] = [
  { id: 1, description: "a table", up: (db) => db.script("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)") },
  { id: 2, description: "a row in it", up: (db) => db.script("INSERT INTO things (id, name) VALUES (1, 'first')") },
];

describe("migrations", () => {
  it("apply once, in order; a current schema writes no row when the object starts again", async () => {
    await runInDurableObject(env.TASK_OBJECT.getByName("storage-migrations@x"), (_, state) => {
      state.storage.sql.exec("DROP TABLE IF EXISTS _schema");
      const { sql, written } = counting(state.storage);
      const db = new Sql(sql);
      expect(state.storage.transactionSync(() => migrate(db, migrations.slice(0, 1)))).toBe(1);
      expect(written()).toBeGreaterThan(0);
      expect(state.storage.transactionSync(() => migrate(db, migrations))).toBe(2);
      expect(written()).toBe(2); // the row of migration 2 and the version
      expect(state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM things").one().n).toBe(1);

      expect(state.storage.transactionSync(() => migrate(db, migrations))).toBe(2);
      expect(written()).toBe(0);
      expect(state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version).toBe(2);
    });
  });

  it("refuse a gap in the numbering", async () => {
    await runInDurableObject(env.TASK_OBJECT.getByName("storage-migrations-gap@x"), (_, state) => {
      state.storage.sql.exec("DROP TABLE IF EXISTS _schema");
      const db = new Sql(state.storage.sql);
      expect(() => state.storage.transactionSync(() => migrate(db, [migrations[1]!]))).toThrow(/migration 2 follows 0/);
    });
  });
});
