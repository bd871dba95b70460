/**
 * Adaptive batching: a task that finds at least a batch of input waiting is under load and takes
 * up to `maxLoadedBatchRecords` per commit; one that finds little takes `maxBatchRecords` and is
 * not under load, so each arrival is processed at once. Under load, commits come one commit interval
 * apart, counted from each commit's start. `drain` never lingers.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { partitionForKey } from "../src/log/partitioner";
import { StreamTask } from "../src/task/stream-task";
import { totalsApp } from "./support/totals-app";
import { TestDriver } from "../src/testing/test-driver";
import { application } from "./support/orders-app";

const orders = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ key: `c${(from + i) % 7}`, value: JSON.stringify({ amount: 1 }) }));

type Options = Omit<ConstructorParameters<typeof StreamTask>[0], "application" | "log" | "storage">;

/** A fresh active instance of task 0_0 of the totals app `id` in a task object, its log, input partition and app. */
async function withPacingTask(
  id: string,
  options: Options,
  body: (t: { task: StreamTask; log: DurableLog; app: ReturnType<typeof totalsApp>; input: { topic: string; partition: number } }) => Promise<void>,
): Promise<void> {
  const app = totalsApp(id);
  const log = new DurableLog(env.LOG_PARTITION, app.catalog);
  const input = { topic: `${id}-orders`, partition: 0 };
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
    const task = new StreamTask({ application: app, log, storage: state.storage, ...options });
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    await body({ task, log, app, input });
  });
}

describe("adaptive batching", () => {
  it("takes larger commits while input waits in batches, and single records at once when it does not", async () => {
    const id = "pacing";
    await withPacingTask(id, { maxBatchRecords: 10, maxLoadedBatchRecords: 50 }, async ({ task, log, app, input }) => {
      const position = () => task.positions()[`${id}-orders/0`] ?? 0;

      // Not under load yet: the first commit takes a batch, and finds more waiting than that.
      await log.append(input, orders(100));
      expect(await task.step()).toBe("more");
      expect(position()).toBe(10);
      expect([task.loaded, task.backlog]).toEqual([true, true]);
      // Under load: up to maxLoadedBatchRecords per commit.
      expect(await task.step()).toBe("more");
      expect(position()).toBe(60);
      expect(await task.step()).toBe("more");
      expect(position()).toBe(100);
      expect([task.loaded, task.backlog]).toEqual([true, false]);
      // Nothing left: no longer under load.
      expect(await task.step()).toBe("idle");
      expect([task.loaded, task.backlog]).toEqual([false, false]);

      // A single arrival is a small commit that leaves the task not under load.
      await log.append(input, orders(1, 100));
      expect(await task.step()).toBe("more");
      expect(position()).toBe(101);
      expect([task.loaded, task.backlog]).toEqual([false, false]);
      // Every update still made its changelog and output record (no coalescing).
      const changelog = app.changelogPartitions("0_0")[0]!;
      expect((await log.offsets(changelog)).latest).toBe(101);
      expect((await log.offsets({ topic: `${id}-out`, partition: 0 })).latest).toBe(101);
      expect(JSON.parse(task.queries.get(`${id}-totals`, "c0")!)).toEqual({ count: 15, sum: 15 });
    });
  });

  it("stays under load through the commit that takes the rest of a backlog, however little is left", async () => {
    const id = "pacing-backlog";
    await withPacingTask(id, { maxBatchRecords: 10, maxLoadedBatchRecords: 50 }, async ({ task, log, input }) => {
      await log.append(input, orders(65));
      expect(await task.step()).toBe("more");
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, true]);
      // 5 left, less than a batch: still the same busy spell, so the driver lingers before the next commit.
      expect(await task.step()).toBe("more");
      expect(task.positions()[`${id}-orders/0`]).toBe(65);
      expect([task.loaded, task.backlog]).toEqual([true, false]);
      // Then little arrives: no longer under load, each arrival is committed at once.
      await log.append(input, orders(3, 65));
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([false, false]);
    });
  });

  it("under load, commits one commit interval after the last commit began, whatever that commit took", async () => {
    const clock = { now: 1_000_000 };
    await withPacingTask("pacing-interval", { maxBatchRecords: 10, commitIntervalMs: 250, clock: () => clock.now }, async ({ task, log, input }) => {
      // Not under load: whatever arrives is committed at once.
      expect(task.nextCommitAt()).toBe(clock.now);

      await log.append(input, orders(100));
      const began = clock.now;
      expect(await task.step()).toBe("more");
      expect(task.loaded).toBe(true);
      // The commit took 40 ms: the next is due 250 ms after it began, not after it ended.
      clock.now += 40;
      expect(task.nextCommitAt()).toBe(began + 250);
      // A commit that took longer than the interval leaves the next one due at once.
      clock.now = began + 300;
      expect(task.nextCommitAt()).toBe(clock.now);
    });
  });

  it("under load, takes the input progress to the group with the commit that ends a cycle, not when the interval next comes round", async () => {
    const clock = { now: 1_000_000 };
    await withPacingTask("pacing-offsets", { maxBatchRecords: 10, maxLoadedBatchRecords: 50, clock: () => clock.now }, async ({ task, log, app, input }) => {
      const group = async () => (await log.committedOffset(app.groupId, input))?.offset ?? null;
      await log.append(input, orders(100));
      // The instance's first commit goes to the group at once.
      expect(await task.step()).toBe("more");
      expect(await group()).toBe(10);
      // Within the interval, a commit that leaves input behind does not.
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, true]);
      expect(await group()).toBe(10);
      // The commit that takes the rest ends the cycle: the group hears of it now.
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, false]);
      expect(await group()).toBe(100);
    });
  });

  it("drains a backlog of many batches in one drain, without lingering", async () => {
    const driver = new TestDriver(env, application);
    const key = "pacing-drain";
    const taskId = `0_${partitionForKey(key, 4)}`;
    await driver.runUntilQuiet();
    const instance = (await driver.instances()).find((i) => i.taskId === taskId && i.role === "active")!;
    await driver.pipe(
      "orders",
      Array.from({ length: 2_500 }, () => ({ key, value: { amount: 2 } })),
    );
    // Alarms may have taken part of it (and left the rest to a linger): one drain does the rest now.
    await driver.task(instance).drain();
    expect(await driver.get("totals", key)).toEqual({ count: 2_500, sum: 5_000 });
  });
});
