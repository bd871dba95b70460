/**
 * A task object's alarm and wake-ups (a log partition's call after an append). A wake-up with no
 * run in progress starts one at once, without a durable alarm write; one that comes while a run
 * (the alarm's, or a wake-up's) is in progress writes nothing either: the run takes another step
 * for it, or, as it ends, has the in-memory timer look again (the alarm standing behind it), so
 * what arrived after its last fetch is still looked at.
 * A run whose commit took all the input waiting, with no wake-up meanwhile, stops there.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TaskObject } from "../durable-objects/task-object";
import { COORDINATOR_NAME, instanceName, topicPartition } from "../src/names";
import type { Log } from "../src/log/types";
import type { WakePlan } from "../src/task/pacing";
import type { StepOutcome } from "../src/task/protocol";
import type { CommitMode, StreamTask } from "../src/task/stream-task";
import { TestDriver } from "../platform/testing/test-driver";
import { keyOn } from "./support/keys";
import { until } from "./support/until";
import { application } from "./support/orders-app";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

type Partition = { topic: string; partition: number };

/**
 * Task `0_<partition>`'s active instance with an order of `amount` for `key` waiting in its input:
 * the partition's wake-ups are dropped and its in-memory timer stilled while the order is appended (nothing runs the instance
 * behind the test's back), its alarm deleted, and the outcome of each step it takes is pushed to `outcomes`, then
 * `afterStep(outcomes)` runs.
 */
async function withWaitingOrder(
  partition: number,
  key: string,
  amount: number,
  body: (t: { instance: TaskObject; state: DurableObjectState; input: Partition; outcomes: StepOutcome[] }) => Promise<void>,
  afterStep: (outcomes: StepOutcome[]) => Promise<void> = async () => {},
): Promise<void> {
  await driver.instances();
  await driver.runUntilQuiet();
  const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), `0_${partition}`);
  const input = { topic: "orders", partition };
  await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(60_000);
  await runInDurableObject(env.TASK_OBJECT.getByName(instanceName(active)), async (object, state) => {
    const task = (object as unknown as { task: { step(mode?: CommitMode): Promise<StepOutcome> } }).task;
    // Nor does the in-memory timer (a commit's progress, a poll) while the order is appended: on a
    // loaded machine it could take the order before the test's run does. The body has it back.
    const timer = (object as unknown as { runner: { timer: { fire: () => void } } }).runner.timer;
    const fire = timer.fire;
    timer.fire = () => {};
    const outcomes: StepOutcome[] = [];
    const step = task.step.bind(task);
    task.step = async (mode?: CommitMode) => {
      const outcome = await step(mode);
      outcomes.push(outcome);
      await afterStep(outcomes);
      return outcome;
    };
    try {
      await state.storage.deleteAlarm();
      await driver.log.append(input, [{ key, value: JSON.stringify({ amount }) }]);
    } finally {
      timer.fire = fire;
    }
    await body({ instance: object as unknown as TaskObject, state, input, outcomes });
  });
}

