/**
 * Adaptive batching: a task that finds at least a batch of input waiting is under load and takes
 * up to `maxLoadedBatchRecords` per commit; one that finds little takes `maxBatchRecords` and is
 * not under load, so each arrival is processed at once. Under load, commits come one commit interval
 * apart, counted from each commit's start. `drain` never lingers. Sends linger (`lingerMs`):
 * commits that follow one another closely go to the log together, one batch per partition. A run's
 * steps (`"when-due"`) process each arrival at once and, while input keeps coming, commit once per
 * commit interval; queries read what was processed meanwhile, and a restart loses only that.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { LogUnavailable } from "../src/log/errors";
import { arrivingBatch, maxTimestampOf } from "../src/log/append-batch";
import { parseEntries } from "../src/log/record-batch";
import type { AppendResult, BatchMeasure, ProducerId } from "../src/log/types";
import type { Totals } from "../examples/orders-totals/topology";
import { partitionForKey } from "../src/log/partitioner";
import { CHANGELOG_PHASE, Outbox, OUTPUT_PHASE } from "../src/task/outbox";
import { StreamTask } from "../src/task/stream-task";
import { WATCHED_HOLD_MS } from "../src/task/watch-hold";
import { TaskStorage } from "../src/task/task-storage";
import { totalsApp } from "./support/totals-app";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { storedValue as storedValueOf } from "./support/store-rows";

const orders = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ key: `c${(from + i) % 7}`, value: JSON.stringify({ amount: 1 }) }));

type Options = Omit<ConstructorParameters<typeof StreamTask>[0], "application" | "log" | "storage"> & { caching?: boolean };

/**
 * The log as the task sees it, counting appends per partition, keeping those whose measure is not
 * the batch's (see BatchMeasure), and losing acknowledgements while asked to.
 */
class CountingLog extends DurableLog {
  readonly appends = new Map<string, number>();
  readonly misMeasured: string[] = [];
  loseAcks = false;
  /** Told of each append's end, as a partition's wake-up tells its subscribed task (src/log/partition-wakes.ts). */
  onAppended: (tp: Partition, end: number) => void = () => {};
  override async appendEncoded(tp: Partition, records: string, producer?: ProducerId, measure?: BatchMeasure): Promise<AppendResult> {
    const key = `${tp.topic}/${tp.partition}`;
    this.appends.set(key, (this.appends.get(key) ?? 0) + 1);
    const { entries, sizes } = parseEntries(records);
    const measuredAs = (now: number) => measure && arrivingBatch(records, measure).maxTimestamp(now) === maxTimestampOf(entries, now);
    if (!measure || measure.sizes.join() !== sizes.join() || !measuredAs(0) || !measuredAs(Number.MAX_SAFE_INTEGER)) this.misMeasured.push(records);
    const result = await super.appendEncoded(tp, records, producer, measure);
    this.onAppended(tp, result.baseOffset + result.count);
    if (this.loseAcks) throw new LogUnavailable("the acknowledgement was lost on the way back");
    return result;
  }
}

type Partition = { topic: string; partition: number };

/**
 * A fresh active instance of task 0_0 of the totals app `id` in a task object, with its log (which
 * counts appends), input and output partitions and app; `restart()` makes a new instance on the
 * same storage, as a restart of the object does.
 */
