/**
 * The KAFKA-16017 scenario with a standby (NUM_STANDBYS=1): the active is corrupted, wiped and
 * revived; revoked while it restores, the task moves to its standby's placement (the standby is
 * promoted and restores only the tail); then it moves back to the placement whose instance kept
 * the partly restored state — and every record is in the store.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);
const describeInstance = async (taskId: string, placement: string) => (await driver.task({ taskId, placement }).describe()) as TaskDescription;

it("corrupt, revive, revoke while restoring to the standby, move back: every record is in the store", async () => {
  const taskId = "0_3";
  const keys = keysOn(3, 20, "seed-standby");
  const expected = new Map<string, { count: number; sum: number }>();
  const produce = async (rounds: number) => {
    for (let r = 0; r < rounds; r++) {
      await driver.pipe(
        "orders",
        keys.map((key, i) => ({ key, value: { amount: i + r } })),
      );
      keys.forEach((key, i) => {
        const t = expected.get(key) ?? { count: 0, sum: 0 };
        expected.set(key, { count: t.count + 1, sum: t.sum + i + r });
      });
    }
  };
  await produce(4);
  await driver.runUntilQuiet();
  const instances = await driver.instances();
  const home = instances.find((i) => i.taskId === taskId && i.role === "active")!.placement;
  const standbyAt = instances.find((i) => i.taskId === taskId && i.role === "standby")!.placement;
  expect(standbyAt).not.toBe(home);
  const end = (await describeInstance(taskId, home)).changelogs[0]!.end;

  // Corrupted: wiped and revived; it restores part of the changelog.
  await call("/admin/restore/pause", { method: "POST" });
  await call(`/admin/tasks/${taskId}/corrupt`, { method: "POST" });
  await call("/admin/restore/resume", { body: { maxBatches: 1 } });
  await driver.restoreRound();
  const restored = (await describeInstance(taskId, home)).changelogs[0]!.checkpoint!;
  expect(restored).toBeGreaterThan(0);
  expect(restored).toBeLessThan(end);

  // Revoked while restoring, to the standby's placement (restoration still held): the checkpoint
  // it leaves is exactly the restored position, and the promoted standby needs no restore to run.
  expect(await json(await call(`/admin/tasks/${taskId}/migrate`, { body: { to: standbyAt } }))).toMatchObject({ changed: true });
  const left = await describeInstance(taskId, home);
  expect(left.role).not.toBe("active");
  expect(left.changelogs[0]!.checkpoint).toBe(restored);
  const promoted = await describeInstance(taskId, standbyAt);
  expect(promoted).toMatchObject({ role: "active", state: "RUNNING" });
  await call("/admin/restore/resume", { body: {} });
  await produce(1);
  await driver.runUntilQuiet();

  // Moved back to the first placement: it resumes from its own checkpoint, never ahead of the truth.
  await call(`/admin/tasks/${taskId}/migrate`, { body: { to: home } });
  await driver.runUntilQuiet();
  const back = await describeInstance(taskId, home);
  expect(back).toMatchObject({ role: "active", state: "RUNNING", lag: 0 });
  expect(back.changelogs[0]!.checkpoint).toBe(back.changelogs[0]!.end);
  for (const [key, totals] of expected) expect(await driver.get("totals", key), key).toEqual(totals);
});
