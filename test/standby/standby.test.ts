/**
 * Standby replicas (NUM_STANDBYS=1): kept current by the restore worker at another placement,
 * promoted on migration restoring only the tail, and recycled without a full restore.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);

const describeInstance = async (taskId: string, placement: string) => (await driver.task({ taskId, placement }).describe()) as TaskDescription;

describe("standby replicas", () => {
  it("places one standby per task, never with its active, kept current by the restore worker", async () => {
    const instances = await driver.instances();
    for (const taskId of application.taskIds()) {
      const active = instances.filter((i) => i.taskId === taskId && i.role === "active");
      const standbys = instances.filter((i) => i.taskId === taskId && i.role === "standby");
      expect(active).toHaveLength(1);
      expect(standbys).toHaveLength(1);
      expect(standbys[0]!.placement).not.toBe(active[0]!.placement);
    }
    const keys = keysOn(0, 10, "standby");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 3 } })),
    );
    await driver.runUntilQuiet();
    const standby = instances.find((i) => i.taskId === "0_0" && i.role === "standby")!;
    const described = await describeInstance("0_0", standby.placement);
    expect(described).toMatchObject({ role: "standby", state: "UPDATING", lag: 0 });
    expect(described.changelogs[0]!.checkpoint).toBe(described.changelogs[0]!.end);
    // Its store holds the values (a stale read may be served from it).
    const answer = await driver.task(standby).query("totals", keys[0]!, true);
    expect(answer).toMatchObject({ status: "ok", stale: true });
  });

  it("promotes the standby on migration: it restores only the tail, and the old active becomes the standby", async () => {
    const taskId = "0_1";
    const keys = keysOn(1, 10, "promote");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const before = await driver.instances();
    const active = before.find((i) => i.taskId === taskId && i.role === "active")!;
    const standby = before.find((i) => i.taskId === taskId && i.role === "standby")!;
    const warm = await describeInstance(taskId, standby.placement);

    // Hold restoration: the promoted standby must not need any to run.
    await call("/admin/restore/pause", { method: "POST" });
    const moved = await json(await call(`/admin/tasks/${taskId}/migrate`, { body: { to: standby.placement } }));
    expect(moved).toMatchObject({ changed: true, to: standby.placement });
    const promoted = await describeInstance(taskId, standby.placement);
    expect(promoted).toMatchObject({ role: "active", state: "RUNNING", incarnation: warm.incarnation });
    expect(promoted.changelogs[0]!.checkpoint).toBe(warm.changelogs[0]!.checkpoint);
    await call("/admin/restore/resume", { body: {} });

    const after = await driver.instances();
    expect(after.find((i) => i.taskId === taskId && i.role === "standby")!.placement).toBe(active.placement);
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 2 } })),
    );
    await driver.runUntilQuiet();
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 3 });
    // The recycled old active kept its store: it is current again without a restore from scratch.
    const recycled = await describeInstance(taskId, active.placement);
    expect(recycled).toMatchObject({ role: "standby", state: "UPDATING", lag: 0 });
  });

  it("answers a stale read from the standby while the active restores", async () => {
    const taskId = "0_2";
    const key = keysOn(2, 1, "stale")[0]!;
    await driver.pipe("orders", [{ key, value: { amount: 9 } }]);
    await driver.runUntilQuiet();
    await call("/admin/restore/pause", { method: "POST" });
    await call(`/admin/tasks/${taskId}/corrupt`, { method: "POST" });
    expect((await call(`/stores/totals/keys/${key}`)).status).toBe(503);
    const stale = await call(`/stores/totals/keys/${key}?stale=true`);
    expect(stale.status).toBe(200);
    expect(await json(stale)).toMatchObject({ key, value: { count: 1, sum: 9 }, stale: true });
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    expect(await json(await call(`/stores/totals/keys/${key}`))).toMatchObject({ stale: false });
  });
});
