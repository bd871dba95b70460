/**
 * The group's offset rides the answer to a wake-up (issue #33). At 256 partitions a task's input
 * arrives every few seconds, each arrival one commit, and the group's offset for it was owed for
 * RECORD_OWED_MS and then committed by a request of its own to the input partition (0.065 requests
 * per order). Now the task answers a wake-up with the offset it owes there, once owed most of
 * RECORD_OWED_MS, and the partition commits it as it reads the answer; the next wake-up tells the
 * task what the group holds, and only then does the task count it as taken.
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
import { RECORD_OWED_MS } from "../src/task/outbox-sender";
import { ANSWER_OWED_SHARE } from "../src/task/wake-commits";

const driver = new TestDriver(env, application);

describe("the group's offset owed after an arrival", { timeout: 60_000 }, () => {
  it("is committed by the partition from the task's answer to a wake-up once owed a while, and the task hears it was taken with the next", async () => {
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

    // The offset owed has been owed `ms` longer than it has (an answer carries it only once owed a while).
    const age = (ms: number) =>
      runInDurableObject(task, (object) => {
        const sender = (object as unknown as { task: { sender: { owedSince: number | undefined } } }).task.sender;
        if (sender.owedSince !== undefined) sender.owedSince -= ms;
      });

    // A first order, taken by the group (the instance's first commits go at once).
    const first = await arrive("first", 1);
    await until(async () => (await group()) === first, 30_000, "the first order taken by the group");
    // A second: committed by the task, its offset owed (RECORD_OWED_MS, 10 s).
    const second = await arrive("second", 2);
    expect(await group()).toBe(first);
    // A third, soon after: its wake-up's answer carries nothing yet (the partition would write the
    // group's row per arrival, a row costing more than the request it saves).
    const third = await arrive("third", 3);
    expect(await group()).toBe(first);
    // Owed for most of RECORD_OWED_MS: the fourth's wake-up's answer carries the third's offset,
    // which the partition commits as it reads the answer.
    await age(RECORD_OWED_MS * ANSWER_OWED_SHARE);
    const fourth = await arrive("fourth", 4);
    await until(async () => (await group()) === third, 5_000, "the third order's offset committed from the answer");
    // Not yet counted as taken by the task: only what the partition tells is.
    expect((await state()).known ?? -1).toBeLessThan(third);
    // A fifth: its wake-up tells the task the group holds the third (its answer carries nothing:
    // the clock of what is owed starts again).
    await arrive("fifth", 5);
    expect((await state()).known).toBe(third);
    expect(await group()).toBe(third);
    expect(fourth).toBeGreaterThan(third);
    expect(await driver.get("totals", keyOn(3, "fourth"))).toEqual({ count: 1, sum: 4 });
  });
});
