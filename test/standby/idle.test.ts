/**
 * Idle costs nothing: once processing is done and standbys are current, no task instance has an
 * alarm or an in-memory timer armed, and no partition keeps its echo alarm (the wake-ups after
 * appends are taken back once every subscriber has heard; a changelog's, which comes with its quiet
 * compaction, is kept rather than moved with a storage write, comes once and arms nothing more) —
 * only maintenance that is due (retention when the oldest row's time is up, a compaction once
 * quiet), which runs once.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TopicPartition } from "../../src/log/types";
import { topicPartition } from "../../src/names";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { keysOn } from "../support/keys";
import { allCurrent } from "../support/recovered";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const DAY_MS = 24 * 60 * 60 * 1000;

const partition = (tp: TopicPartition) => env.LOG_PARTITION.getByName(topicPartition(tp));

/** A partition's armed alarm and whether its settling timer is still pending. */
async function partitionAlarms(tp: TopicPartition): Promise<{ alarm: number | null; settling: boolean }> {
  return runInDurableObject(partition(tp), async (object, state) => ({
    alarm: await state.storage.getAlarm(),
    settling: (object as unknown as { settleTimer?: unknown }).settleTimer !== undefined,
  }));
}

describe("an idle application", { timeout: 60_000 }, () => {
  it("has no alarm and no timer armed on its task instances, and no echo armed on its partitions, once quiet", async () => {
    const instances = await driver.instances();
    for (let p = 0; p < application.taskIds().length; p++) {
      await driver.pipe(
        "orders",
        keysOn(p, 5, "idle").map((key) => ({ key, value: { amount: 2 } })),
      );
    }
    await driver.runUntilQuiet();
    await allCurrent(driver, instances);
    const inputs = application.taskIds().map((_, p) => ({ topic: "orders", partition: p }));
    const changelogs = application.taskIds().flatMap((taskId) => application.changelogPartitions(taskId));
    // Each partition takes its echo back within a second of its subscribers having heard (a
    // changelog's comes with its compaction); due maintenance (the changelogs' compaction once
    // quiet) runs when its alarm comes (run here rather than waited for), and arms nothing after.
    for (const tp of [...inputs, ...changelogs]) {
      await until(
        async () => {
          const { alarm, settling } = await partitionAlarms(tp);
          if (settling) return false;
          // Input: at most the retention check when its oldest record is past retention.ms (7 days).
          if (alarm === null || alarm > Date.now() + 6 * DAY_MS) return true;
          if (tp.topic !== "orders" && alarm <= Date.now() + 60_000) await runDurableObjectAlarm(partition(tp));
          return false;
        },
        30_000,
        `${topicPartition(tp)} to take its echo back and arm nothing sooner than its records' retention`,
      );
    }
    for (const instance of instances) {
      const armed = await runInDurableObject(driver.task(instance), async (object, state) => ({
        alarm: await state.storage.getAlarm(),
        timer: (object as unknown as { runner: { timer: { armedAt: number | undefined } } }).runner.timer.armedAt,
      }));
      expect(armed, `${instance.taskId}@${instance.placement}`).toEqual({ alarm: null, timer: undefined });
    }
  });
});
