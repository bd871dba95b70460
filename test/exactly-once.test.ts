import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionForKey } from "../src/log/partitioner";
import type { CommitStep } from "../src/task/protocol";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

/** The running totals a customer's orders produce, one per order: what changelog and output must hold. */
function fold(amounts: number[]): { count: number; sum: number }[] {
  let sum = 0;
  return amounts.map((amount, i) => ({ count: i + 1, sum: (sum += amount) }));
}

async function instanceOf(key: string) {
  const taskId = `0_${partitionForKey(key, 4)}`;
  const instance = await activeInstance(driver.instances(), taskId);
  return driver.task(instance);
}

async function historyOf(topic: string, key: string) {
  return (await driver.read(topic)).filter((r) => r.key === key).map((r) => JSON.parse(r.value));
}

describe("exactly once, proven by crashing", () => {
  const steps: CommitStep[] = ["before-commit", "after-commit", "mid-send", "after-send"];

  it.each(steps)("a crash %s loses nothing and repeats nothing", async (step) => {
    const key = `crash-${step}`;
    const amounts = [3, 4, 5, 6];
    const task = await instanceOf(key);
    await driver.pipe(
      "orders",
      amounts.slice(0, 2).map((amount) => ({ key, value: { amount } })),
    );
    await driver.runUntilQuiet();

    await task.crash(step);
    await driver.pipe(
      "orders",
      amounts.slice(2).map((amount) => ({ key, value: { amount } })),
    );
    // The next commit dies at that step: the call that ran it fails with the object.
    await expect(task.drain()).rejects.toThrow();
    await driver.runUntilQuiet();

    const expected = fold(amounts);
    expect(await driver.get("totals", key)).toEqual(expected[expected.length - 1]);
    expect(await historyOf("edge-streams-totals-changelog", key)).toEqual(expected);
    expect(await historyOf("totals", key)).toEqual(expected);
  });

  it("a crash between any two steps of many commits still yields the exact fold", async () => {
    const key = "crash-storm";
    const amounts: number[] = [];
    for (let round = 0; round < 8; round++) {
      // A stub that saw its object die stays broken: take a new one each round.
      const task = await instanceOf(key);
      const batch = [round, round + 0.5];
      amounts.push(...batch);
      await task.crash(steps[round % steps.length]);
      await driver.pipe(
        "orders",
        batch.map((amount) => ({ key, value: { amount } })),
      );
      await expect(task.drain()).rejects.toThrow(/injected crash/);
    }
    await driver.runUntilQuiet();
    const expected = fold(amounts);
    expect(await driver.get("totals", key)).toEqual(expected[expected.length - 1]);
    expect(await historyOf("edge-streams-totals-changelog", key)).toEqual(expected);
    expect(await historyOf("totals", key)).toEqual(expected);
  });
});

describe("an idle task costs nothing", () => {
  it("leaves no alarm armed once its input is processed", async () => {
    await driver.pipe("orders", [{ key: "idle-check", value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    for (const instance of await driver.instances()) {
      const stub = driver.task(instance);
      // Let an alarm armed by the last wake-up run: it finds nothing to do and arms none.
      await runDurableObjectAlarm(stub);
      const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
      expect(alarm).toBeNull();
    }
  });

  it("is woken by an append to its input, without polling", async () => {
    const key = "wake-me";
    const task = await instanceOf(key);
    await driver.runUntilQuiet();
    await runDurableObjectAlarm(task);
    expect(await runInDurableObject(task, (_, state) => state.storage.getAlarm())).toBeNull();
    await driver.pipe("orders", [{ key, value: { amount: 7 } }]);
    // The partition wakes its subscriber after acknowledging the append: an alarm gets armed. It
    // runs by itself, possibly before a look at it: then the order is processed (nothing drained).
    const woken = async () =>
      (await runInDurableObject(task, (_, state) => state.storage.getAlarm())) !== null || (await driver.get("totals", key)) !== undefined;
    await expect.poll(woken, { timeout: 5_000 }).toBe(true);
  });
});