describe("a task object's wake-ups and alarm", () => {
  it("a wake-up while the alarm runs writes no alarm then; as the run ends the in-memory timer looks at it, the alarm standing behind it", async () => {
    await driver.instances();
    await driver.runUntilQuiet();
    // Task 0_3's input never had an append in this file; its wake-ups are dropped, so only the test wakes it.
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_3");
    const input = { topic: "orders", partition: 3 };
    const key = keyOn(3, "noted");
    await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(60_000);
    await runInDurableObject(env.TASK_OBJECT.getByName(instanceName(active)), async (object, state) => {
      const instance = object as unknown as TaskObject;
      // An idle alarm round arms nothing: the alarm seen below is the wake-up's.
      await state.storage.deleteAlarm();
      await instance.alarm();
      expect(await state.storage.getAlarm()).toBeNull();

      // During the run's only step (it finds nothing), an order arrives and its wake-up with it:
      // noted, and taken by no step of that run.
      const task = (object as unknown as { task: { step(mode?: CommitMode): Promise<StepOutcome> } }).task;
      const step = task.step.bind(task);
      let woke: number | null | undefined;
      task.step = async (mode?: CommitMode) => {
        const outcome = await step(mode);
        task.step = step;
        await driver.log.append(input, [{ key, value: '{"amount":4}' }]);
        woke = await instance.wake();
        expect(await state.storage.getAlarm()).toBeNull();
        return outcome;
      };
      const before = Date.now();
      await instance.alarm();
      expect(woke).toBeNull(); // an idle task relies on wake-ups
      const armed = await state.storage.getAlarm();
      expect(armed!).toBeGreaterThan(before + 4_000);
      await until(async () => (await driver.get<string, { count: number }>("totals", key))?.count === 1, 10_000, "the order the wake-up announced", 50);
      // Taken by the timer's run: the alarm never fired (it is still armed, for the same time).
      expect(await state.storage.getAlarm()).toBe(armed);
    });
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 4 });
  });

  it("with no run in progress, runs at once in the background of its answer, writing no alarm", async () => {
    const key = keyOn(0, "kicked");
    await withWaitingOrder(0, key, 5, async ({ instance, state, input, outcomes }) => {
      await instance.alarm(); // takes the order: the store is current
      expect(outcomes).toEqual(["more"]);
      await driver.log.append(input, [{ key, value: '{"amount":6}' }]);
      outcomes.length = 0;
      // Armed, if at all, only behind the progress owed to the group (RECORD_OWED_MS): the wake-up writes none.
      const armed = await state.storage.getAlarm();
      await instance.wake();
      expect(await state.storage.getAlarm()).toBe(armed);
      await until(async () => outcomes.length > 0, 10_000, "the wake-up's run to take a step");
      expect(outcomes[0]).toBe("more");
    });
    await until(async () => (await driver.get<string, { count: number }>("totals", key))?.count === 2, 10_000, "the second order in the store");
    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 11 });
  });

  it("does not follow a commit that took all the input waiting with another fetch: what comes next wakes it", async () => {
    const key = keyOn(2, "once");
    await withWaitingOrder(2, key, 3, async ({ instance, outcomes }) => {
      await instance.alarm();
      expect(outcomes).toEqual(["more"]);
    });
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 3 });
  });

  it("takes another step when a wake-up came during its commit: the input appended meanwhile", async () => {
    const key = keyOn(1, "twice");
    let instance: TaskObject | undefined;
    await withWaitingOrder(
      1,
      key,
      3,
      async (t) => {
        instance = t.instance;
        await t.instance.alarm();
        expect(t.outcomes).toEqual(["more", "more"]);
      },
      // After the first commit another order arrives, and its wake-up with it (dropped at the partition, so made here).
      async (outcomes) => {
        if (outcomes.length !== 1) return;
        await driver.log.append({ topic: "orders", partition: 1 }, [{ key, value: '{"amount":4}' }]);
        await instance!.wake();
      },
    );
    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 7 });
  });

  it("a wake-up after an append carries the fetch: its run takes the order from it without calling the partition", async () => {
    const key = keyOn(3, "pushed");
    const input = { topic: "orders", partition: 3 };
    await driver.instances();
    await driver.runUntilQuiet();
    await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(0);
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_3");
    await runInDurableObject(env.TASK_OBJECT.getByName(instanceName(active)), async (object, state) => {
      // The instance's log (the host's): its fetches from the input partition are counted.
      const log = (object as unknown as { task: { options: { log: Log } } }).task.options.log;
      const fetch = log.fetch;
      const fetched: number[] = [];
      log.fetch = (tp, offset, bounds) => {
        if (tp.topic === input.topic && tp.partition === input.partition) fetched.push(offset);
        return fetch.call(log, tp, offset, bounds);
      };
      // Only the wake-up runs the instance: its alarm deleted and its in-memory timer stilled (on a
      // loaded machine either could look, and fetch, between the append and the wake-up).
      const timer = (object as unknown as { runner: { timer: { fire: () => void } } }).runner.timer;
      const fire = timer.fire;
      timer.fire = () => {};
      let offset = -1;
      try {
        await state.storage.deleteAlarm();
        offset = (await driver.log.append(input, [{ key, value: '{"amount":8}' }])).baseOffset;
        await until(async () => (await driver.get<string, { count: number }>("totals", key))?.count === 1, 10_000, "the order in the store");
      } finally {
        log.fetch = fetch;
        timer.fire = fire;
      }
      // No fetch reached the order (a later look, from past it, may fetch).
      expect(fetched.filter((from) => from <= offset)).toEqual([]);
    });
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 8 });
  });

  it("a wake-up's run starts after the wake-up has answered (a turn of the event loop later): on a thread the objects share, the append that woke it answers first", async () => {
    const key = keyOn(0, "answered-first");
    await withWaitingOrder(0, key, 9, async ({ instance, outcomes }) => {
      const events: string[] = [];
      const task = (instance as unknown as { task: { step(mode?: CommitMode): Promise<StepOutcome> } }).task;
      const step = task.step.bind(task);
      task.step = (mode?: CommitMode) => {
        events.push("run's step");
        return step(mode);
      };
      await instance.wake();
      events.push("wake-up answered");
      await until(async () => outcomes.length > 0, 10_000, "the wake-up's run to take a step");
      expect(events).toEqual(["wake-up answered", "run's step"]);
      expect(outcomes[0]).toBe("more");
    });
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 9 });
  });

  it("output lingering after a run is sent by the in-memory timer, with no alarm written for it: the input partition's echo stands behind it", async () => {
    const first = keyOn(1, "linger-first");
    const second = keyOn(1, "linger-second");
    const output = async (key: string) => (await driver.read("totals")).filter((r) => r.key === key).length;
    await withWaitingOrder(1, first, 2, async ({ instance, input }) => {
      // A send lingers this long after the last one (the default, 100 ms, is too short to look at).
      (instance as unknown as { task: { options: { lingerMs: number } } }).task.options.lingerMs = 1_500;
      // What the runner arms, with why, and the timer's firings. Other alarms may be armed under
      // load (a retry after a slow call, a commit's backstop): the test forbids only the one for
      // the progress owed (output lingering), which the echo replaces.
      const runner = (instance as unknown as { runner: Record<string, unknown> }).runner as {
        arm(plan: WakePlan): Promise<void>;
        timer: { fire: () => void };
      };
      const plans: WakePlan[] = [];
      const arm = runner.arm;
      runner.arm = (plan) => {
        plans.push(plan);
        return arm.call(runner, plan);
      };
      const fire = runner.timer.fire;
      let fired = 0;
      runner.timer.fire = () => {
        fired++;
        fire();
      };
      try {
        await instance.alarm(); // sent at once: nothing was sent lately
        await driver.log.append(input, [{ key: second, value: '{"amount":3}' }]);
        await instance.alarm(); // lingers
        expect(await output(second)).toBe(0);
        // Its input is not yet committed to the group: the partition echoes while the offset lags (issue #33).
        expect(plans.some((p) => p.timer?.why === "progress")).toBe(true);
        await until(async () => (await output(second)) === 1, 10_000, "the lingering output to be sent", 50);
      } finally {
        runner.arm = arm;
        runner.timer.fire = fire;
      }
      // Sent by the timer, and no alarm was asked for the progress owed.
      expect(fired).toBeGreaterThan(0);
      expect(plans.filter((p) => p.alarm?.why === "progress")).toEqual([]);
    });
    expect(await output(first)).toBe(1);
  });

  it("while input keeps coming, a run processes at once and leaves the commit to the in-memory timer when it is due: queries read the work meanwhile", {
    timeout: 20_000,
  }, async () => {
    const first = keyOn(1, "due-first");
    const second = keyOn(1, "due-second");
    await withWaitingOrder(1, first, 2, async ({ instance, state, input }) => {
      // The commit interval (the default, 100 ms, is too short to look at).
      const task = (instance as unknown as { task: StreamTask }).task;
      (task as unknown as { options: { commitIntervalMs: number } }).options.commitIntervalMs = 3_000;
      const position = () => task.positions()["orders/1"] ?? 0;
      await instance.alarm(); // the first order: committed at once, unless the task processed input lately
      const end = (await driver.log.append(input, [{ key: second, value: '{"amount":3}' }])).baseOffset + 1;
      await instance.alarm(); // processed, not committed
      expect(await instance.query("totals", second)).toMatchObject({ status: "ok", value: JSON.stringify({ count: 1, sum: 3 }) });
      expect(position()).toBeLessThan(end);
      expect(task.commitDueAt()).toBeDefined();
      const alarm = await state.storage.getAlarm();
      expect(alarm).toBeGreaterThan(Date.now() + 4_000);
      await until(async () => position() === end, 10_000, "the commit that was due", 50);
      // Committed by the timer: the alarm never fired (it is still armed, for the same time).
      expect(await state.storage.getAlarm()).toBe(alarm);
      expect(task.commitDueAt()).toBeUndefined();
    });
  });

  it("while input keeps coming, the commit the timer makes does not fetch an input partition known to end at its position", { timeout: 20_000 }, async () => {
    const first = keyOn(2, "quiet-first");
    const second = keyOn(2, "quiet-second");
    const input = { topic: "orders", partition: 2 };
    await driver.instances();
    await driver.runUntilQuiet();
    await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(0);
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_2");
    await runInDurableObject(env.TASK_OBJECT.getByName(instanceName(active)), async (object, state) => {
      const task = (object as unknown as { task: StreamTask }).task;
      // A commit interval long enough to see the second order processed and not yet committed.
      (task as unknown as { options: { commitIntervalMs: number } }).options.commitIntervalMs = 1_500;
      const log = (task as unknown as { options: { log: Log } }).options.log;
      const fetch = log.fetch;
      const fetched: number[] = [];
      log.fetch = (tp, offset, bounds) => {
        if (tp.topic === input.topic && tp.partition === input.partition) fetched.push(offset);
        return fetch.call(log, tp, offset, bounds);
      };
      const position = () => task.positions()[topicPartition(input)] ?? 0;
      try {
        await driver.log.append(input, [{ key: first, value: '{"amount":1}' }]);
        await until(async () => (await driver.get<string, { count: number }>("totals", first))?.count === 1, 10_000, "the first order");
        // An alarm left from the set-up (a lifecycle operation's recovery alarm) would run a fetch of its own: its run is the backstop of lost wake-ups.
        await state.storage.deleteAlarm();
        fetched.length = 0;
        const end = (await driver.log.append(input, [{ key: second, value: '{"amount":2}' }])).baseOffset + 1;
        await until(async () => (await (object as unknown as TaskObject).query("totals", second)).status === "ok", 10_000, "the second order processed");
        await until(async () => position() === end, 10_000, "the commit the timer makes", 50);
      } finally {
        log.fetch = fetch;
      }
      // The second order came with its wake-up, and the timer's commit knew there was nothing more.
      expect(fetched).toEqual([]);
    });
    expect(await driver.get("totals", second)).toEqual({ count: 1, sum: 2 });
  });

  it("under a steady stream of appends the partition holds wake-ups and sends one with the appends gathered; each order counts once", {
    timeout: 30_000,
  }, async () => {
    const input = { topic: "orders", partition: 0 };
    const keys = Array.from({ length: 5 }, (_, i) => keyOn(0, `held-${i}`));
    await driver.instances();
    await driver.runUntilQuiet();
    await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(0);
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_0");
    const appends = 20;
    // 800 records in all: under the batch (1,000) that would put the task under load (it then skips wake-ups anyway).
    const perAppend = 40;
    let wakes = 0;
    await runInDurableObject(env.TASK_OBJECT.getByName(instanceName(active)), async (object) => {
      const runner = (object as unknown as { runner: { wake: (...args: unknown[]) => Promise<number | null> } }).runner;
      const wake = runner.wake.bind(runner);
      runner.wake = (...args: unknown[]) => {
        wakes++;
        return wake(...args);
      };
      try {
        // Appends close together: far above the rate at which wake-ups are held.
        await Promise.all(
          Array.from({ length: appends }, () =>
            driver.log.append(
              input,
              Array.from({ length: perAppend }, (_, i) => ({ key: keys[i % keys.length]!, value: '{"amount":1}' })),
            ),
          ),
        );
        const counted = async () =>
          (await Promise.all(keys.map((key) => driver.get<string, { count: number }>("totals", key)))).reduce((n, t) => n + (t?.count ?? 0), 0);
        await until(async () => (await counted()) === appends * perAppend, 20_000, "every order counted");
      } finally {
        runner.wake = wake;
      }
    });
    // Fewer wake-ups than appends: some carried several (every append woke its task before).
    expect(wakes).toBeGreaterThan(0);
    expect(wakes).toBeLessThan(appends);
    for (const key of keys)
      expect(await driver.get("totals", key)).toEqual({ count: (appends * perAppend) / keys.length, sum: (appends * perAppend) / keys.length });
  });
});
