/**
 * Automatic moves: an active instance on a placement that is no longer configured (here "c", while
 * PLACEMENTS is "a,b") moves only once a warm instance at its new placement is within
 * ACCEPTABLE_RECOVERY_LAG (0 in this project) — a warm-up standby catches up first.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { CoordinatorStore } from "../../src/coordinator/coordinator-store";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);
const coordinator = env.COORDINATOR.getByName("coordinator");

it("moves an active off a removed placement only after a warm-up instance caught up", async () => {
  // Task 0_0 runs at placement "c", which the configuration no longer has.
  const epoch = await runInDurableObject(coordinator, (object) => {
    const store = (object as unknown as { store: CoordinatorStore }).store;
    return store.transaction(() => {
      const e = store.nextEpoch();
      store.put({ taskId: "0_0", placement: "c", role: "active", epoch: e, acknowledged: true });
      return e;
    });
  });
  const stranded = driver.task({ taskId: "0_0", placement: "c" });
  await stranded.assign({ taskId: "0_0", placement: "c", role: "active", epoch });
  const keys = keysOn(0, 6, "moving");
  await driver.log.append(
    { topic: "orders", partition: 0 },
    keys.map((key) => ({ key, value: '{"amount":2}' })),
  );
  await stranded.drain();
  expect(((await stranded.describe()) as TaskDescription).changelogs[0]!.end).toBe(keys.length);

  // The coordinator notices: a warm-up standby at a configured placement, not yet caught up
  // (restoration is held so the check cannot race the restore worker's own alarm).
  await call("/admin/restore/pause", { method: "POST" });
  const first = await driver.instances();
  const warmUp = first.find((i) => i.taskId === "0_0" && i.role === "standby")!;
  expect(["a", "b"]).toContain(warmUp.placement);
  expect(first.find((i) => i.taskId === "0_0" && i.role === "active")!.placement).toBe("c");
  expect(((await driver.task(warmUp).describe()) as TaskDescription).lag).toBeGreaterThan(0);

  // Once it has caught up, the next check moves the active there: revoked at "c", promoted.
  await call("/admin/restore/resume", { body: {} });
  await driver.restoreRound();
  const moved = await driver.instances();
  const active = moved.find((i) => i.taskId === "0_0" && i.role === "active")!;
  expect(active.placement).toBe(warmUp.placement);
  expect(active.epoch).toBeGreaterThan(epoch);
  expect(((await stranded.describe()) as TaskDescription).role).toBe("idle");
  await driver.runUntilQuiet();
  for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 2 });
});
