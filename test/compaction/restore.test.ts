/**
 * Restore bounded by state, not history: 50,000 updates to 500 keys of one task, the changelog
 * compacted (as its topic's default `cleanup.policy=compact` says), the task wiped: restoration
 * replays about one record per key (`replayed` in GET /tasks), not the 50,000, and every value —
 * and the input position the restored records carry (I5) — is exact: more orders afterwards are
 * each counted once.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../../src/names";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);
const KEYS = 500;
const UPDATES = 100;
const BATCH = 25; // RESTORE_BATCH_RECORDS in this test project

describe("restoring a compacted changelog", { timeout: 180_000 }, () => {
  it("replays about one record per live key, and every value is exact", async () => {
    const keys = keysOn(0, KEYS, "compacted");
    await driver.instances();
    const active = ((await env.COORDINATOR.getByName(COORDINATOR_NAME).assignments()) as InstanceAssignment[]).find(
      (i) => i.taskId === "0_0" && i.role === "active",
    )!;
    const task = driver.task(active);
    for (let round = 1; round <= UPDATES; round++) {
      await driver.log.append(
        { topic: "orders", partition: 0 },
        keys.map((key) => ({ key, value: JSON.stringify({ amount: round }) })),
      );
      await task.drain();
    }
    const changelog = application.changelogPartitions("0_0")[0]!;
    expect((await driver.log.offsets(changelog)).latest).toBe(KEYS * UPDATES);

    // Compaction (its alarm may have started already): run it to its end.
    const partition = env.LOG_PARTITION.getByName(`${changelog.topic}/${changelog.partition}`);
    for (let i = 0; ; i++) {
      expect(i, "compaction finishes").toBeLessThan(200);
      const result = await partition.maintain(changelog);
      if (!result.ok) throw new Error(result.failure.message);
      if (!result.value.more) break;
    }
    const kept = await partition.stats(changelog);
    if (!kept.ok) throw new Error(kept.failure.message);
    // Each key's latest record, and the newest row (the last commit's 500 records), never compacted.
    expect(kept.value.records).toBeLessThanOrEqual(2 * KEYS);
    expect(kept.value).toMatchObject({ earliest: 0, latest: KEYS * UPDATES });

    await task.corrupt();
    await driver.runUntilQuiet();
    const described = (await driver.task(active).describe()) as TaskDescription;
    expect(described).toMatchObject({ state: "RUNNING", lag: 0 });
    const replayed = described.changelogs[0]!.replayed;
    expect(replayed).toBeGreaterThan(0);
    expect(replayed).toBeLessThanOrEqual(2 * KEYS + BATCH);
    // Through the API as a user reads it.
    const listed = await json<{ tasks: TaskDescription[] }>(await call("/tasks"));
    expect(listed.tasks.find((t) => t.id === "0_0" && t.role === "active")!.changelogs[0]!.replayed).toBe(replayed);

    const sum = (UPDATES * (UPDATES + 1)) / 2;
    const page = await json<{ items: { key: string; value: { count: number; sum: number } }[] }>(
      await call("/stores/totals/keys?prefix=compacted-&limit=1000"),
    );
    expect(page.items).toHaveLength(KEYS);
    for (const item of page.items) expect(item.value, item.key).toEqual({ count: UPDATES, sum });

    // The restored input position is exact: one more order per key is counted once.
    await driver.log.append(
      { topic: "orders", partition: 0 },
      keys.map((key) => ({ key, value: JSON.stringify({ amount: 1 }) })),
    );
    await driver.runUntilQuiet();
    for (const key of keys.slice(0, 20)) expect(await driver.get("totals", key)).toEqual({ count: UPDATES + 1, sum: sum + 1 });
  });
});