async function withPacingTask(
  id: string,
  options: Options,
  body: (t: {
    task: StreamTask;
    log: CountingLog;
    app: ReturnType<typeof totalsApp>;
    input: Partition;
    out: Partition;
    restart: () => StreamTask;
    /** Storage transactions the task has made so far. */
    transactions: () => number;
    /** The input positions and what the group holds of them, as written in the task's storage. */
    stored: () => { positions: Record<string, number>; committed: Record<string, number> };
    /** A store's value for `key` as written in the task's storage (undefined: no row). */
    storedValue: (store: string, key: string) => string | undefined;
  }) => Promise<void>,
): Promise<void> {
  const app = totalsApp(id, { caching: options.caching });
  const log = new CountingLog(env.LOG_PARTITION, app.catalog);
  const input = { topic: `${id}-orders`, partition: 0 };
  const out = { topic: `${id}-out`, partition: 0 };
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
    let transactions = 0;
    const storage = new Proxy(state.storage, {
      get(target, name) {
        if (name === "transactionSync") {
          return (fn: () => unknown) => {
            transactions++;
            return target.transactionSync(fn);
          };
        }
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    // What the log and the group acknowledged is written down at once unless a test says otherwise (RECORD_OWED_MS).
    let current: StreamTask | undefined;
    const restart = () => (current = new StreamTask({ application: app, log, storage, owedMs: 0, ...options }));
    const task = restart();
    // The instance hears of its input's growth as a wake-up from its partition tells it (a run's
    // steps leave out a partition known to end at the position: src/task/quiet-inputs.ts).
    log.onAppended = (tp, end) => current?.toldOfInput(undefined, { tp, end });
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    const stored = () => {
      const read = new TaskStorage(state.storage);
      return { positions: read.positions(), committed: read.committedPositions() };
    };
    const storedValue = (store: string, key: string) => storedValueOf(state.storage.sql, store, key);
    await body({ task, log, app, input, out, restart, transactions: () => transactions, stored, storedValue });
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

  it("under load, the group hears of the input progress once it has been owed for owedMs (RECORD_OWED_MS), not with every cycle", async () => {
    const clock = { now: 1_000_000 };
    const options = { maxBatchRecords: 10, maxLoadedBatchRecords: 50, clock: () => clock.now, owedMs: 1_000 };
    await withPacingTask("pacing-offsets", options, async ({ task, log, app, input }) => {
      const group = async () => (await log.committedOffset(app.groupId, input))?.offset ?? null;
      await log.append(input, orders(100));
      expect(await task.step()).toBe("more");
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, true]);
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, false]);
      // Three commits, every batch sent: the group has heard of none of it yet.
      expect(await group()).toBeNull();
      expect(task.pendingWork().progressDueAt).toBe(1_000_000 + 1_000);
      clock.now += 1_000;
      expect(await task.step()).toBe("idle");
      expect(await group()).toBe(100);
      expect(task.pendingWork().progressDueAt).toBeUndefined();
    });
  });

  it("under load, a cycle is one storage transaction: what the log and the group acknowledged at its end is written down by the next cycle's commit", async () => {
    const clock = { now: 1_000_000 };
    const options = { maxBatchRecords: 10, maxLoadedBatchRecords: 50, commitIntervalMs: 100, clock: () => clock.now };
    await withPacingTask("pacing-owed", options, async ({ task, log, app, input, out, restart, transactions, stored }) => {
      const group = async () => (await log.committedOffset(app.groupId, input))?.offset ?? null;
      const key = `${input.topic}/${input.partition}`;
      await log.append(input, orders(100));
      expect(await task.step()).toBe("more");
      expect(await task.step()).toBe("more");
      // The commit that ends the cycle: one transaction; its output is in the log, the group took its input.
      const before = transactions();
      expect(await task.step()).toBe("more");
      expect([task.loaded, task.backlog]).toEqual([true, false]);
      expect(transactions() - before).toBe(1);
      expect(await group()).toBe(100);
      expect((await log.offsets(out)).latest).toBeGreaterThan(0);
      // The instance knows the group holds it (no lag, nothing to commit again) before writing it down.
      expect(task.hasUncommittedInput()).toBe(false);
      expect(task.committedPositions()[key]).toBe(100);
      // Written down is only what the group took before (by the commits before).
      expect(stored().positions).toEqual({ [key]: 100 });
      expect(stored().committed[key]).toBeLessThan(100);
      expect(task.pendingOutboxBatches()).toBe(0);

      // The next cycle's commit writes it down with its own work, again one transaction.
      await log.append(input, orders(10, 100));
      clock.now += 100;
      const next = transactions();
      expect(await task.step()).toBe("more");
      expect(transactions() - next).toBe(1);
      expect(stored().committed[key]).toBe(100);
      expect(await group()).toBe(110);

      // A crash loses what was not written down yet: the restarted instance commits it again, once.
      const restarted = restart();
      expect(restarted.hasUncommittedInput()).toBe(true);
      expect(await restarted.step()).toBe("idle");
      expect(restarted.hasUncommittedInput()).toBe(false);
      expect(stored()).toEqual({ positions: { [key]: 110 }, committed: { [key]: 110 } });
      expect(await group()).toBe(110);
    });
  });

  it("while input keeps coming, each arrival is one storage transaction: the offsets the group took go down with the next commit, and with none coming, once they are due", async () => {
    const clock = { now: 1_000_000 };
    const options = { lingerMs: 100, commitIntervalMs: 100, clock: () => clock.now };
    await withPacingTask("pacing-streaming", options, async ({ task, log, app, input, transactions, stored }) => {
      const group = async () => (await log.committedOffset(app.groupId, input))?.offset ?? null;
      const key = `${input.topic}/${input.partition}`;
      const before = transactions();
      // 50 arrivals 20 ms apart, each processed at once (not under load).
      for (let i = 0; i < 50; i++) {
        await log.append(input, orders(5, i * 5));
        clock.now += 20;
        expect(await task.step()).toBe("more");
        expect(task.loaded).toBe(false);
      }
      // One transaction per arrival: the group's offsets (every 100 ms) and the acknowledgements
      // went down with the commits that followed, not in ten transactions of their own. (The first
      // arrival, after a quiet spell, is sent and committed to the group at once, and written down so.)
      expect(transactions() - before).toBe(51);
      expect(await group()).toBeGreaterThanOrEqual(225);
      expect(stored().committed[key]).toBeGreaterThanOrEqual(200);
      expect(task.pendingWork().progressDueAt).toBeDefined();
      // No more input: once the offsets are due, the instance commits the rest and writes down what it owes.
      clock.now += 100;
      expect(await task.step()).toBe("idle");
      clock.now += 100;
      expect(await task.step()).toBe("idle");
      expect(await group()).toBe(250);
      expect(stored()).toEqual({ positions: { [key]: 250 }, committed: { [key]: 250 } });
      expect(task.pendingWork().progressDueAt).toBeUndefined();
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

describe("lingering sends (LINGER_MS, Kafka Streams' producer linger.ms)", () => {
  const keysAndCounts = async (log: DurableLog, tp: Partition) =>
    (await log.fetch(tp, 0, { maxRecords: 1000, maxBytes: 1 << 20 })).records.map((r) => `${r.key}:${(JSON.parse(r.value!) as Totals).count}`);

  it("sends the first commit after a quiet spell at once, and those that follow closely together: one append per partition, in order", async () => {
    const id = "linger-join";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, { lingerMs: 100, clock: () => clock.now }, async ({ task, log, app, input, out }) => {
      const changelog = app.changelogPartitions("0_0")[0]!;
      const appends = () => [log.appends.get(`${changelog.topic}/0`) ?? 0, log.appends.get(`${id}-out/0`) ?? 0];

      await log.append(input, orders(1));
      const first = clock.now;
      expect(await task.step()).toBe("more");
      expect(await keysAndCounts(log, out)).toEqual(["c0:1"]);
      expect(appends()).toEqual([1, 1]);

      // Two more commits within the linger: committed (the store shows them), not sent yet.
      clock.now += 20;
      await log.append(input, orders(1, 1));
      expect(await task.step()).toBe("more");
      clock.now += 20;
      await log.append(input, orders(2, 2));
      expect(await task.step()).toBe("more");
      expect(JSON.parse(task.queries.get(`${id}-totals`, "c2")!)).toEqual({ count: 1, sum: 1 });
      expect(await keysAndCounts(log, out)).toEqual(["c0:1"]);
      expect(appends()).toEqual([1, 1]);
      // The instance comes back for them when the linger ends.
      expect(task.wakeAt()).toBe(first + 100);

      clock.now = first + 100;
      expect(await task.step()).toBe("idle");
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1", "c2:1", "c3:1"]);
      expect((await log.offsets(changelog)).latest).toBe(4);
      // Both later commits went as one batch per partition, measured as joined.
      expect(appends()).toEqual([2, 2]);
      expect(log.misMeasured).toEqual([]);
    });
  });

  it("does not linger while live subscribers watch a partition it sends to, and lingers again once they left", async () => {
    const id = "linger-watched";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, { lingerMs: 100, clock: () => clock.now }, async ({ task, log, app, input, out }) => {
      const changelog = app.changelogPartitions("0_0")[0]!;
      const partition = env.LOG_PARTITION.getByName(`${changelog.topic}/0`);
      const hub = `hub:${changelog.topic}/0`;
      const commitClosely = async (from: number) => {
        clock.now += 20;
        await log.append(input, orders(1, from));
        expect(await task.step()).toBe("more");
      };

      // The first commit goes at once (after a quiet spell) and its changelog's answer says a hub waits on it.
      await partition.subscribe(hub);
      await log.append(input, orders(1));
      expect(await task.step()).toBe("more");
      // A commit close behind it is sent at once too: the hub's subscribers would wait for the linger.
      await commitClosely(1);
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1"]);
      expect((await log.offsets(changelog)).latest).toBe(2);

      // The hub left: the next append says so, and once the hold ends, commits that follow closely linger again.
      await partition.unsubscribe(hub);
      clock.now += WATCHED_HOLD_MS;
      await commitClosely(2);
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1", "c2:1"]);
      await commitClosely(3);
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1", "c2:1"]);
      expect(task.wakeAt()).toBe(clock.now - 20 + 100);
    });
  });

  it("never joins a batch already handed to the log: a resend after a lost acknowledgement repeats it exactly, and later commits follow it once", async () => {
    const clock = { now: 1_000_000 };
    const retryBackoff = { initialMs: 50, maxMs: 50 };
    await withPacingTask("linger-sealed", { lingerMs: 100, clock: () => clock.now, retryBackoff }, async ({ task, log, input, out }) => {
      // The send reaches the log, but its answers are lost: the send backs off.
      await log.append(input, orders(1));
      log.loseAcks = true;
      expect(await task.step()).toBe("more");
      log.loseAcks = false;

      // Input that comes within the back-off waits for it, with the failed batch still in the
      // outbox; then the batch is sent again first, exactly as it was (a commit joined to it
      // would have its records lost: the log answers the resend as the original).
      clock.now += 20;
      await log.append(input, orders(2, 1));
      expect(await task.step()).toBe("waiting");
      clock.now += 40;
      expect(await task.step()).toBe("more");
      clock.now += 100;
      expect(await task.step()).toBe("idle");
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1", "c2:1"]);
    });
  });

  it("after a restart, commits joined but not sent go to the log once", async () => {
    const clock = { now: 1_000_000 };
    await withPacingTask("linger-restart", { lingerMs: 100, clock: () => clock.now }, async ({ task: before, log, input, out, restart }) => {
      await log.append(input, orders(1));
      expect(await before.step()).toBe("more");
      clock.now += 10;
      await log.append(input, orders(2, 1));
      expect(await before.step()).toBe("more");
      clock.now += 10;
      await log.append(input, orders(1, 3));
      expect(await before.step()).toBe("more");
      expect(await keysAndCounts(log, out)).toEqual(["c0:1"]);

      // The instance dies with two joined commits unsent; a new one on the same storage sends them at once, once.
      const after = restart();
      expect(await after.step()).toBe("idle");
      expect(await keysAndCounts(log, out)).toEqual(["c0:1", "c1:1", "c2:1", "c3:1"]);
      expect(await after.step()).toBe("idle");
      expect((await log.offsets(out)).latest).toBe(4);
      // Sent from the rows the restart read back, measured again.
      expect(log.misMeasured).toEqual([]);
    });
  });
});

describe("commits joining a lingering send in the outbox", () => {
  it("keeps a commit's changelog ahead of its output when it joins one that wrote no changelog, and starts new batches once the joined ones are sealed or full", async () => {
    await runInDurableObject(env.TASK_OBJECT.getByName("outbox-join@a"), async (_, state) => {
      const storage = new TaskStorage(state.storage);
      const outbox = new Outbox(storage);
      const changelog = { topic: "outbox-join-changelog", partition: 0 };
      const output = { topic: "outbox-join-out", partition: 0 };
      const record = (key: string, bytes = 1) => ({ key, value: "x".repeat(bytes) });
      const write = (commitId: number, batches: [number, { topic: string; partition: number }, string[]][], bytes = 1) =>
        storage.transaction(() => {
          const joined = outbox.joinableCommit(commitId);
          for (const [phase, tp, keys] of batches)
            outbox.add(
              joined,
              phase,
              tp,
              keys.map((k) => record(k, bytes)),
            );
          return joined;
        });
      const group = () => outbox.nextGroup().map((b) => `${b.commitId}:${b.phase}:${b.topic}:${b.sequence}:${b.records.map((r) => r.key).join("")}`);
      expect(outbox.isEmpty()).toBe(true);

      // Commit 1 forwarded output only; commit 2 wrote a changelog and output: it joins commit 1.
      expect(write(1, [[OUTPUT_PHASE, output, ["a"]]])).toBe(1);
      expect(
        write(2, [
          [CHANGELOG_PHASE, changelog, ["b"]],
          [OUTPUT_PHASE, output, ["c"]],
        ]),
      ).toBe(1);
      // One batch per partition; the changelog goes first, before any of the output it explains.
      expect(group()).toEqual(["1:0:outbox-join-changelog:0:b"]);
      expect(outbox.nextGroup(new Set(outbox.nextGroup().map((b) => b.id))).map((b) => b.records.map((r) => r.key).join(""))).toEqual(["ac"]);

      // Once commit 1 goes to the log, commit 3 makes batches of its own, with the next sequences.
      outbox.seal(1);
      expect(write(3, [[OUTPUT_PHASE, output, ["d"]]])).toBe(3);
      expect(outbox.pendingBatches()).toBe(3);
      // A record that would overflow the joined row starts a new batch (row) of the same commit.
      expect(write(4, [[OUTPUT_PHASE, output, ["e"]]], 600_000)).toBe(3);
      expect(write(5, [[OUTPUT_PHASE, output, ["f"]]], 600_000)).toBe(3);
      expect(outbox.pendingBatches()).toBe(4);
      // What the outbox holds is stored: a new object reading the book sends the same batches.
      const fresh = new Outbox(new TaskStorage(state.storage));
      const rows = (o: Outbox, skip = new Set<number>()) => o.nextGroup(skip).map((b) => `${b.sequence}:${b.records.map((r) => r.key).join("")}`);
      expect(rows(fresh)).toEqual(rows(outbox));
    });
  });
});

describe("commits when due (a run's steps: Kafka Streams' commit.interval.ms)", () => {
  const counts = async (log: DurableLog, tp: Partition) =>
    (await log.fetch(tp, 0, { maxRecords: 1000, maxBytes: 1 << 20 })).records.map((r) => `${r.key}:${(JSON.parse(r.value!) as Totals).count}`);
  const options = (clock: { now: number }) => ({ lingerMs: 100, commitIntervalMs: 100, clock: () => clock.now });

  it("while input keeps coming, processes each arrival at once and commits once per commit interval; queries read what was processed, storage holds what was committed", async () => {
    const id = "due-streaming";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, options(clock), async ({ task, log, app, input, out, stored, storedValue }) => {
      const key = `${input.topic}/0`;
      const queried = (customer: string) => JSON.parse(task.queries.get(`${id}-totals`, customer) ?? "null") as Totals | null;
      const inStorage = (customer: string) => JSON.parse(storedValue(`${id}-totals`, customer) ?? "null") as Totals | null;

      // After a quiet spell the first arrival commits at once.
      await log.append(input, orders(7));
      const first = clock.now;
      expect(await task.step("when-due")).toBe("more");
      expect(stored().positions[key]).toBe(7);
      expect(task.commitDueAt()).toBeUndefined();

      // Four more, 20 ms apart: each processed at once, none committed yet.
      for (let i = 1; i <= 4; i++) {
        clock.now += 20;
        await log.append(input, orders(7, 7 * i));
        expect(await task.step("when-due")).toBe("more");
        expect(queried("c0")).toEqual({ count: i + 1, sum: i + 1 });
      }
      expect(inStorage("c0")).toEqual({ count: 1, sum: 1 });
      expect(stored().positions[key]).toBe(7);
      expect((await log.offsets(app.changelogPartitions("0_0")[0]!)).latest).toBe(7);
      // The instance comes back for the commit one commit interval after the last one began.
      expect(task.commitDueAt()).toBe(first + 100);
      expect(task.pendingWork().progressDueAt).toBeLessThanOrEqual(first + 100);

      // Not due yet: a step without input changes nothing.
      clock.now = first + 99;
      expect(await task.step("when-due")).toBe("idle");
      expect(stored().positions[key]).toBe(7);

      // Due: one commit of everything processed since, without new input.
      clock.now = first + 100;
      expect(await task.step("when-due")).toBe("idle");
      expect(stored().positions[key]).toBe(35);
      expect(inStorage("c0")).toEqual({ count: 5, sum: 5 });
      expect(task.commitDueAt()).toBeUndefined();
      // Every update still made its changelog and output record (the store is uncached).
      clock.now += 100;
      expect(await task.step("when-due")).toBe("idle");
      expect((await log.offsets(app.changelogPartitions("0_0")[0]!)).latest).toBe(35);
      expect(await counts(log, out)).toHaveLength(35);
      expect((await counts(log, out)).filter((c) => c.startsWith("c0:"))).toEqual(["c0:1", "c0:2", "c0:3", "c0:4", "c0:5"]);
    });
  });

  it("while a partition it sends to is watched, commits and sends each arrival at once even while input keeps coming; once the watch ended, once per interval again", async () => {
    const id = "due-watched";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, options(clock), async ({ task, log, app, input, stored }) => {
      const key = `${input.topic}/0`;
      const changelog = app.changelogPartitions("0_0")[0]!;
      const partition = env.LOG_PARTITION.getByName(`${changelog.topic}/0`);
      const hub = `hub:${changelog.topic}/0`;
      const arrive = async (from: number) => {
        clock.now += 20;
        await log.append(input, orders(7, from));
        expect(await task.step("when-due")).toBe("more");
      };

      // After a quiet spell the first arrival commits at once, and its changelog's answer says a hub waits on it.
      await partition.subscribe(hub);
      await log.append(input, orders(7));
      expect(await task.step("when-due")).toBe("more");
      // Arrivals 20 ms apart: each committed and in the changelog at once, none left for the commit interval.
      for (let i = 1; i <= 3; i++) {
        await arrive(7 * i);
        expect(stored().positions[key]).toBe(7 * (i + 1));
        expect((await log.offsets(changelog)).latest).toBe(7 * (i + 1));
        expect(task.commitDueAt()).toBeUndefined();
      }

      // The hub left: the next append says so, and once the hold ends arrivals wait for the commit interval again.
      await partition.unsubscribe(hub);
      clock.now += WATCHED_HOLD_MS;
      await arrive(28);
      await arrive(35);
      await arrive(42);
      expect(stored().positions[key]).toBeLessThan(49);
      expect(task.commitDueAt()).toBeDefined();
    });
  });

  it("a cached store's queries read through the record cache; the commit collapses each key's updates into one changelog and output record", async () => {
    const id = "due-cached";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, { ...options(clock), caching: true }, async ({ task, log, app, input, out, storedValue }) => {
      const store = `${id}-totals`;
      const changelog = app.changelogPartitions("0_0")[0]!;
      await log.append(input, orders(7));
      const first = clock.now;
      expect(await task.step("when-due")).toBe("more");
      for (let i = 1; i <= 3; i++) {
        clock.now += 20;
        await log.append(input, orders(7, 7 * i));
        expect(await task.step("when-due")).toBe("more");
      }
      // Processed, in the record cache only: the queries see it, the table does not.
      expect(JSON.parse(task.queries.get(store, "c0")!)).toEqual({ count: 4, sum: 4 });
      expect(JSON.parse(storedValue(store, "c0")!)).toEqual({ count: 1, sum: 1 });
      const counted = (entries: { key: string; value: string }[]) => entries.map((e) => `${e.key}:${(JSON.parse(e.value) as Totals).count}`);
      expect(counted(task.queries.range(store, "c1", "c3"))).toEqual(["c1:4", "c2:4", "c3:4"]);
      expect(counted(task.queries.prefix(store, "c", 2))).toEqual(["c0:4", "c1:4"]);
      expect(counted(task.queries.scan(store, { after: "c4", limit: 5 }))).toEqual(["c5:4", "c6:4"]);
      expect((await log.offsets(changelog)).latest).toBe(7);

      clock.now = first + 100;
      expect(await task.step("when-due")).toBe("idle");
      expect(JSON.parse(storedValue(store, "c0")!)).toEqual({ count: 4, sum: 4 });
      clock.now += 100;
      expect(await task.step("when-due")).toBe("idle");
      // Three arrivals of each key, one record of each at the commit.
      expect((await log.offsets(changelog)).latest).toBe(14);
      expect((await counts(log, out)).filter((c) => c.startsWith("c0:"))).toEqual(["c0:1", "c0:4"]);
    });
  });

  it("commits at once once a batch has gathered, though not due", async () => {
    const clock = { now: 1_000_000 };
    await withPacingTask("due-batch", { ...options(clock), maxBatchRecords: 10 }, async ({ task, log, input, stored }) => {
      const key = `${input.topic}/0`;
      await log.append(input, orders(1));
      expect(await task.step("when-due")).toBe("more");
      clock.now += 10;
      await log.append(input, orders(6, 1));
      expect(await task.step("when-due")).toBe("more");
      expect(stored().positions[key]).toBe(1);
      // 6 + 6 uncommitted records reach the batch of 10.
      clock.now += 10;
      await log.append(input, orders(6, 7));
      expect(await task.step("when-due")).toBe("more");
      expect(stored().positions[key]).toBe(13);
      expect(task.commitDueAt()).toBeUndefined();
    });
  });

  it("a restarted instance processes what was not committed again, to the same values, and each record reaches the output once", async () => {
    const id = "due-restart";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, options(clock), async ({ task: before, log, input, out, restart, stored }) => {
      const key = `${input.topic}/0`;
      await log.append(input, orders(7));
      expect(await before.step("when-due")).toBe("more");
      for (let i = 1; i <= 3; i++) {
        clock.now += 20;
        await log.append(input, orders(7, 7 * i));
        expect(await before.step("when-due")).toBe("more");
      }
      const seen = Array.from({ length: 7 }, (_, i) => before.queries.get(`${id}-totals`, `c${i}`));
      expect(JSON.parse(seen[0]!)).toEqual({ count: 4, sum: 4 });
      expect(stored().positions[key]).toBe(7);

      // The instance dies: what it had not committed is gone with it.
      const after = restart();
      expect(JSON.parse(after.queries.get(`${id}-totals`, "c0")!)).toEqual({ count: 1, sum: 1 });
      expect(await after.step("when-due")).toBe("more");
      expect(Array.from({ length: 7 }, (_, i) => after.queries.get(`${id}-totals`, `c${i}`))).toEqual(seen);
      expect(await after.step()).toBe("idle");
      expect(stored().positions[key]).toBe(28);
      clock.now += 200;
      expect(await after.step()).toBe("idle");
      const output = await counts(log, out);
      expect(output).toHaveLength(28);
      expect(new Set(output).size).toBe(28);
    });
  });

  it("revocation commits what was processed; a new assignment drops it, and it is processed again", async () => {
    const id = "due-lifecycle";
    const clock = { now: 1_000_000 };
    await withPacingTask(id, options(clock), async ({ task, log, input, out, stored }) => {
      const key = `${input.topic}/0`;
      const arrive = async (n: number) => {
        await log.append(input, orders(7, 7 * n));
        clock.now += 20;
        expect(await task.step("when-due")).toBe("more");
      };
      await arrive(0);
      await arrive(1);
      expect(stored().positions[key]).toBe(7);
      // A new epoch of the same assignment: the uncommitted arrival is dropped, then processed again.
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 2 });
      expect(stored().positions[key]).toBe(7);
      expect(JSON.parse(task.queries.get(`${id}-totals`, "c0")!)).toEqual({ count: 1, sum: 1 });
      await arrive(2);
      expect(JSON.parse(task.queries.get(`${id}-totals`, "c0")!)).toEqual({ count: 3, sum: 3 });
      // Revocation: everything processed is committed and sent before the instance suspends.
      await task.suspend();
      expect(stored().positions[key]).toBe(21);
      const output = await counts(log, out);
      expect(output).toHaveLength(21);
      expect(output.filter((c) => c.startsWith("c0:"))).toEqual(["c0:1", "c0:2", "c0:3"]);
    });
  });
});
