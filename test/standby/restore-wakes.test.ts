/**
 * A changelog partition wakes its standby's restore worker once, not once per append: the worker
 * answers a wake-up promising to read the changelog to its end in its next round, so appends made
 * before it fetched skip the wake-up (one request per changelog append at 256 partitions, a
 * quarter of a request per order; issue #33). Once it fetched, the next append wakes it again, and
 * the standby ends current. And the rounds that growth brings come at most every
 * STANDBY_UPDATE_INTERVAL_MS, each taking every append since.
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
import { quietSpell } from "../support/spells";
import { until } from "../support/until";
import { Host } from "../../platform/host";

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
    const spell = (n: number) => quietSpell(driver, `wake-${n}`);
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

  it("feeds the standby at most once per update interval while its task commits, with every append since, and it ends current", async () => {
    const host = Host.of(application, env);
    const interval = host.config.STANDBY_UPDATE_INTERVAL_MS;
    expect(interval).toBeGreaterThan(0);
    const instances = await driver.instances();
    await allCurrent(driver, instances);
    const [changelog] = application.changelogPartitions("0_0");
    const tp = { topic: changelog!.topic, partition: changelog!.partition };
    const standby = instances.find((i) => i.taskId === "0_0" && i.role === "standby")!;
    const worker = env.RESTORE_WORKER.getByName(host.restoreWorkerNameOf(standby));
    // Note when each round begins, from here (no round is run by the test below: the alarms bring them).
    await runInDurableObject(worker, (object) => {
      const inside = object as unknown as { round(): Promise<unknown>; roundsAt?: number[] };
      const round = inside.round.bind(inside);
      inside.roundsAt = [];
      inside.round = () => {
        inside.roundsAt!.push(Date.now());
        return round();
      };
    });
    const before = (await driver.log.offsets(tp)).latest;
    const SPELLS = 8;
    for (let n = 0; n < SPELLS; n++) {
      const end = (await driver.log.offsets(tp)).latest;
      await driver.pipe("orders", [{ key: keysOn(0, 1, `feed-${n}`)[0]!, value: { amount: 1 } }]);
      // The task processes and commits on its own (its input's wake-up): one changelog append a spell.
      await until(async () => (await driver.log.offsets(tp)).latest > end, 20_000, `the changelog to grow for spell ${n}`, 5);
    }
    const appends = (await driver.log.offsets(tp)).latest - before;
    expect(appends).toBeGreaterThanOrEqual(SPELLS);
    await until(async () => (await driver.task(standby).describe()).lag === 0, 20_000, "the standby current, fed by the worker's alarms", 50);
    const roundsAt = await runInDurableObject(worker, (object) => (object as unknown as { roundsAt?: number[] }).roundsAt);
    expect(roundsAt, "the same object noted its rounds throughout").toBeDefined();
    expect(roundsAt!.length).toBeGreaterThan(0);
    // Each round after the first came an interval or more after the one before (the timers' own
    // rounding aside): growth heard in between waited for it.
    for (let i = 1; i < roundsAt!.length; i++) expect(roundsAt![i]! - roundsAt![i - 1]!).toBeGreaterThanOrEqual(interval - 5);
    await allCurrent(driver, instances);
  });
});
