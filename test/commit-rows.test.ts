/**
 * What a commit costs in SQLite rows (issue #33): its bookkeeping — meta, checkpoints, input
 * positions, producer sequences, outbox batches — is ONE row, the task's book (task_book), however
 * many partitions it touches; the store's own rows come on top. An acknowledgement writes no row
 * of its own while input keeps coming: the next commit's book drops the batch and moves the
 * checkpoint. Counted with each SQL cursor's `rowsWritten`, by the table the statement names.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { StreamTask } from "../src/task/stream-task";
import { TaskStorage } from "../src/task/task-storage";
import { totalsApp } from "./support/totals-app";

const orders = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ key: `c${(from + i) % 7}`, value: JSON.stringify({ amount: 1 }) }));

type Written = Record<string, number>;

/** A storage whose SQL statements count the rows they write, by table (read once consumed: at `take`). */
function countingStorage(storage: DurableObjectStorage) {
  let cursors: { table: string; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> }[] = [];
  const sql = {
    exec(query: string, ...bindings: unknown[]) {
      const cursor = storage.sql.exec(query, ...bindings);
      const table = /^\s*(?:INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)/i.exec(query)?.[1] ?? "other";
      cursors.push({ table, cursor });
      return cursor;
    },
  };
  const counting = { sql, transactionSync: <T>(fn: () => T) => storage.transactionSync(fn) } as unknown as DurableObjectStorage;
  /** Rows written by table since the last `take`. */
  const take = (): Written => {
    const written: Written = {};
    for (const { table, cursor } of cursors) if (cursor.rowsWritten > 0) written[table] = (written[table] ?? 0) + cursor.rowsWritten;
    cursors = [];
    return written;
  };
  return { storage: counting, take };
}

describe("rows a commit writes", () => {
  it("writes its bookkeeping as one row, and an acknowledgement as none of its own while commits follow", async () => {
    const id = "commit-rows";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-orders`, partition: 0 };
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const { storage, take } = countingStorage(state.storage);
      // Nothing lingers: each step commits, sends, and leaves the acknowledgement for the next commit.
      const task = new StreamTask({ application: app, log, storage, lingerMs: 0 });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      await log.append(input, orders(10));
      expect(await task.step()).toBe("more");
      take();

      // A commit of 10 orders over 7 keys: 7 store rows, and one row for the changelog and output
      // batches, the input position, the producer sequences and the meta — and the acknowledgement
      // of the step before (its batches leave the outbox, its checkpoint moves) in the same row.
      await log.append(input, orders(10, 10));
      expect(await task.step()).toBe("more");
      const written = take();
      expect(written).toEqual({ kv: 7, task_book: 1 });

      // What the book now holds is what the rows say: a new instance reads the same.
      const read = new TaskStorage(state.storage);
      expect(read.positions()).toEqual({ [`${id}-orders/0`]: 20 });
      expect([...read.checkpoints().values()]).toEqual([10]);
      expect(read.meta()?.nextCommit).toBe(task.meta()?.nextCommit);

      // Quiet now: what was acknowledged is written down once, as one row (the book again).
      expect(await task.step()).toBe("idle");
      expect(take()).toEqual({ task_book: 1 });
      expect(new TaskStorage(state.storage).checkpoints().get(`${app.changelogPartitions("0_0")[0]!.topic}/0`)).toBe(20);
    });
  });
});
