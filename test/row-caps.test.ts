/**
 * No stored row above 1 MiB (Durable Object SQLite refuses rows above 2 MB in production, while
 * local workerd allows 4 MiB, so these tests check the sizes themselves): a commit whose input
 * turns into 8 MB of output is split into outbox rows and log rows of at most 1 MiB each and
 * delivered exactly once, in order; a single record too large for the log goes through the
 * production error handler (dropped with "continue"), and with "fail" stops the task — even under
 * the "retry" policy, since it would fail the same commit on every attempt.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import { MAX_RECORD_BYTES } from "../src/log/records";
import { MAX_ROW_BYTES } from "../src/log/stored-batch";
import { Serdes, StreamsBuilder } from "../src/streams";
import type { ErrorHandler, ProcessorContext } from "../src/streams";
import { StreamTask } from "../src/task/stream-task";

/** in → one input record becomes `copies` output records of `size` characters each → out. */
function fanOutApp(id: string, onProductionError: ErrorHandler = "fail"): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-in`, { key: Serdes.string(), value: Serdes.json<{ copies: number; size: number }>() })
    .flatMapValues((spec) => Array.from({ length: spec.copies }, (_, i) => `${i}:${"x".repeat(spec.size)}`))
    .to(`${id}-out`, { key: Serdes.string(), value: Serdes.string() });
  return new Application(
    builder.build({ applicationId: id, topics: { [`${id}-in`]: 1, [`${id}-out`]: 1 }, onProductionError, onUncaughtError: () => "retry" }),
  );
}

async function withTask(
  app: Application,
  id: string,
  body: (task: StreamTask, log: DurableLog) => Promise<void>,
  afterCommit?: (storage: DurableObjectStorage) => void,
): Promise<void> {
  const log = new DurableLog(env.LOG_PARTITION, app.catalog);
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_object, state) => {
    const onCommitStep = (step: string) => {
      if (step === "after-commit") afterCommit?.(state.storage);
    };
    const task = new StreamTask({ application: app, log, storage: state.storage, retryBackoff: { initialMs: 1, maxMs: 1 }, onCommitStep });
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    await body(task, log);
  });
}

/** The largest row of a table in an object's storage, in bytes. */
async function largestRow(stub: DurableObjectStub, table: string, columns: string): Promise<number> {
  return runInDurableObject(stub, (_object, state) => state.storage.sql.exec<{ n: number | null }>(`SELECT MAX(${columns}) AS n FROM ${table}`).one().n ?? 0);
}

describe("rows of at most 1 MiB", () => {
  it("splits a commit's 8 MB of output into outbox and log rows of at most 1 MiB, delivered once and in order", async () => {
    const id = "fan-out";
    const app = fanOutApp(id);
    // Right after the commit, before anything is sent, the outbox holds all of it.
    let outbox = { rows: 0, largest: 0 };
    const inspect = (storage: DurableObjectStorage) => {
      // The outbox's rows: the task's book (inline batches) and the batches spilled to rows of their own.
      outbox = storage.sql
        .exec<{ rows: number; largest: number }>(
          `SELECT COUNT(*) AS rows, MAX(size) AS largest FROM
             (SELECT length(records) AS size FROM outbox_spill UNION ALL SELECT length(header) + length(batches) AS size FROM task_book)`,
        )
        .one();
    };
    await withTask(
      app,
      id,
      async (task, log) => {
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: JSON.stringify({ copies: 80, size: 100_000 }) }]);
        expect(await task.step()).toBe("more");
        const out = await log.fetch({ topic: `${id}-out`, partition: 0 }, 0, { maxRecords: 1_000, maxBytes: 64 << 20 });
        expect(out.records.map((r) => Number(r.value.split(":")[0]))).toEqual(Array.from({ length: 80 }, (_, i) => i));
        expect(out.records.every((r) => r.value.length === String(Number(r.value.split(":")[0])).length + 1 + 100_000)).toBe(true);
        expect(await task.step()).toBe("idle");
      },
      inspect,
    );
    expect(outbox.rows).toBeGreaterThanOrEqual(8);
    expect(outbox.largest).toBeLessThanOrEqual(MAX_ROW_BYTES);
    const logMax = await largestRow(
      env.LOG_PARTITION.getByName(`${id}-out/0`),
      "record_batches",
      "length(records) + length(sizes) + COALESCE(length(offsets), 0)",
    );
    expect(logMax).toBeGreaterThan(100_000);
    expect(logMax).toBeLessThanOrEqual(MAX_ROW_BYTES);
    const rows = await runInDurableObject(
      env.LOG_PARTITION.getByName(`${id}-out/0`),
      (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM record_batches").one().n,
    );
    expect(rows).toBeGreaterThanOrEqual(8);
  });

  it("drops a record too large for the log with onProductionError continue, and counts it", async () => {
    const id = "too-big-continue";
    await withTask(fanOutApp(id, "continue"), id, async (task, log) => {
      await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: JSON.stringify({ copies: 2, size: MAX_RECORD_BYTES }) }]);
      expect(await task.step()).toBe("more");
      expect((await log.offsets({ topic: `${id}-out`, partition: 0 })).latest).toBe(0);
      expect(task.counters.snapshot().events.productionErrorsContinued).toBe(2);
      expect(task.meta()?.failure).toBeNull();
    });
  });

  it("stops the task on a record too large for the log, even when the policy says retry", async () => {
    const id = "too-big-fail";
    await withTask(fanOutApp(id, "fail"), id, async (task, log) => {
      await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: JSON.stringify({ copies: 1, size: MAX_RECORD_BYTES }) }]);
      expect(await task.step()).toBe("blocked");
      expect(task.meta()?.failure).toMatch(/at most 1000000/);
      expect((await log.offsets({ topic: `${id}-out`, partition: 0 })).latest).toBe(0);
    });
  });
});

/** in → a processor that forwards every record with timestamp -1 → out. */
function badTimestampApp(id: string, onProductionError: ErrorHandler): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-in`, { key: Serdes.string(), value: Serdes.string() })
    .process<string, string>(() => {
      let context: ProcessorContext<string, string>;
      return {
        init: (c) => {
          context = c;
        },
        process: (record) => context.forward({ ...record, timestamp: -1 }),
      };
    })
    .to(`${id}-out`, { key: Serdes.string(), value: Serdes.string() });
  return new Application(
    builder.build({ applicationId: id, topics: { [`${id}-in`]: 1, [`${id}-out`]: 1 }, onProductionError, onUncaughtError: () => "retry" }),
  );
}

describe("timestamps the log refuses", () => {
  it("drops a record forwarded with a negative timestamp with onProductionError continue, and goes on", async () => {
    const id = "bad-ts-continue";
    await withTask(badTimestampApp(id, "continue"), id, async (task, log) => {
      await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: "v" }]);
      expect(await task.step()).toBe("more");
      expect((await log.offsets({ topic: `${id}-out`, partition: 0 })).latest).toBe(0);
      expect(task.counters.snapshot().events.productionErrorsContinued).toBe(1);
      expect(task.pendingOutboxBatches()).toBe(0);
      expect(task.meta()?.failure).toBeNull();
    });
  });

  it("stops the task with onProductionError fail, even when the policy says retry, rather than resending a refused batch for ever", async () => {
    const id = "bad-ts-fail";
    await withTask(badTimestampApp(id, "fail"), id, async (task, log) => {
      await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k", value: "v" }]);
      expect(await task.step()).toBe("blocked");
      expect(task.meta()?.failure).toMatch(/timestamp -1/);
      expect(task.pendingOutboxBatches()).toBe(0);
    });
  });
});
