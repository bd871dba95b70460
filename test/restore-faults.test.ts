/**
 * Restoration under faults (issue 4 §6), end to end through the restore worker, the task objects,
 * the coordinator and the log: the restore worker dying mid-batch, a task object dying mid-restore,
 * several changelogs truncated in one round, fetches failing within and beyond the retry budget,
 * and shutdown and unregistration bounded by timeouts. Every test asserts outcomes: the store equals
 * the fold of the input, the checkpoint never claims more than the store holds (I1: the store is
 * exactly the changelog below the checkpoint), and no batch is applied twice (I4).
 *
 * Crashes of the restore worker use its fault hook `crash(at)`; crashes inside a task object and
 * hangs use spies on the Durable Object classes, which run in this isolate.
 *
 * Rounds apply restore windows (src/restore/compacted-window.ts): in tests, two batches of 25
 * records (RESTORE_BATCH_RECORDS, RESTORE_READ_AHEAD in vitest.config.ts) compacted into one, so a
 * round moves a checkpoint by up to 50 records while the instance gets each key's latest.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Coordinator } from "../durable-objects/coordinator";
import { RestoreWorker } from "../durable-objects/restore-worker";
import { TaskObject } from "../durable-objects/task-object";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import type { RestoreStep } from "../src/restore/restorer";
import type { TaskDescription } from "../src/task/describe";
import { TOMBSTONE_HEADER } from "../src/task/record-collector";
import type { RestoreBatch, RestoreReply } from "../src/task/protocol";
import type { StreamTask } from "../src/task/stream-task";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";
import { topicPartition } from "../src/names";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";
const BATCH = 25;
/** The changelog records a round restores at most: a window of the batch and one read ahead (RESTORE_READ_AHEAD=1 in tests). */
const WINDOW = 2 * BATCH;
const FETCH_RETRY_BUDGET = 5;

type Totals = { count: number; sum: number };

afterEach(() => {
  vi.restoreAllMocks();
});

async function describeOf(instance: InstanceAssignment): Promise<TaskDescription> {
  return (await driver.task(instance).describe()) as TaskDescription;
}

function partitionOf(taskId: string): number {
  return Number(taskId.split("_")[1]);
}

/** Orders for every key, `rounds` times; adds them to the expected totals. */
async function produce(keys: string[], rounds: number, expected: Map<string, Totals>): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    await driver.pipe(
      "orders",
      keys.map((key, i) => ({ key, value: { amount: i + r + 1 } })),
    );
    keys.forEach((key, i) => {
      const t = expected.get(key) ?? { count: 0, sum: 0 };
      expected.set(key, { count: t.count + 1, sum: t.sum + i + r + 1 });
    });
  }
}

/** One more order per key is processed once, on top of the restored state: every total still matches. */
async function expectProcessingGoesOn(keys: string[], expected: Map<string, Totals>): Promise<void> {
  await produce(keys, 1, expected);
  await driver.runUntilQuiet();
  await expectEveryRecord(expected);
}

/**
 * Restoration running, 20 keys of task `0_<partition>` produced `rounds` times and processed: the
 * task's active instance, its changelog's end, and the totals every key must have.
 */
async function seededTask(partition: number, prefix: string, rounds: number) {
  await call("/admin/restore/resume", { body: {} });
  const taskId = `0_${partition}`;
  const keys = keysOn(partition, 20, prefix);
  const expected = new Map<string, Totals>();
  await produce(keys, rounds, expected);
  await driver.runUntilQuiet();
  const instance = await activeInstance(driver.instances(), taskId);
  const end = (await describeOf(instance)).changelogs[0]!.end;
  return { taskId, keys, expected, instance, end };
}

async function expectEveryRecord(expected: Map<string, Totals>): Promise<void> {
  for (const [key, totals] of expected) expect(await driver.get("totals", key), key).toEqual(totals);
}

