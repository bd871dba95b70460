/**
 * A changelog partition's alarm is a storage write each time it is armed (Cloudflare bills a
 * `setAlarm` as a row written): over quiet spells that follow each other within seconds — a task's
 * commits, each heard by the standby's restore worker — it is armed once, for the first echo after
 * the first append (which is also when the quiet compaction comes), and kept while every
 * subscriber hears, instead of taken back to the compaction after each spell and armed again
 * sooner by the next append (issue #33). It still comes: the echo of a lost wake-up, and the
 * compaction once quiet.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TopicPartition } from "../../src/log/types";
import type { AlarmStorage } from "../../src/util/alarm";
import { hearsByAnswering, topicPartition } from "../../src/names";
import { QUIET_COMPACTION_MS } from "../../src/log/partition-store";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { allCurrent } from "../support/recovered";
import { quietSpell } from "../support/spells";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const partition = (tp: TopicPartition) => env.LOG_PARTITION.getByName(topicPartition(tp));

/** What the test reads of a partition object (its private parts). */
interface PartitionInside {
  settle(): Promise<void>;
  subscribers: { list(): string[] };
  wakes: { wakeUps: { unheard(names: readonly string[], end: number): string[] } };
  store: { offsets(tp: TopicPartition): { latest: number } };
  alarms: { storage: AlarmStorage };
  alarmWrites?: number;
  alarmRuns?: number;
}

describe("a changelog partition's alarm over quiet spells", { timeout: 90_000 }, () => {
  it("is written once for spells that follow each other, not armed and taken back per spell, and still comes", async () => {
    const instances = await driver.instances();
    const [changelog] = application.changelogPartitions("0_0");
    const tp = { topic: changelog!.topic, partition: changelog!.partition };
    const spell = (n: number) => quietSpell(driver, `spell-${n}`);
    await spell(0);
    await allCurrent(driver, instances);
    // Count the alarm writes the partition's alarm makes, and its runs, from here (on this object:
    // one started anew would have no counts, and fails the test below).
    await runInDurableObject(partition(tp), (object) => {
      const inside = object as unknown as PartitionInside & { alarm(): Promise<void> };
      expect(inside.subscribers.list().some(hearsByAnswering)).toBe(true);
      const storage = inside.alarms.storage;
      inside.alarmWrites = 0;
      inside.alarmRuns = 0;
      inside.alarms.storage = {
        getAlarm: () => storage.getAlarm(),
        setAlarm: (at) => {
          inside.alarmWrites!++;
          return storage.setAlarm(at);
        },
        deleteAlarm: () => storage.deleteAlarm(),
      };
      const alarm = inside.alarm.bind(inside);
      inside.alarm = () => {
        inside.alarmRuns!++;
        return alarm();
      };
    });
    const before = (await driver.log.offsets(tp)).latest;
    const SPELLS = 4;
    for (let n = 1; n <= SPELLS; n++) {
      await spell(n);
      // Each spell ends heard: the restore worker answered the wake-up for the changelog's end, and
      // the partition settles (as its timer would, SETTLE_MS later).
      await until(
        () =>
          runInDurableObject(partition(tp), async (object) => {
            const inside = object as unknown as PartitionInside;
            const end = inside.store.offsets(tp).latest;
            if (inside.wakes.wakeUps.unheard(inside.subscribers.list().filter(hearsByAnswering), end).length > 0) return false;
            await inside.settle();
            return true;
          }),
        20_000,
        `the restore worker to hear of spell ${n}`,
      );
    }
    expect((await driver.log.offsets(tp)).latest).toBeGreaterThanOrEqual(before + SPELLS);
    const seen = await runInDurableObject(partition(tp), async (object, state) => {
      const inside = object as unknown as PartitionInside;
      return { writes: inside.alarmWrites, runs: inside.alarmRuns, alarm: await state.storage.getAlarm() };
    });
    expect(seen.writes, "the same object counted throughout").toBeDefined();
    // Before: an echo armed per spell (5 s after its append, sooner than the compaction armed by
    // the spell before) and moved back to the compaction as it settled, two writes per spell. Now
    // none while the alarm stands, and one more each time it came early and armed the next.
    expect(seen.writes!).toBeLessThanOrEqual(1 + seen.runs!);
    expect(seen.writes!).toBeLessThan(SPELLS);
    // It still comes: no later than the quiet compaction after the last append (with the slack).
    expect(seen.alarm).not.toBeNull();
    expect(seen.alarm!).toBeLessThanOrEqual(Date.now() + QUIET_COMPACTION_MS + 1_000);
  });
});
