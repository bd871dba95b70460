/**
 * A Durable Object's storage for a `PartitionStore` made in a test, counting the SQLite rows its
 * statements wrote by table (as Cloudflare bills them: indexes too), and failing a transaction on demand.
 */
import type { SqlDatabase, StorageLike } from "../../src/storage/sql";

/** The storage, counting the SQLite rows its statements wrote (as Cloudflare bills them: indexes too), and failing a transaction on demand. */
export function counted(storage: DurableObjectStorage) {
  const cursors: { table: string; query: string; cursor: { rowsWritten: number } }[] = [];
  let failNext = false;
  const sql: SqlDatabase = {
    exec: (query, ...bindings) => {
      const cursor = storage.sql.exec(query, ...bindings);
      cursors.push({ table: /(?:INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)/i.exec(query)?.[1] ?? "other", query, cursor });
      return cursor as never;
    },
  };
  const wrapped: StorageLike = {
    sql,
    transactionSync: (fn) =>
      storage.transactionSync(() => {
        const result = fn();
        if (failNext) {
          failNext = false;
          throw new Error("crash before commit");
        }
        return result;
      }),
  };
  return {
    storage: wrapped,
    /** Rows written since the last call, by table. */
    written(): Record<string, number> {
      const byTable: Record<string, number> = {};
      for (const { table, cursor } of cursors.splice(0)) if (cursor.rowsWritten > 0) byTable[table] = (byTable[table] ?? 0) + cursor.rowsWritten;
      return byTable;
    },
    /** Rows read since the last call by the statements `matching` (their cursors as far as they were read). */
    read(matching: RegExp = /./): number {
      let rows = 0;
      for (const { query, cursor } of cursors.splice(0)) if (matching.test(query)) rows += (cursor as { rowsRead?: number }).rowsRead ?? 0;
      return rows;
    },
    failNextTransaction: () => (failNext = true),
  };
}
