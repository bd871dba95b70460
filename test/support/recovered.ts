/** Waits, bounded, until a task's active instance runs again caught up (after a fault, on its own and driven). */
import type { TestDriver } from "../../platform/testing/test-driver";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import type { TaskDescription } from "../../src/task/describe";
import { activeInstance } from "./active";
import { until } from "./until";

export async function recovered(driver: TestDriver, task: string): Promise<void> {
  await until(
    async () => {
      try {
        await driver.runUntilQuiet();
        const active = await activeInstance(driver.instances(), task);
        const d = (await driver.task(active).describe()) as TaskDescription;
        return d.state === "RUNNING" && d.lag === 0 && d.pendingBatches === 0;
      } catch {
        return false;
      }
    },
    60_000,
    `task ${task} running and caught up`,
  );
}

/**
 * Waits, bounded, until every one of `instances` has lag 0, standbys included: they learn of their
 * changelogs' growth from the partitions' wake-ups; restore rounds here only hurry them.
 */
export async function allCurrent(driver: TestDriver, instances: readonly InstanceAssignment[]): Promise<void> {
  await until(
    async () => {
      await driver.restoreRound();
      return (await Promise.all(instances.map((i) => driver.task(i).describe()))).every((d) => d.lag === 0);
    },
    20_000,
    "every instance current",
  );
}
