/**
 * Crash consistency of the lifecycle operations around the commit path: corruption handling,
 * restoration's end, migration (both instances and the coordinator), the application shutdown and
 * the restore worker's corruption report. Each test kills an object at one named point inside an
 * operation, then only waits: no call drives processing, restoration or assignment (the test
 * reads state, and appends orders straight to the log). The objects' own alarms must bring the
 * task back to RUNNING with lag 0, its totals exact, and its changelog and output holding each
 * update exactly once.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CoordinatorStep } from "../src/coordinator/coordinator-context";
import type { CoordinatorStore, InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../src/names";
import type { TaskDescription } from "../src/task/describe";
import { APPLICATION_SHUT_DOWN, type LifecycleStep } from "../src/task/protocol";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call } from "./support/api";
import { keysOn } from "./support/keys";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
/** A fresh stub each time: a stub that saw its object die stays broken. */
const coordinator = () => env.COORDINATOR.getByName(COORDINATOR_NAME);
const CHANGELOG = "edge-streams-totals-changelog";
/** Recovery only waits on alarms (a second or two each, with back-offs): a generous bound. */
const RECOVERY_MS = 30_000;

interface Totals {
  count: number;
  sum: number;
}

/** Orders appended straight to the log (ingest would ask the coordinator, which is outside help). */
async function append(partition: number, keys: readonly string[], amount: number, expected: Map<string, Totals[]>): Promise<void> {
  await driver.log.append(
    { topic: "orders", partition },
    keys.map((key) => ({ key, value: JSON.stringify({ amount }) })),
  );
  for (const key of keys) {
    const history = expected.get(key) ?? [];
    const last = history[history.length - 1] ?? { count: 0, sum: 0 };
    history.push({ count: last.count + 1, sum: last.sum + amount });
    expected.set(key, history);
  }
}

/** A task with some orders processed, restored and running (set up with the driver's help). */
async function runningTask(partition: number, prefix: string): Promise<{ taskId: string; keys: string[]; expected: Map<string, Totals[]> }> {
  const taskId = `0_${partition}`;
  const keys = keysOn(partition, 4, prefix);
  const expected = new Map<string, Totals[]>();
  await driver.instances();
  await append(partition, keys, 5, expected);
  await append(partition, keys, 7, expected);
  await driver.runUntilQuiet();
  return { taskId, keys, expected };
}

/** Calls `operation`, which must fail: the object it reaches dies at the planned step. */
async function dies(operation: () => Promise<unknown>): Promise<void> {
  const error = await operation().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(String(error)).toMatch(/injected crash|under way/);
}

/**
 * Waits, without driving anything, until the task's active is acknowledged, RUNNING, caught up
 * (lag 0: its input processed and committed) with nothing left to send; then checks its totals
 * and that changelog and output hold each update once.
 */
async function expectRecovered(taskId: string, keys: readonly string[], expected: Map<string, Totals[]>): Promise<TaskDescription> {
  let last: unknown;
  await until(
    // An object that dies while being looked at is not recovered yet.
    () =>
      (async () => {
        const active = await activeInstance(coordinator().assignments(), taskId);
        if (!active?.acknowledged) return false;
        const d = (await driver.task(active).describe()) as TaskDescription;
        last = d;
        return d.role === "active" && d.state === "RUNNING" && d.lag === 0 && d.pendingBatches === 0 && d.failure === null;
      })().catch(() => false),
    RECOVERY_MS,
    `task ${taskId} to recover on its own (last seen: ${JSON.stringify(last)})`,
  );
  const active = await activeInstance(coordinator().assignments(), taskId);
  for (const key of keys) {
    const answer = await driver.task(active).query("totals", key);
    expect(answer.status === "ok" && JSON.parse(answer.value!), key).toEqual(expected.get(key)!.at(-1));
  }
  const history = async (topic: string) => {
    const records = (await driver.read(topic)).filter((r) => keys.includes(r.key!));
    return Object.fromEntries(keys.map((key) => [key, records.filter((r) => r.key === key).map((r) => JSON.parse(r.value) as Totals)]));
  };
  const wanted = Object.fromEntries(keys.map((key) => [key, expected.get(key)!]));
  expect(await history(CHANGELOG), "changelog: each update once").toEqual(wanted);
  expect(await history("totals"), "output: each update once").toEqual(wanted);
  return (await driver.task(active).describe()) as TaskDescription;
}