/** The task instance's store and its changelog checkpoint, read together in its own object. */
async function storeOf(instance: InstanceAssignment): Promise<{ checkpoint: number | null; store: Map<string, string> }> {
  const tp = { topic: CHANGELOG, partition: partitionOf(instance.taskId) };
  return runInDurableObject(driver.task(instance), (object) => {
    const { task } = object as unknown as { task: StreamTask };
    return { checkpoint: task.checkpoints().get(topicPartition(tp)) ?? null, store: new Map(task.queries.range("totals").map((r) => [r.key, r.value])) };
  });
}

/** What a store restored from the changelog's `[earliest, upTo)` holds. */
async function changelogFold(partition: number, upTo: number): Promise<Map<string, string>> {
  const state = new Map<string, string>();
  for (const record of await driver.read(CHANGELOG)) {
    if (record.partition !== partition || record.offset >= upTo) continue;
    if (record.headers.some((h) => h.key === TOMBSTONE_HEADER)) state.delete(record.key!);
    else state.set(record.key!, record.value);
  }
  return state;
}

/** I1: the store reflects exactly the changelog records below the checkpoint. Returns the description. */
async function expectCheckpointSound(instance: InstanceAssignment): Promise<TaskDescription> {
  const { checkpoint, store } = await storeOf(instance);
  expect(store).toEqual(await changelogFold(partitionOf(instance.taskId), checkpoint ?? 0));
  return describeOf(instance);
}

/** The restore worker's registration of an instance's changelog, if any. */
async function registered(instance: InstanceAssignment) {
  const status = await driver.restoreWorker(instance.placement).status();
  return status.changelogs.find((c) => c.instance === `${instance.taskId}@${instance.placement}`);
}

type Delivery = { fromOffset: number; nextOffset: number; incarnation: number; applied: boolean };

/** The records each delivery handed the instance (a window's, compacted: fewer than it covers). */
const recordsSent = new WeakMap<Delivery, number>();

/** Every restore batch delivered to a task object and its reply, recorded by a spy that changes nothing. */
function recordDeliveries(partition: number) {
  const deliveries: Delivery[] = [];
  const original = TaskObject.prototype.applyRestoreBatch;
  vi.spyOn(TaskObject.prototype, "applyRestoreBatch").mockImplementation(async function (this: TaskObject, batch: RestoreBatch) {
    const reply = (await original.call(this, batch)) as RestoreReply;
    if (batch.topic === CHANGELOG && batch.partition === partition) {
      const delivery = { fromOffset: batch.fromOffset, nextOffset: batch.nextOffset, incarnation: batch.incarnation, applied: reply.applied };
      deliveries.push(delivery);
      recordsSent.set(delivery, batch.records.length);
    }
    return reply;
  });
  return deliveries;
}

/** The batches applied to an incarnation tile `[from, to)`: none twice, none skipped. */
function expectTiled(deliveries: Delivery[], incarnation: number, from: number, to: number) {
  const applied = deliveries.filter((d) => d.applied && d.incarnation === incarnation && d.nextOffset > d.fromOffset);
  let at = from;
  for (const d of applied) {
    expect(d.fromOffset).toBe(at);
    at = d.nextOffset;
  }
  expect(at).toBe(to);
}

/** Rounds run by a fresh stub each time (a stub that saw its object die stays broken). */
function round(placement: string) {
  return driver.restoreWorker(placement).runRound();
}

/** Plans a crash of the restore worker and makes sure no alarm round can run before the test's own. */
async function planCrash(placement: string, at: RestoreStep): Promise<void> {
  await driver.restoreWorker(placement).crash(at);
}

