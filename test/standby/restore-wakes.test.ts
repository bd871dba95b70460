/**
 * A changelog partition wakes its standby's restore worker once, not once per append: the worker
 * answers a wake-up promising to read the changelog to its end in its next round, so appends made
 * before it fetched skip the wake-up (one request per changelog append at 256 partitions, a
 * quarter of a request per order; issue #33). Once it fetched, the next append wakes it again, and
 * the standby ends current.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TopicPartition } from "../../src/log/types";
import { hearsByAnswering, topicPartition } from "../../src/names";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { keysOn } from "../support/keys";
import { allCurrent } from "../support/recovered";

const driver = new TestDriver(env, application);
const partition = (tp: TopicPartition) => env.LOG_PARTITION.getByName(topicPartition(tp));

/** What the test reads of a partition object (its private parts). */
interface PartitionInside {
  subscribers: { list(): string[] };
  wakes: {
    targets: { wakeListener(name: string, tp: TopicPartition): Promise<unknown> };
    wakeUps: { unheard(names: readonly string[], end: number): string[] };
  };
  store: { offsets(tp: TopicPartition): { latest: number } };
  listenerWakes?: number;
}

describe("a standby's restore worker woken by its changelog", { timeout: 90_000 }, () => {
  it("is woken once for the appends it has not read yet, again after it read, and its standby ends current", async () => {
    const spell = async (n: number) => {
      await driver.pipe(
        "orders",
        keysOn(0, 2, `wake-${n}`).map((key) => ({ key, value: { amount: 1 } })),
      );
      await driver.runUntilQuiet();
    };
    await spell(0);
    const instances = await driver.instances();
    await allCurrent(driver, instances);
    const [changelog] = application.changelogPartitions("0_0");
    const tp = { topic: changelog!.topic, partition: changelog!.partition };
    const standby = instances.find((i) => i.taskId === "0_0" && i.role === "standby")!;
    const worker = driver.restoreWorkerOf(standby);
    // Its rounds read nothing while paused: a promise it made stays unkept until it resumes.
    await worker.pause();
    await runInDurableObject(partition(tp), (object) => {
      const inside = object as unknown as PartitionInside;
      expect(inside.subscribers.list().some(hearsByAnswering)).toBe(true);
      const wakeListener = inside.wakes.targets.wakeListener.bind(inside.wakes.targets);
      inside.listenerWakes = 0;
      inside.wakes.targets.wakeListener = (name, at) => {
        inside.listenerWakes!++;
        return wakeListener(name, at);
      };
    });
    const seen = () =>
      runInDurableObject(partition(tp), (object) => {
        const inside = object as unknown as PartitionInside;
        const end = inside.store.offsets(tp).latest;
        return { wakes: inside.listenerWakes, end, unheard: inside.wakes.wakeUps.unheard(inside.subscribers.list().filter(hearsByAnswering), end) };
      });
    const before = (await seen()).end;
    for (let n = 1; n <= 4; n++) await spell(n);
    const paused = await seen();
    expect(paused.wakes, "the same object counted throughout").toBeDefined();
    expect(paused.end).toBeGreaterThanOrEqual(before + 4);
    // One wake-up for four appends or more; the rest count as heard (no echo owed for them).
    expect(paused.wakes).toBe(1);
    expect(paused.unheard).toEqual([]);
    await worker.resume();
    await allCurrent(driver, await driver.instances());
    // It fetched: the next append wakes it again (and once more for each append after a fetch of its).
    await spell(5);
    expect((await seen()).wakes).toBeGreaterThanOrEqual(2);
    await allCurrent(driver, await driver.instances());
  });
});