describe("a crash inside corruption handling", { timeout: 90_000 }, () => {
  const steps: LifecycleStep[] = ["corrupt:after-deliver", "corrupt:after-wipe", "sync:after-subscriptions"];
  it.each(steps)("at %s: the task restores and runs again by itself", async (step) => {
    const { taskId, keys, expected } = await runningTask(1, `corrupt-${step}`);
    const active = await activeInstance(coordinator().assignments(), taskId);
    const before = (await driver.task(active).describe()) as TaskDescription;
    await driver.task(active).crash(step);
    await dies(() => driver.task(active).corrupt());
    await append(1, keys, 11, expected);
    const after = await expectRecovered(taskId, keys, expected);
    expect(after.incarnation).toBe(step === "corrupt:after-deliver" ? before.incarnation : before.incarnation + 1);
  });

  it("at restore:after-running (restored, still registered, nothing scheduled): it processes by itself", async () => {
    const { taskId, keys, expected } = await runningTask(2, "restored-running");
    const active = await activeInstance(coordinator().assignments(), taskId);
    await driver.task(active).crash("restore:after-running");
    // The wiped instance restores by itself (its restore worker's alarm) and dies as it turns
    // RUNNING, possibly while still answering this call.
    await driver
      .task(active)
      .corrupt()
      .catch((error: unknown) => expect(String(error)).toMatch(/injected crash/));
    await append(2, keys, 13, expected);
    await expectRecovered(taskId, keys, expected);
  });

  it("a restore worker that dies right after reporting corruption leaves no registration to serve for ever", async () => {
    const { taskId, keys, expected } = await runningTask(3, "report-crash");
    for (let amount = 1; amount <= 14; amount++) await append(3, keys, amount, expected);
    await driver.runUntilQuiet();
    const active = await activeInstance(coordinator().assignments(), taskId);
    const instance = `${taskId}@${active.placement}`;
    // Wiped, and restored one window (two batches of 25 in tests, RESTORE_READ_AHEAD=1: 50 of its 64
    // changelog records): a checkpoint inside the changelog.
    await call("/admin/restore/pause", { method: "POST" });
    const wiped = (await driver.task(active).corrupt()) as TaskDescription;
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await driver.restoreRound();
    expect(((await driver.task(active).describe()) as TaskDescription).changelogs[0]!.checkpoint).toBe(50);
    await call("/admin/restore/pause", { method: "POST" });
    // The changelog loses the records at that checkpoint: the next round finds it corrupted,
    // reports it, and dies before it removed the registration.
    const changelog = application.changelogPartitions(taskId)[0]!;
    await driver.log.deleteRecordsBefore(changelog, (await driver.log.offsets(changelog)).latest - 2);
    await driver.restoreWorker(active.placement).crash("after-report");
    await call("/admin/restore/resume", { body: {} });
    // (While a crash is planned, only this call runs rounds; after it, the worker's alarms do.)
    await dies(() => driver.restoreWorker(active.placement).runRound());
    const registrations = async () => (await driver.restoreWorker(active.placement).status()).changelogs.filter((c) => c.instance === instance);
    await until(
      async () => {
        const d = (await driver.task(await activeInstance(coordinator().assignments(), taskId)).describe()) as TaskDescription;
        return d.incarnation > wiped.incarnation && d.state === "RUNNING" && d.lag === 0 && (await registrations()).length === 0;
      },
      RECOVERY_MS,
      "the task to run again, with no registration left",
    );
  });
});