describe("the restore worker dying mid-batch", () => {
  it.each([
    ["mid-window", "with the first batch of a window read, before the next", "rw-window"],
    ["after-fetch", "after fetching a window, before the instance got it", "rw-fetch"],
  ] as const)("at %s, %s: the window is fetched again, nothing lost", async (step, _what, prefix) => {
    await call("/admin/restore/resume", { body: {} });
    const taskId = "0_0";
    const expected = new Map<string, Totals>();
    await produce(keysOn(0, 20, prefix), 3, expected);
    await driver.runUntilQuiet();
    const instance = await activeInstance(driver.instances(), taskId);
    const end = (await describeOf(instance)).changelogs[0]!.end;
    expect(end).toBeGreaterThan(WINDOW);
    const deliveries = recordDeliveries(0);

    await planCrash(instance.placement, step);
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    // Registering armed an alarm; with a crash planned it takes no round. Run it now, so no alarm is left.
    await runDurableObjectAlarm(driver.restoreWorker(instance.placement));
    await expect(round(instance.placement)).rejects.toThrow(new RegExp(`injected crash at ${step}`));

    expect(deliveries).toEqual([]);
    const after = await expectCheckpointSound(instance);
    expect(after).toMatchObject({ state: "RESTORING", incarnation: wiped.incarnation });
    expect(after.changelogs[0]!.checkpoint).toBeNull();
    expect(await registered(instance)).toMatchObject({ position: null, incarnation: wiped.incarnation });

    // The restarted worker fetches the same window and the instance applies it: two batches'
    // records, the 20 keys' latest only.
    expect(await round(instance.placement)).toMatchObject({ applied: 1 });
    expect((await expectCheckpointSound(instance)).changelogs[0]!.checkpoint).toBe(WINDOW);
    expect(deliveries).toEqual([{ fromOffset: 0, nextOffset: WINDOW, incarnation: wiped.incarnation, applied: true }]);
    expect(recordsSent.get(deliveries[0]!)).toBe(20);
    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation, lag: 0 });
    expect(done.changelogs[0]!.checkpoint).toBe(end);
    expectTiled(deliveries, wiped.incarnation, 0, end);
    await expectEveryRecord(expected);
  });

  it("after the instance applied a batch, before the registry recorded the reply: delivered again, a no-op", async () => {
    const { keys, expected, instance, end } = await seededTask(1, "rw-apply", 3);
    const deliveries = recordDeliveries(1);

    await planCrash(instance.placement, "after-apply");
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    await runDurableObjectAlarm(driver.restoreWorker(instance.placement));
    await expect(round(instance.placement)).rejects.toThrow(/injected crash at after-apply/);

    // The instance has the window; the registry never heard of it.
    expect(deliveries).toEqual([{ fromOffset: 0, nextOffset: WINDOW, incarnation: wiped.incarnation, applied: true }]);
    expect((await expectCheckpointSound(instance)).changelogs[0]!.checkpoint).toBe(WINDOW);
    expect(await registered(instance)).toMatchObject({ position: null, restored: 0 });

    // The restarted worker delivers it again: not applied twice; the reply moves the registry on.
    expect(await round(instance.placement)).toMatchObject({ applied: 0 });
    expect(deliveries[1]).toEqual({ fromOffset: 0, nextOffset: WINDOW, incarnation: wiped.incarnation, applied: false });
    expect(await registered(instance)).toMatchObject({ position: WINDOW });
    expect((await expectCheckpointSound(instance)).changelogs[0]!.checkpoint).toBe(WINDOW);
    expect(await round(instance.placement)).toMatchObject({ applied: 1 });
    expect(deliveries[2]).toMatchObject({ fromOffset: WINDOW, nextOffset: Math.min(2 * WINDOW, end), applied: true });

    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation, lag: 0 });
    expect(done.changelogs[0]!.checkpoint).toBe(end);
    expectTiled(deliveries, wiped.incarnation, 0, end);
    await expectEveryRecord(expected);
    // Processing resumes where the restored state says it was: nothing twice.
    await produce(keys.slice(0, 3), 1, expected);
    await driver.runUntilQuiet();
    await expectEveryRecord(expected);
  });

  it("dying at every step of every other window of a long restoration still restores exactly the fold", async () => {
    const { keys, expected, instance, end } = await seededTask(2, "rw-storm", 11);
    expect(end).toBeGreaterThanOrEqual(4 * WINDOW);
    const deliveries = recordDeliveries(2);

    // Every await of a window's round: between its fetches, before the instance got it, before its reply was recorded.
    const steps: RestoreStep[] = ["mid-window", "after-fetch", "after-apply"];
    await planCrash(instance.placement, steps[0]!);
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    await runDurableObjectAlarm(driver.restoreWorker(instance.placement));
    let crashes = 0;
    for (let i = 0; i < 60; i++) {
      const described = await expectCheckpointSound(instance);
      if (described.state === "RUNNING") break;
      if (i % 2 === 0) {
        // A window of one batch (the last, when what is left fits in a batch) has no mid-window step.
        const step = steps[crashes % 3] === "mid-window" && end - (described.changelogs[0]!.checkpoint ?? 0) <= BATCH ? "after-fetch" : steps[crashes % 3]!;
        if (i > 0) await planCrash(instance.placement, step);
        await expect(round(instance.placement)).rejects.toThrow(/injected crash at/);
        crashes++;
      } else {
        await round(instance.placement);
      }
    }
    expect(crashes).toBeGreaterThanOrEqual(5);
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation });
    expect(done.changelogs[0]!.checkpoint).toBe(end);
    expectTiled(deliveries, wiped.incarnation, 0, end);
    // Whole windows applied, each handing the instance the 20 keys' latest records only.
    const applied = deliveries.filter((d) => d.applied);
    expect(applied.slice(0, -1).every((d) => d.nextOffset - d.fromOffset === WINDOW && recordsSent.get(d) === 20)).toBe(true);
    await driver.runUntilQuiet();
    await expectEveryRecord(expected);
    await expectProcessingGoesOn(keys, expected);
  });
});

