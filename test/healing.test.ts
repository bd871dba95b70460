/**
 * Progress that heals itself: wake-ups lost on the way (the fault route `POST /admin/wakes/drop`,
 * API v1.1) never strand input — a partition wakes its readers again after appends, backing off
 * while their committed offset stays behind; nor does a run that a wake-up started and that died —
 * and a standby whose registration is checked again looks at its changelog again.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TaskObject } from "../durable-objects/task-object";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import { topicPartition } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

/** The task's active instance, quiet: every task caught up, and no alarm of it left from before (only a wake-up could start it). */
async function quietActive(taskId: string): Promise<InstanceAssignment> {
  const active = await activeInstance(driver.instances(), taskId);
  await driver.runUntilQuiet();
  await runDurableObjectAlarm(driver.task(active));
  expect(await runInDurableObject(driver.task(active), (_o, state) => state.storage.getAlarm())).toBeNull();
  return active;
}

/** Waits (bounded) until `GET /tasks` shows the task's active instance with lag 0. */
async function activeCaughtUp(taskId: string): Promise<void> {
  await until(
    async () => {
      const tasks = (await json<{ tasks: { id: string; role: string; lag: number }[] }>(await call("/tasks"))).tasks;
      return tasks.find((t) => t.id === taskId && t.role === "active")?.lag === 0;
    },
    30_000,
    `task ${taskId}'s orders to be processed`,
  );
}

describe("lost wake-ups", { timeout: 60_000 }, () => {
  it("input appended while wake-ups are dropped is still processed, later, with nothing driving it", async () => {
    const keys = keysOn(1, 3, "woken-late");
    const active = await quietActive("0_1");
    const dropped = await call("/admin/wakes/drop", { body: { seconds: 2 } });
    expect(dropped.status).toBe(200);
    expect(await json(dropped)).toMatchObject({ dropping: 2 });
    // Appended straight to the log: nothing but the partition's own alarm can tell the task.
    await driver.log.append(
      { topic: "orders", partition: 1 },
      keys.map((key) => ({ key, value: JSON.stringify({ amount: 6 }) })),
    );
    await activeCaughtUp("0_1");
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 6 });
  });

  it("input whose partition died right after the append's write, before its wake-up, is still processed, later", async () => {
    const keys = keysOn(0, 2, "append-died");
    await quietActive("0_0");
    const input = { topic: "orders", partition: 0 };
    await runInDurableObject(env.LOG_PARTITION.getByName(topicPartition(input)), async (object, state) => {
      // Whatever follows the append's write (its wake-ups, its alarm) is cut short by the crash.
      (object as unknown as { afterAppend: () => Promise<never> }).afterAppend = async () => {
        await state.storage.sync();
        state.abort("injected crash: after the append's write");
        throw new Error("unreachable");
      };
      await object.append(
        input,
        keys.map((key) => ({ key, value: JSON.stringify({ amount: 5 }) })),
      );
    }).catch(() => undefined);
    expect(await driver.log.offsets(input)).toMatchObject({ latest: expect.any(Number) });
    // Nothing here calls the instance: the echo alarm, armed before the append, wakes it.
    await activeCaughtUp("0_0");
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 5 });
  });

  it("input whose wake-up started a run that died before its commit is still processed, later", async () => {
    const keys = keysOn(3, 2, "run-died");
    const active = await quietActive("0_3");
    // The partition's own wake-up is dropped; the one made here starts a run (no alarm is
    // written for it), and the object dies while that run waits for its fetch.
    await env.LOG_PARTITION.getByName(topicPartition({ topic: "orders", partition: 3 })).dropWakes(1_000);
    await driver.log.append(
      { topic: "orders", partition: 3 },
      keys.map((key) => ({ key, value: JSON.stringify({ amount: 4 }) })),
    );
    await runInDurableObject(driver.task(active), async (object, state) => {
      await (object as unknown as TaskObject).wake();
      expect(await state.storage.getAlarm()).toBeNull();
      state.abort("injected crash: during a wake-up's run");
    }).catch(() => undefined);
    for (const key of keys) expect(await driver.get("totals", key)).toBeUndefined();
    await activeCaughtUp("0_3");
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 4 });
  });

  it("output lingering when its object dies is sent anyway: the input partition's echo stands behind the in-memory timer", async () => {
    const [first, second] = keysOn(2, 2, "linger-died");
    const active = await quietActive("0_2");
    const input = { topic: "orders", partition: 2 };
    await env.LOG_PARTITION.getByName(topicPartition(input)).dropWakes(1_000);
    const output = async (key: string) => (await driver.read("totals")).filter((r) => r.key === key).length;
    let seen: { first: number; second: number; alarm: number | null; at: number } | undefined;
    await runInDurableObject(driver.task(active), async (object, state) => {
      const instance = object as unknown as TaskObject;
      // A send lingers this long after the last one (the default, 100 ms, is too short to look at).
      (object as unknown as { task: { options: { lingerMs: number } } }).task.options.lingerMs = 1_500;
      await driver.log.append(input, [{ key: first!, value: JSON.stringify({ amount: 9 }) }]);
      await instance.alarm(); // sent at once: nothing was sent lately
      await driver.log.append(input, [{ key: second!, value: JSON.stringify({ amount: 8 }) }]);
      await instance.alarm(); // lingers
      seen = { first: await output(first!), second: await output(second!), alarm: await state.storage.getAlarm(), at: Date.now() };
      state.abort("injected crash: while output lingers");
    }).catch(() => undefined);
    expect(seen).toMatchObject({ first: 1, second: 0 });
    // The in-memory timer was to look when the send is due (within 1.5 s); no alarm behind it: the
    // input is not committed to the group, and the partition echoes while its reader's offset lags (issue #33).
    expect(seen!.alarm).toBeNull();
    // Nothing here calls the coordinator or the instance: the partition wakes its reader, whose group offset lags.
    await until(async () => (await output(second!)) === 1, 30_000, "the lingering output to be sent");
    expect(await driver.get("totals", second!)).toEqual({ count: 1, sum: 8 });
  });

  it("refuses a bad body with 400", async () => {
    expect((await call("/admin/wakes/drop", { body: { seconds: -1 } })).status).toBe(400);
    expect((await call("/admin/wakes/drop", { body: {} })).status).toBe(400);
  });
});