describe("a crash inside a migration", { timeout: 90_000 }, () => {
  const atNewInstance: LifecycleStep[] = ["assign:after-meta", "sync:after-subscriptions"];
  it.each(atNewInstance)("the new instance dies at %s: the move completes by itself", async (step) => {
    const { taskId, keys, expected } = await runningTask(0, `move-new-${step}`);
    const from = (await activeInstance(coordinator().assignments(), taskId)).placement;
    const to = from === "a" ? "b" : "a";
    await driver.task({ taskId, placement: to }).crash(step);
    await dies(() => coordinator().migrate(taskId, to));
    await append(0, keys, 17, expected);
    await expectRecovered(taskId, keys, expected);
    expect((await activeInstance(coordinator().assignments(), taskId)).placement).toBe(to);
  });

  it("the old instance dies at revoke:after-suspend: the move completes by itself", async () => {
    const { taskId, keys, expected } = await runningTask(1, "move-old");
    const from = await activeInstance(coordinator().assignments(), taskId);
    const to = from.placement === "a" ? "b" : "a";
    await driver.task(from).crash("revoke:after-suspend");
    await dies(() => coordinator().migrate(taskId, to));
    await append(1, keys, 19, expected);
    await expectRecovered(taskId, keys, expected);
    expect((await activeInstance(coordinator().assignments(), taskId)).placement).toBe(to);
    expect(((await driver.task(from).describe()) as TaskDescription).role).toBe("idle");
  });

  const atCoordinator: CoordinatorStep[] = ["migrate:after-intent", "push:after-instance"];
  it.each(atCoordinator)("the coordinator dies at %s: the move completes by itself, and moving back works", async (step) => {
    const { taskId, keys, expected } = await runningTask(2, `move-coordinator-${step}`);
    const from = (await activeInstance(coordinator().assignments(), taskId)).placement;
    const to = from === "a" ? "b" : "a";
    await coordinator().crash(step);
    await dies(() => coordinator().migrate(taskId, to));
    await append(2, keys, 23, expected);
    await expectRecovered(taskId, keys, expected);
    expect((await activeInstance(coordinator().assignments(), taskId)).placement).toBe(to);
    // Moving back to where it came from is a real move, not "already there".
    const back = await coordinator().migrate(taskId, from);
    expect(back).toMatchObject({ changed: true, from: to, to: from });
    await append(2, keys, 29, expected);
    await expectRecovered(taskId, keys, expected);
  });
});

describe("a crash inside an application shutdown and its lifting", { timeout: 90_000 }, () => {
  it("dying after the shutdown is stored halts every active anyway; dying after it is lifted resumes them anyway", async () => {
    const { taskId, keys, expected } = await runningTask(3, "shutdown-crash");
    await coordinator().crash("shutdown:after-record");
    await dies(() => coordinator().shutdownApplication({ taskId, placement: "a", reason: "test" }));
    await until(
      async () => {
        const actives = ((await coordinator().assignments()) as InstanceAssignment[]).filter((i) => i.role === "active");
        const described = (await Promise.all(actives.map((a) => driver.task(a).describe()))) as TaskDescription[];
        return described.every((d) => d.failure?.startsWith(APPLICATION_SHUT_DOWN));
      },
      RECOVERY_MS,
      "every active to halt",
    );
    await coordinator().crash("resume:after-clear");
    await dies(() => coordinator().resumeApplication());
    await append(3, keys, 31, expected);
    await expectRecovered(taskId, keys, expected);
  });
});

describe("the coordinator's sweep", { timeout: 90_000 }, () => {
  it("gives an instance that lost its storage its assignment back, and the task restores", async () => {
    const { taskId, keys, expected } = await runningTask(0, "lost-storage");
    const active = await activeInstance(coordinator().assignments(), taskId);
    // The instance's storage is gone (and the object restarts): it no longer knows it is active.
    await runInDurableObject(driver.task(active), async (_object, state) => {
      await state.storage.deleteAll();
    });
    await runInDurableObject(driver.task(active), (_object, state) => state.abort("injected crash: storage lost")).catch(() => undefined);
    // The sweep is due: the coordinator's alarm runs it.
    await runInDurableObject(coordinator(), (object) => (object as unknown as { store: CoordinatorStore }).store.settings.setNextSweepAt(0));
    expect(await runDurableObjectAlarm(coordinator())).toBe(true);
    await append(0, keys, 37, expected);
    const after = await expectRecovered(taskId, keys, expected);
    expect(after.epoch).toBeGreaterThan(active.epoch);
  });
});

describe("the crash fault route", () => {
  it("plans a crash at a lifecycle step, and refuses an unknown step or placement with 400", async () => {
    await driver.instances();
    const planned = await call("/admin/tasks/0_2/crash", { body: { at: "corrupt:after-wipe" } });
    expect(planned.status).toBe(200);
    expect(await planned.json()).toMatchObject({ at: "corrupt:after-wipe" });
    // Withdrawn, so no later test meets it: a plan lives in the object's memory only.
    const { placement } = await activeInstance(coordinator().assignments(), "0_2");
    await runInDurableObject(driver.task({ taskId: "0_2", placement }), (_object, state) => state.abort("injected crash: withdraw the plan")).catch(
      () => undefined,
    );
    expect((await call("/admin/tasks/0_2/crash", { body: { at: "after-commit" } })).status).toBe(400);
    expect((await call("/admin/tasks/0_2/crash", { body: { at: "corrupt:after-wipe", placement: "nowhere" } })).status).toBe(400);
    expect((await call("/admin/tasks/0_2/crash", { rawBody: "{" })).status).toBe(400);
  });
});