describe("a task object dying mid-restore", () => {
  it("resumes from its checkpoint: not from scratch, not from beyond what it restored", async () => {
    const { taskId, keys, expected, instance, end } = await seededTask(3, "task-crash", 8);
    expect(end).toBeGreaterThan(3 * WINDOW);
    const deliveries = recordDeliveries(3);

    await call("/admin/restore/pause", { method: "POST" });
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    // Two windows, one round each (the budget counts batches applied, a window one; it is used up
    // when a round returns, whoever ran it).
    for (let i = 0; i < 2; i++) {
      await call("/admin/restore/resume", { body: { maxBatches: 1 } });
      await round(instance.placement);
    }
    expect((await expectCheckpointSound(instance)).changelogs[0]!.checkpoint).toBe(2 * WINDOW);

    expect((await call(`/admin/tasks/${taskId}/crash`, { method: "POST" })).status).toBe(200);
    const restarted = await expectCheckpointSound(instance);
    expect(restarted).toMatchObject({ state: "RESTORING", incarnation: wiped.incarnation });
    expect(restarted.changelogs[0]!.checkpoint).toBe(2 * WINDOW);

    // One more window: the one after the checkpoint.
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await round(instance.placement);
    expect(deliveries.at(-1)).toEqual({ fromOffset: 2 * WINDOW, nextOffset: 3 * WINDOW, incarnation: wiped.incarnation, applied: true });
    expect((await expectCheckpointSound(instance)).changelogs[0]!.checkpoint).toBe(3 * WINDOW);

    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation });
    expect(done.changelogs[0]!.checkpoint).toBe(end);
    expectTiled(deliveries, wiped.incarnation, 0, end);
    await expectEveryRecord(expected);
    await expectProcessingGoesOn(keys, expected);
  });

  it("dying right after applying a batch, before its reply reached the restore worker, loses nothing and doubles nothing", async () => {
    const { keys, expected, instance, end } = await seededTask(0, "task-crash-apply", 8);
    expect(end).toBeGreaterThan(2 * WINDOW);

    await call("/admin/restore/pause", { method: "POST" });
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await round(instance.placement);

    // The next batch the object applies is its last act.
    const original = TaskObject.prototype.applyRestoreBatch;
    let crashed = false;
    vi.spyOn(TaskObject.prototype, "applyRestoreBatch").mockImplementation(async function (this: TaskObject, batch: RestoreBatch) {
      const reply = await original.call(this, batch);
      if (!crashed && batch.topic === CHANGELOG && batch.partition === 0) {
        crashed = true;
        (this as unknown as { ctx: DurableObjectState }).ctx.abort("injected crash after applying a restore batch");
        // abort() resets the object but may not stop this call first (seen under load: the reply
        // still reached the worker). A dead instance sends no reply.
        throw new Error("injected crash after applying a restore batch");
      }
      return reply;
    });
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    // The round goes on without the instance's reply (a dead instance does not fail the round for
    // the others): the batch counts as not applied, and a later round delivers it again.
    const result = await round(instance.placement);
    expect(crashed).toBe(true);
    expect(result.applied).toBe(0);
    const restarted = await expectCheckpointSound(instance);
    expect(restarted).toMatchObject({ state: "RESTORING", incarnation: wiped.incarnation });
    expect([WINDOW, 2 * WINDOW]).toContain(restarted.changelogs[0]!.checkpoint);
    vi.restoreAllMocks();

    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation });
    expect(done.changelogs[0]!.checkpoint).toBe(end);
    await expectEveryRecord(expected);
    await expectProcessingGoesOn(keys, expected);
  });
});

