/**
 * The group's offset rides the answer to a wake-up (issue #33). At 256 partitions a task's input
 * arrives every few seconds, each arrival one commit, and the group's offset for it was owed for
 * RECORD_OWED_MS and then committed by a request of its own to the input partition (0.065 requests
 * per order). Now the task answers the next wake-up with the offset it owes there, and the partition
 * commits it as it reads the answer; the next wake-up tells the task what the group holds, and only
 * then does the task count it as taken.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME, instanceName, topicPartition } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { activeInstance } from "./support/active";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { until } from "./support/until";

const driver = new TestDriver(env, application);

describe("the group's offset owed after an arrival", { timeout: 60_000 }, () => {
  it("is committed by the partition from the task's answer to the next wake-up, and the task hears it was taken with the one after", async () => {
    await driver.instances();
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_3");
    const task = env.TASK_OBJECT.getByName(instanceName(active));
    const input = { topic: "orders", partition: 3 };
    const group = async () => (await driver.log.committedOffset(application.groupId, input))?.offset ?? -1;
    const state = () =>
      runInDurableObject(task, (object) => {
        type Sender = { committedPositions(): Record<string, number>; unsentBatches(): number };
        const t = (object as unknown as { task: { storage: { positions(): Record<string, number> }; sender: Sender } }).task;
        const key = topicPartition(input);
        return { position: t.storage.positions()[key], known: t.sender.committedPositions()[key], unsent: t.sender.unsentBatches() };
      });
    const arrive = async (name: string, amount: number) => {
      await driver.log.append(input, [{ key: keyOn(3, name), value: JSON.stringify({ amount }) }]);
      const end = (await driver.log.offsets(input)).latest;
      // Committed by the task, and what it sent for it acknowledged (the offset implies it).
      await until(
        async () => {
          const { position, unsent } = await state();
          return position === end && unsent === 0;
        },
        20_000,
        `the order ${name} committed by the task and sent: ${JSON.stringify(await state())} end ${end}`,
      );
      return end;
    };

    // A first order, taken by the group (the instance's first commits go at once).
    const first = await arrive("first", 1);
    await until(async () => (await group()) === first, 30_000, "the first order taken by the group");
    // A second: committed by the task, its offset owed (RECORD_OWED_MS, 10 s).
    const second = await arrive("second", 2);
    expect(await group()).toBeLessThan(second);
    // A third: its wake-up's answer carries the second's offset, which the partition commits.
    const third = await arrive("third", 3);
    await until(async () => (await group()) === second, 5_000, "the second order's offset committed from the answer");
    expect(await group()).toBeLessThan(third);
    // Not yet counted as taken by the task: only what the partition tells is.
    expect((await state()).known ?? -1).toBeLessThan(second);
    // A fourth: its wake-up tells the task the group holds the second, and answers with the third.
    await arrive("fourth", 4);
    expect((await state()).known).toBeGreaterThanOrEqual(second);
    await until(async () => (await group()) === third, 5_000, "the third order's offset committed from the answer");
    expect(await driver.get("totals", keyOn(3, "third"))).toEqual({ count: 1, sum: 3 });
  });
});
