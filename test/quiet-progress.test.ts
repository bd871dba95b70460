/**
 * A quiet spell's progress (issue #33): after an append to a quiet input partition, the task
 * processes and commits it, and owes its group offset (and the acknowledgements of what it sent)
 * for RECORD_OWED_MS. Its in-memory timer commits them; no alarm of its own stands behind the
 * timer, since the input partition's echo does: armed before the append, first TASK_ECHO_MS after
 * it (past the time the offset may be owed, so that a healthy task is not woken for it), and kept
 * while the group's offset lags the partition's end. A task that dies owing that progress is woken
 * by the echo and commits it.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME, instanceName, topicPartition } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { activeInstance } from "./support/active";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { until } from "./support/until";

const driver = new TestDriver(env, application);

describe("progress owed after a quiet spell's commit", { timeout: 60_000 }, () => {
  it("is looked at by the task's timer alone, the input partition's echo standing behind it, which wakes a task that died owing it", async () => {
    await driver.instances();
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_2");
    const task = env.TASK_OBJECT.getByName(instanceName(active));
    const input = { topic: "orders", partition: 2 };
    const partition = env.LOG_PARTITION.getByName(topicPartition(input));
    // A first order, taken by the group (the instance's first commits go at once), then quiet.
    await driver.log.append(input, [{ key: keyOn(2, "first"), value: JSON.stringify({ amount: 1 }) }]);
    const first = (await driver.log.offsets(input)).latest;
    await until(async () => (await driver.log.committedOffset(application.groupId, input))?.offset === first, 30_000, "the first order taken by the group");
    await runDurableObjectAlarm(task);
    const key = keyOn(2, "owed");
    await driver.log.append(input, [{ key, value: JSON.stringify({ amount: 7 }) }]);
    const end = (await driver.log.offsets(input)).latest;

    // The partition's wake-up runs the task: the order is committed, and its offset owed to the group.
    const owing = async () =>
      runInDurableObject(task, async (object, state) => {
        const runner = (object as unknown as { runner: { timer: { armedAt: number | undefined } } }).runner;
        const positions = (object as unknown as { task: { storage: { positions(): Record<string, number> } } }).task.storage.positions();
        return { position: positions[topicPartition(input)], timer: runner.timer.armedAt, alarm: await state.storage.getAlarm() };
      });
    await until(
      async () => {
        const { position, timer } = await owing();
        return position === end && timer !== undefined;
      },
      20_000,
      "the order committed by the task, and its run ended",
    );
    const owed = await owing();
    expect((await driver.log.committedOffset(application.groupId, input))?.offset ?? -1).toBeLessThan(end);
    expect(owed.timer).toBeDefined();
    // No backstop alarm written: the partition's alarm stands behind the timer (its echo, or
    // maintenance due sooner: each alarm echoes to readers that lag).
    expect(owed.alarm).toBeNull();
    const echoAt = await runInDurableObject(partition, (_object, state) => state.storage.getAlarm());
    expect(echoAt).not.toBeNull();

    // The task dies owing it: what it held in memory (the timer, the acknowledgements) is gone.
    await runInDurableObject(task, (_object, state) => state.abort("injected crash: owing the group its offset")).catch(() => undefined);
    expect((await driver.log.committedOffset(application.groupId, input))?.offset ?? -1).toBeLessThan(end);
    // The partition's echo (run here rather than waited for) wakes it, and it commits the offset at once.
    await runDurableObjectAlarm(partition);
    await until(async () => (await driver.log.committedOffset(application.groupId, input))?.offset === end, 20_000, "the group's offset at the end");
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 7 });
  });
});