describe("corruption found by the restore worker", () => {
  it("changelogs of several tasks truncated below their positions in one round: one report naming them all", async () => {
    await call("/admin/restore/resume", { body: {} });
    const instances = await driver.instances();
    const byPlacement = new Map<string, InstanceAssignment[]>();
    for (const i of instances.filter((x) => x.role === "active")) byPlacement.set(i.placement, [...(byPlacement.get(i.placement) ?? []), i]);
    const [x, y] = [...byPlacement.values()].find((list) => list.length >= 2)!;
    const tasks = [x!, y!];
    const keys = new Map(tasks.map((t) => [t.taskId, keysOn(partitionOf(t.taskId), 10, `trunc-many-${t.taskId}`)]));
    const expected = new Map<string, Totals>();
    // More than a window each (another test may have written to these tasks' changelogs already).
    for (const t of tasks) await produce(keys.get(t.taskId)!, 6, expected);
    await driver.runUntilQuiet();

    await call("/admin/restore/pause", { method: "POST" });
    const wiped = await Promise.all(tasks.map(async (t) => (await driver.task(t).corrupt()) as TaskDescription));
    await call("/admin/restore/resume", { body: { maxBatches: 2 } });
    await round(x!.placement);
    for (const t of tasks) expect((await expectCheckpointSound(t)).changelogs[0]!.checkpoint).toBe(WINDOW);

    // Every key written once more, then both changelogs lose their heads, below those positions.
    for (const t of tasks) await produce(keys.get(t.taskId)!, 1, expected);
    for (const t of tasks) {
      const { end } = (await describeOf(t)).changelogs[0]!;
      await driver.log.deleteRecordsBefore({ topic: CHANGELOG, partition: partitionOf(t.taskId) }, end - keys.get(t.taskId)!.length);
    }
    const reports = vi.spyOn(Coordinator.prototype, "reportCorruption");
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();

    expect(reports).toHaveBeenCalledTimes(1);
    const [report] = reports.mock.calls[0]!;
    expect([...report].map((c) => [c.instance, c.incarnation]).sort()).toEqual(
      tasks.map((t, i) => [`${t.taskId}@${t.placement}`, wiped[i]!.incarnation]).sort(),
    );
    for (const [i, t] of tasks.entries()) {
      const done = await expectCheckpointSound(t);
      expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped[i]!.incarnation + 1 });
      expect(done.changelogs[0]!.checkpoint).toBe(done.changelogs[0]!.end);
    }
    await expectEveryRecord(expected);
  });

  /** Wipes a task, then makes its changelog partition fail `times` calls while it restores. */
  async function restoreThroughFailures(taskId: string, times: number, prefix: string) {
    await call("/admin/restore/resume", { body: {} });
    const keys = keysOn(partitionOf(taskId), 20, prefix);
    const expected = new Map<string, Totals>();
    await produce(keys, 3, expected);
    await driver.runUntilQuiet();
    const instance = await activeInstance(driver.instances(), taskId);
    const changelog = env.LOG_PARTITION.getByName(`${CHANGELOG}/${partitionOf(taskId)}`);
    const failuresLeft = () => runInDurableObject(changelog, (object) => (object as unknown as { failuresToInject: number }).failuresToInject);

    await call("/admin/restore/pause", { method: "POST" });
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    // The task's own alarm only checks whether it is restored: run it now, not amid the failures.
    await runDurableObjectAlarm(driver.task(instance));
    const reports = vi.spyOn(Coordinator.prototype, "reportCorruption");
    const fail = await call("/admin/log/fail", { body: { topic: CHANGELOG, partition: partitionOf(taskId), times } });
    expect(fail.status).toBe(200);
    await call("/admin/restore/resume", { body: {} });
    // Rounds (some fail) until the partition answers again.
    for (let i = 0; i < 50 && (await failuresLeft()) > 0; i++) await round(instance.placement).catch(() => undefined);
    expect(await failuresLeft(), "the changelog is no longer read: nothing restores the task").toBe(0);
    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", lag: 0 });
    expect(done.changelogs[0]!.checkpoint).toBe(done.changelogs[0]!.end);
    await expectEveryRecord(expected);
    return { instance, wiped, done, reports };
  }

  it(`fetches failing up to the retry budget (${FETCH_RETRY_BUDGET}) are retried: no wipe`, async () => {
    const { wiped, done, reports } = await restoreThroughFailures("0_1", FETCH_RETRY_BUDGET, "fail-within");
    expect(done.incarnation).toBe(wiped.incarnation);
    expect(reports).not.toHaveBeenCalled();
  });

  it("fetches failing beyond the retry budget are corruption: wiped, revived, restored, RUNNING with the right state", async () => {
    // Failures go on past the report, into the revival itself.
    const { instance, wiped, done, reports } = await restoreThroughFailures("0_2", FETCH_RETRY_BUDGET + 3, "fail-beyond");
    expect(done.incarnation).toBe(wiped.incarnation + 1);
    expect(reports).toHaveBeenCalledTimes(1);
    expect(reports.mock.calls[0]![0]).toEqual([
      expect.objectContaining({
        instance: `${instance.taskId}@${instance.placement}`,
        incarnation: wiped.incarnation,
        reason: expect.stringMatching(/fetch failed 6 times/),
      }),
    ]);
  });
});

