/**
 * Restore worker shards (src/restore/sharding.ts, src/names.ts): a task's instances at a placement
 * use the shard its id hashes to; `auto` sizes the count by the application's tasks; shard 0
 * keeps the name a placement's only restore worker had. The sharded runtime (two shards per
 * placement at 256 tasks) is tested by test/node/scale.test.ts.
 */
import { describe, expect, it } from "vitest";
import { parseInstanceName, parseRestoreWorkerName, restoreWorkerName } from "../../src/names";
import { AUTO_MAX_SHARDS, instancesOfOtherShards, restoreShardCount, restoreShardOf } from "../../src/restore/sharding";
import { readConfig } from "../../src/config";

describe("restore worker shards", () => {
  it("spread tasks evenly and stably", () => {
    const counts = new Array<number>(8).fill(0);
    for (let p = 0; p < 8_000; p++) counts[restoreShardOf(`0_${p}`, 8)]!++;
    for (const n of counts) expect(Math.abs(n - 1_000)).toBeLessThan(150);
    expect(restoreShardOf("0_17", 8)).toBe(restoreShardOf("0_17", 8));
    expect(restoreShardOf("0_17", 1)).toBe(0);
  });

  it("are sized by the application with auto: one per 128 tasks, 1 to 32", () => {
    expect(restoreShardCount("auto", 4)).toBe(1);
    expect(restoreShardCount("auto", 256)).toBe(2);
    expect(restoreShardCount("auto", 1_024)).toBe(8);
    expect(restoreShardCount("auto", 1_000_000)).toBe(AUTO_MAX_SHARDS);
    expect(restoreShardCount(5, 4)).toBe(5);
  });

  it("are named restore@<placement> for shard 0 and restore@<placement>#<n> after, parsed back", () => {
    expect(restoreWorkerName("eu")).toBe("restore@eu");
    expect(restoreWorkerName("eu", 0)).toBe("restore@eu");
    expect(restoreWorkerName("eu", 3)).toBe("restore@eu#3");
    expect(parseRestoreWorkerName("restore@eu#3")).toEqual({ placement: "eu", shard: 3 });
    expect(parseRestoreWorkerName("restore@eu")).toEqual({ placement: "eu", shard: 0 });
    for (const bad of ["restore@", "restore@eu#0", "restore@eu#x", "0_1@eu", "orders/1"]) expect(parseRestoreWorkerName(bad), bad).toBeUndefined();
    expect(parseInstanceName("0_12@eu")).toEqual({ taskId: "0_12", placement: "eu" });
    for (const bad of ["0_12", "@eu", "0_1@", "restore@eu"]) expect(parseInstanceName(bad), bad).toBeUndefined();
  });

  it("find the instances a shard serves no longer after RESTORE_SHARDS changed (every changelog of one counted once)", () => {
    const tasks = Array.from({ length: 40 }, (_, p) => `0_${p}`);
    const registrations = tasks.flatMap((taskId) => [
      { instance: `${taskId}@eu`, taskId, changelog: "a" },
      { instance: `${taskId}@eu`, taskId, changelog: "b" },
    ]);
    const foreign = instancesOfOtherShards(registrations, 1, 4);
    expect([...foreign].sort()).toEqual(
      tasks
        .filter((t) => restoreShardOf(t, 4) !== 1)
        .map((t) => `${t}@eu`)
        .sort(),
    );
    expect(foreign.size).toBeGreaterThan(0);
    expect(instancesOfOtherShards(registrations, 0, 1).size).toBe(0);
  });

  it("RESTORE_SHARDS takes auto or 1 to 256, and says what is wrong otherwise", () => {
    expect(readConfig({ RESTORE_SHARDS: "auto" }).RESTORE_SHARDS).toBe("auto");
    expect(readConfig({ RESTORE_SHARDS: "16" }).RESTORE_SHARDS).toBe(16);
    expect(readConfig({}).RESTORE_SHARDS).toBe("auto");
    for (const bad of ["0", "257", "-1", "two", "1.5"])
      expect(() => readConfig({ RESTORE_SHARDS: bad }), bad).toThrow(/RESTORE_SHARDS: .*auto or a whole number from 1 to 256/);
  });
});
