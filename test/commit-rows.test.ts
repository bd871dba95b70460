/**
 * What a commit costs in SQLite rows (issue #33): its bookkeeping — meta, checkpoints, input
 * positions, producer sequences, outbox batches — is ONE row, the task's book (task_book), however
 * many partitions it touches; the store's own rows come on top. An acknowledgement writes no row
 * of its own while input keeps coming: the next commit's book drops the batch and moves the
 * checkpoint. Counted with each SQL cursor's `rowsWritten`, by the table the statement names.
 * A commit too big for the book's row spills batches to rows of their own, which a crash at any
 * step of sending resends once.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import { Serdes, StreamsBuilder } from "../src/streams";
import type { CommitStep } from "../src/task/protocol";
import { RECORD_OWED_MS } from "../src/task/outbox-sender";
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
      // The clock stands still: the steps are a commit interval apart at most however loaded the
      // machine (input that keeps coming), so the acknowledgement waits for the next commit.
      const clock = { now: 1_000_000 };
      const task = new StreamTask({ application: app, log, storage, lingerMs: 0, clock: () => clock.now });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      await log.append(input, orders(10));
      expect(await task.step()).toBe("more");
      take();

      // A commit of 10 orders over 7 keys: one store row (the keys share a page), and one row for the changelog and output
      // batches, the input position, the producer sequences and the meta — and the acknowledgement
      // of the step before (its batches leave the outbox, its checkpoint moves) in the same row.
      await log.append(input, orders(10, 10));
      expect(await task.step()).toBe("more");
      const written = take();
      expect(written).toEqual({ kv_pages: 1, task_book: 1 });

      // What the book now holds is what the rows say: a new instance reads the same.
      const read = new TaskStorage(state.storage);
      expect(read.positions()).toEqual({ [`${id}-orders/0`]: 20 });
      expect([...read.checkpoints().values()]).toEqual([10]);
      expect(read.meta()?.nextCommit).toBe(task.meta()?.nextCommit);

      // Quiet now: what was acknowledged stays owed, in memory (a crash only resends it)...
      expect(await task.step()).toBe("idle");
      expect(take()).toEqual({});
      // ... until it has been owed RECORD_OWED_MS: then it is written down once, as one row (the book again).
      clock.now += RECORD_OWED_MS;
      expect(await task.step()).toBe("idle");
      expect(take()).toEqual({ task_book: 1 });
      expect(new TaskStorage(state.storage).checkpoints().get(`${app.changelogPartitions("0_0")[0]!.topic}/0`)).toBe(20);
    });
  });
});

/** in → one input record becomes `copies` output records of `size` characters each → out. */
function fanOutApp(id: string): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-in`, { key: Serdes.string(), value: Serdes.json<{ copies: number; size: number }>() })
    .flatMapValues((spec) => Array.from({ length: spec.copies }, (_, i) => `${i}:${"x".repeat(spec.size)}`))
    .to(`${id}-out`, { key: Serdes.string(), value: Serdes.string() });
  return new Application(builder.build({ applicationId: id, topics: { [`${id}-in`]: 1, [`${id}-out`]: 1 } }));
}

describe("a commit too big for the book's row", () => {
  for (const dieAt of ["after-commit", "mid-send", "after-send"] as const) {
    it(`spills batches to rows of their own, and after a crash at ${dieAt} delivers them once, in order, and removes their rows`, async () => {
      const id = `commit-spill-${dieAt}`;
      const app = fanOutApp(id);
      const log = new DurableLog(env.LOG_PARTITION, app.catalog);
      await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
        const spilled = () => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox_spill").one().n;
        let seen = -1;
        const restart = (onCommitStep?: (step: CommitStep) => void) => new StreamTask({ application: app, log, storage: state.storage, onCommitStep });
        await restart().assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
        // 3 MB of output: about three rows' worth, so at least two batches leave the book's row.
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: JSON.stringify({ copies: 30, size: 100_000 }) }]);
        const dying = restart((step) => {
          if (step === "after-commit") seen = spilled();
          if (step === dieAt) throw new Error("process died");
        });
        await expect(dying.step()).rejects.toThrow("process died");
        expect(seen).toBeGreaterThanOrEqual(2);
        const revived = restart();
        expect(await revived.step()).toBe("idle");
        const out = await log.fetch({ topic: `${id}-out`, partition: 0 }, 0, { maxRecords: 100, maxBytes: 64 << 20 });
        expect(out.records.map((r) => Number(r.value.split(":")[0]))).toEqual(Array.from({ length: 30 }, (_, i) => i));
        expect(revived.pendingOutboxBatches()).toBe(0);
        expect(spilled()).toBe(0);
        const largest = state.storage.sql.exec<{ n: number }>("SELECT length(header) + length(batches) AS n FROM task_book").one().n;
        expect(largest).toBeLessThan(100_000);
      });
    });
  }

  it("N commits of sparse arrivals write N book rows and no more; the group hears of them once, RECORD_OWED_MS after the first, or at once when the partition's echo asks", async () => {
    const id = "commit-rows-owed";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-orders`, partition: 0 };
    const group = async () => (await log.committedOffset(app.groupId, input))?.offset ?? null;
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const { storage, take } = countingStorage(state.storage);
      const clock = { now: 1_000_000 };
      const task = new StreamTask({ application: app, log, storage, lingerMs: 0, clock: () => clock.now });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      take();
      // Five arrivals a second apart (not streaming: each is committed, sent, and the task goes idle).
      for (let i = 0; i < 5; i++) {
        await log.append(input, orders(10, i * 10));
        expect(await task.step()).toBe("more");
        expect(await task.step()).toBe("idle");
        clock.now += 1_000;
      }
      // One book row and one store page per commit: no row of their own for acknowledgements or group offsets.
      expect(take()).toEqual({ kv_pages: 5, task_book: 5 });
      expect(await group()).toBeNull();
      // Processed, committed and sent: no lag, though the group has not heard yet.
      expect(task.deliveredPositions()).toEqual({ [`${id}-orders/0`]: 50 });
      expect(task.pendingWork().progressDueAt).toBe(1_000_000 + RECORD_OWED_MS);
      // Once owed for RECORD_OWED_MS: one group commit for all five, and one book row.
      clock.now = 1_000_000 + RECORD_OWED_MS;
      expect(await task.step()).toBe("idle");
      expect(await group()).toBe(50);
      expect(take()).toEqual({ task_book: 1 });
      expect(task.pendingWork().progressDueAt).toBeUndefined();

      // An echo (the partition's group offset behind its end) makes what is owed due at once.
      await log.append(input, orders(10, 50));
      expect(await task.step()).toBe("more");
      expect(await task.step()).toBe("idle");
      expect(await group()).toBe(50);
      task.owedDueNow();
      expect(await task.step()).toBe("idle");
      expect(await group()).toBe(60);
    });
  });
});
