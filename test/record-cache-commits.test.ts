/**
 * The record cache on the real commit path (StreamTask in a task object, a cached copy of the
 * example topology): a commit flushes the cache first, so consecutive updates of a key in one
 * commit reach the changelog and the output topic once, as of the key's last update; a crash at
 * any commit step repeats nothing and loses nothing; and a wiped instance restored from the
 * changelog resumes its input exactly where the flushed state says (I1, I5).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import type { LogRecord, TopicPartition } from "../src/log/types";
import { positionFromHeaders } from "../src/streams/runtime/position-header";
import type { CommitStep } from "../src/task/protocol";
import { StreamTask, type TaskOptions } from "../src/task/stream-task";
import { totalsApp } from "./support/totals-app";
import { topicPartition } from "../src/names";

interface Totals {
  readonly count: number;
  readonly sum: number;
}

interface Fixture {
  readonly app: Application;
  readonly log: DurableLog;
  readonly input: TopicPartition;
  readonly changelog: TopicPartition;
  readonly output: TopicPartition;
  /** A new StreamTask on the same storage: what a restart of the object makes (its memory, the cache too, is gone). */
  restart(options?: Partial<TaskOptions>): StreamTask;
  order(...orders: [key: string, amount: number][]): Promise<void>;
  read(tp: TopicPartition): Promise<LogRecord[]>;
}

async function withCachedTask(id: string, body: (task: StreamTask, f: Fixture) => Promise<void>, options: Partial<TaskOptions> = {}): Promise<void> {
  const app = totalsApp(id, { caching: true });
  const log = new DurableLog(env.LOG_PARTITION, app.catalog);
  const input = { topic: `${id}-orders`, partition: 0 };
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
    const restart = (more: Partial<TaskOptions> = {}) => new StreamTask({ application: app, log, storage: state.storage, ...options, ...more });
    const task = restart();
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    expect(task.meta()?.state).toBe("RUNNING");
    await body(task, {
      app,
      log,
      input,
      changelog: app.changelogPartitions("0_0")[0]!,
      output: { topic: `${id}-out`, partition: 0 },
      restart,
      order: async (...orders) => {
        await log.append(
          input,
          orders.map(([key, amount]) => ({ key, value: JSON.stringify({ amount }) })),
        );
      },
      read: async (tp) => (await log.fetch(tp, 0, { maxRecords: 10_000, maxBytes: 1 << 24 })).records,
    });
  });
}

const values = (records: readonly LogRecord[], key: string): Totals[] => records.filter((r) => r.key === key).map((r) => JSON.parse(r.value) as Totals);

async function drain(task: StreamTask): Promise<void> {
  for (let i = 0; i < 100 && (await task.step()) === "more"; i++);
}

describe("the record cache on the commit path", () => {
  it("sends consecutive updates of a key in one commit once, as of its last update, in the order of last updates", async () => {
    await withCachedTask("cached-collapse", async (task, { order, read, changelog, output }) => {
      await order(["alice", 1], ["bob", 2], ["alice", 3], ["alice", 4]);
      await drain(task);
      const logged = await read(changelog);
      expect(logged.map((r) => [r.key, JSON.parse(r.value)])).toEqual([
        ["bob", { count: 1, sum: 2 }],
        ["alice", { count: 3, sum: 8 }],
      ]);
      // Each changelog record names the input position of the key's last update (offsets 1 and 3).
      expect(logged.map((r) => positionFromHeaders(r.headers)?.offset)).toEqual([1, 3]);
      expect((await read(output)).map((r) => [r.key, JSON.parse(r.value)])).toEqual([
        ["bob", { count: 1, sum: 2 }],
        ["alice", { count: 3, sum: 8 }],
      ]);
      expect(JSON.parse(task.queries.get("cached-collapse-totals", "alice")!)).toEqual({ count: 3, sum: 8 });

      // The next commit sends the next update: the cache kept nothing back.
      await order(["alice", 5]);
      await drain(task);
      expect(values(await read(changelog), "alice")).toEqual([
        { count: 3, sum: 8 },
        { count: 4, sum: 13 },
      ]);
    });
  });

  const steps: CommitStep[] = ["before-commit", "after-commit", "mid-send", "after-send"];

  it("loses nothing and repeats nothing when the object dies at any commit step, and restores to exactly the flushed state", async () => {
    await withCachedTask("cached-crashes", async (first, { order, read, restart, changelog, output, log, input }) => {
      const amounts = new Map<string, number[]>();
      const add = async (...orders: [string, number][]) => {
        for (const [key, amount] of orders) amounts.set(key, [...(amounts.get(key) ?? []), amount]);
        await order(...orders);
      };
      await add(["a", 1], ["b", 1], ["a", 2]);
      await drain(first);
      for (const [round, step] of steps.entries()) {
        await add(["a", 10 + round], ["b", 20 + round], ["a", 30 + round], ["c", round]);
        const dying = restart({
          onCommitStep: (at) => {
            if (at === step) throw new Error(`injected crash ${step}`);
          },
        });
        await expect(drain(dying)).rejects.toThrow(`injected crash ${step}`);
        await drain(restart());
      }
      const task = restart();
      await drain(task);

      const fold = (key: string): Totals => ({ count: amounts.get(key)!.length, sum: amounts.get(key)!.reduce((s, x) => s + x, 0) });
      const logged = await read(changelog);
      const sent = await read(output);
      for (const key of ["a", "b", "c"]) {
        expect(JSON.parse(task.queries.get("cached-crashes-totals", key)!)).toEqual(fold(key));
        const history = values(logged, key);
        // Collapsed, never repeated: counts strictly increase, and the last is the fold.
        expect(history.every((t, i) => i === 0 || t.count > history[i - 1]!.count)).toBe(true);
        expect(history[history.length - 1]).toEqual(fold(key));
        // Downstream saw exactly what the changelog holds.
        expect(values(sent, key)).toEqual(history);
      }
      // Fewer changelog records than updates: the cache collapsed them (a: 2 per round, b and c one).
      expect(logged.length).toBeLessThan([...amounts.values()].reduce((n, list) => n + list.length, 0));

      // Wiped and restored from the changelog: the same state, and input resumes right after the
      // last record the flushed state reflects (the changelog's positions), nothing reprocessed.
      const end = (await log.offsets(input)).latest;
      const meta = task.wipe();
      const fetched = await log.fetch(changelog, 0, { maxRecords: 10_000, maxBytes: 1 << 24 });
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
      expect(task.positions()[topicPartition(input)]).toBe(end);
      expect(await task.tryCompleteRestoration()).toBe(true);
      for (const key of ["a", "b", "c"]) expect(JSON.parse(task.queries.get("cached-crashes-totals", key)!)).toEqual(fold(key));
      await add(["a", 100]);
      await drain(task);
      expect(values(await read(changelog), "a").at(-1)).toEqual(fold("a"));
    });
  });

  it("with no budget (statestore.cache.max.bytes 0), every update is evicted and sent as it happens", async () => {
    await withCachedTask(
      "cached-evict",
      async (task, { order, read, changelog }) => {
        await order(["x", 1], ["y", 1], ["x", 1]);
        await drain(task);
        expect((await read(changelog)).map((r) => [r.key, JSON.parse(r.value).count])).toEqual([
          ["x", 1],
          ["y", 1],
          ["x", 2],
        ]);
      },
      { cacheMaxBytes: 0 },
    );
  });
});