describe("shutdown and unregistration are bounded", () => {
  /** A task object that does not answer restore batches of `topic` until released. */
  function hangApplies(topic: string) {
    let release!: (reply: RestoreReply) => void;
    const gate = new Promise<RestoreReply>((resolve) => (release = resolve));
    let entered = 0;
    const original = TaskObject.prototype.applyRestoreBatch;
    vi.spyOn(TaskObject.prototype, "applyRestoreBatch").mockImplementation(async function (this: TaskObject, batch: RestoreBatch) {
      if (batch.topic !== topic) return original.call(this, batch);
      entered++;
      return gate;
    });
    return { release, entered: () => entered };
  }

  it("shutdown returns within its timeout while a round is stuck, unregistering does not wait for the round, and no rounds run afterwards", async () => {
    // A restore worker of its own, restoring a changelog into an instance that never answers.
    const worker = env.RESTORE_WORKER.getByName("restore@shutdown-test");
    const tp = { topic: "ingest-test", partition: 3 };
    await env.LOG_PARTITION.getByName(`${tp.topic}/${tp.partition}`).append(tp, [{ key: "k", value: "v" }]);
    const hang = hangApplies(tp.topic);
    const registration = (instance: string) => ({
      instance,
      taskId: "0_0",
      incarnation: 0,
      epoch: 1,
      role: "active" as const,
      placement: "shutdown-test",
      changelogs: [{ ...tp, store: "totals", checkpoint: null }],
    });
    expect(await worker.register(registration("0_0@shutdown-test"))).toBe(true);
    const stuck = worker.runRound();
    await expect.poll(() => hang.entered(), { timeout: 5_000 }).toBeGreaterThan(0);

    const started = Date.now();
    expect(await worker.shutdown(200)).toBe(false);
    expect(Date.now() - started).toBeLessThan(3_000);
    // Registration and unregistration are not queued behind the stuck round.
    expect(await worker.register(registration("0_1@shutdown-test"))).toBe(true);
    await worker.unregister("0_1@shutdown-test", 0);
    expect((await worker.status()).changelogs.map((c) => c.instance)).toEqual(["0_0@shutdown-test"]);

    hang.release({ applied: true, incarnation: 0, epoch: 1, role: "active", state: "RESTORING", checkpoint: 1, caughtUp: true });
    await stuck;
    // Shut down: no alarm armed, none armed by a new registration, and an alarm that fires takes no round.
    expect(await worker.shutdown(200)).toBe(true);
    expect(await worker.register(registration("0_2@shutdown-test"))).toBe(true);
    expect(await runInDurableObject(worker, (_, state) => state.storage.getAlarm())).toBeNull();
    await runInDurableObject(worker, (object) => object.alarm());
    expect(hang.entered()).toBe(1);
    expect((await worker.status()).changelogs.find((c) => c.instance === "0_2@shutdown-test")).toMatchObject({ position: null, restored: 0 });
  });

  it("an idle restore worker shuts down at once", async () => {
    const worker = env.RESTORE_WORKER.getByName("restore@shutdown-idle");
    expect(await worker.shutdown(1_000)).toBe(true);
    expect(await runInDurableObject(worker, (_, state) => state.storage.getAlarm())).toBeNull();
  });

  it("a task object does not wait for a restore worker that does not answer its unregistration", async () => {
    await call("/admin/restore/resume", { body: {} });
    const taskId = "0_3";
    const keys = keysOn(3, 10, "unregister-hang");
    const expected = new Map<string, Totals>();
    await produce(keys, 2, expected);
    await driver.runUntilQuiet();
    const instance = await activeInstance(driver.instances(), taskId);
    await call("/admin/restore/pause", { method: "POST" });
    const wiped = (await driver.task(instance).corrupt()) as TaskDescription;
    expect(await registered(instance)).toMatchObject({ incarnation: wiped.incarnation, position: null });

    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const original = RestoreWorker.prototype.unregister;
    let hung = 0;
    let answered = 0;
    vi.spyOn(RestoreWorker.prototype, "unregister").mockImplementation(async function (this: RestoreWorker, ...args: Parameters<RestoreWorker["unregister"]>) {
      hung++;
      await gate;
      await original.apply(this, args);
      answered++;
    });
    // Moving the restoring instance away revokes it, which unregisters it: that call hangs, the
    // revocation and the move go on.
    const other = instance.placement === "a" ? "b" : "a";
    const started = Date.now();
    await env.COORDINATOR.getByName("coordinator").migrate(taskId, other);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hung).toBeGreaterThanOrEqual(1);
    // Moved back: the instance registers again, for the new assignment.
    const back = await env.COORDINATOR.getByName("coordinator").migrate(taskId, instance.placement);
    expect(await registered(instance)).toMatchObject({ incarnation: wiped.incarnation, epoch: back.epoch });

    // The late unregistration of the revoked assignment arrives: it cannot undo the new registration.
    release();
    await expect.poll(() => answered, { timeout: 5_000 }).toBe(hung);
    expect(await registered(instance)).toMatchObject({ incarnation: wiped.incarnation, epoch: back.epoch });
    vi.restoreAllMocks();
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    const done = await expectCheckpointSound(instance);
    expect(done).toMatchObject({ state: "RUNNING", incarnation: wiped.incarnation });
    await expectEveryRecord(expected);
  }, 30_000);
});
