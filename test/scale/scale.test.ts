/**
 * The example at scale (project `scale`: PARTITIONS=256, placements `eu:weur:eu,us:enam`, restore
 * workers sharded): 256 task instances assigned in chunks by the coordinator, ingest and queries
 * through the API, paged views with the whole application's summary, a migration, a corruption
 * restored through its shard, and a restart of the coordinator — each step checked on outcomes.
 * Without standbys: in one local workerd process, 512 instances take minutes to assign (standbys
 * at this size are measured by `npm run bench`; standby placement at 10,000 tasks is tested pure in
 * test/coordinator-scale.test.ts). Workerd does not implement jurisdictions: the `eu` placement's
 * objects are made in the unrestricted namespace here (platform/host.ts; recorded namespaces in
 * test/placements.test.ts check the jurisdiction itself).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../../src/names";
import { restoreShardOf } from "../../src/restore/sharding";
import { TestDriver } from "../../src/testing/test-driver";
import { PUSH_CHUNK } from "../../durable-objects/coordinator";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";
import { restartDurableObject } from "../support/restart";
import { application } from "../support/orders-app";
import { until } from "../support/until";

const PARTITIONS = 256;
const driver = new TestDriver(env, application);
const coordinator = () => env.COORDINATOR.getByName(COORDINATOR_NAME);

async function assignment(): Promise<InstanceAssignment[]> {
  return (await coordinator().assignments()) as InstanceAssignment[];
}

async function ingest(records: { key: string; value: unknown }[]): Promise<void> {
  for (let i = 0; i < records.length; i += 1_000) {
    const response = await call("/topics/orders/records", { body: { records: records.slice(i, i + 1_000) } });
    expect(response.status, await response.clone().text()).toBe(200);
  }
}

async function total(key: string): Promise<{ count: number; sum: number } | undefined> {
  const response = await call(`/stores/totals/keys/${encodeURIComponent(key)}`);
  if (response.status !== 200) return undefined;
  return (await json(response)).value;
}

/** A key on each of the first `count` partitions of `every`th, and the partition. */
function sampleKeys(prefix: string, every = 16): { key: string; partition: number }[] {
  return Array.from({ length: PARTITIONS / every }, (_, i) => ({ key: keysOn(i * every, 1, prefix, PARTITIONS)[0]!, partition: i * every }));
}

describe("256 partitions, two placements with location hints", () => {
  it("assigns 256 instances in chunks, balanced over the two placements", async () => {
    expect(application.taskIds()).toHaveLength(PARTITIONS);
    expect(PARTITIONS).toBeGreaterThan(PUSH_CHUNK);
    const first = await driver.instances();
    // The first call pushes one chunk; the coordinator's alarm pushes the rest on its own.
    expect(first.filter((i) => i.acknowledged).length).toBeLessThanOrEqual(PUSH_CHUNK);
    await until(
      async () => {
        const all = await assignment();
        return all.length === PARTITIONS && all.every((i) => i.acknowledged);
      },
      120_000,
      "every instance to take its assignment",
      250,
    );
    const actives = (await assignment()).filter((i) => i.role === "active");
    expect(actives).toHaveLength(PARTITIONS);
    expect(actives.filter((a) => a.placement === "eu")).toHaveLength(PARTITIONS / 2);
    expect(actives.filter((a) => a.placement === "us")).toHaveLength(PARTITIONS / 2);
  });

  it("ingests through the API and answers queries of every partition; the views page through the instances with the whole summary", async () => {
    const keys = Array.from({ length: 1_024 }, (_, i) => `customer-${i}`);
    await ingest(keys.map((key, i) => ({ key, value: { amount: i % 7 } })));
    await driver.runUntilQuiet();
    for (const { key } of sampleKeys("customer-probe")) expect(await total(key)).toBeUndefined();
    for (const i of [0, 1, 511, 999, 1_023]) expect(await total(`customer-${i}`)).toEqual({ count: 1, sum: i % 7 });

    const page = await json(await call("/tasks?limit=100"));
    expect(page.tasks).toHaveLength(100);
    expect(page.next).toEqual(expect.any(String));
    await until(
      async () => {
        const { summary } = await json(await call("/tasks?limit=1"));
        return summary.instances === 256 && summary.reported === 256 && summary.byRole.active === 256 && summary.byState.RUNNING === 256 && summary.lag === 0;
      },
      60_000,
      "the summary to cover all 256 instances, caught up",
    );

    const status = await call("/");
    expect(status.status).toBe(200);
    const html = await status.text();
    expect((html.match(/<article /g) ?? []).length).toBe(100);
    expect(html).toMatch(/data-summary-instances[^>]*>256</);
    for (const placement of ["eu", "us"]) expect(html).toContain(`data-placement="${placement}"`);
    expect(html).toContain('rel="next"');

    const metrics = await call("/metrics?limit=50");
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("Link")).toMatch(/rel="next"/);
    expect(await metrics.text()).toMatch(/^edge_streams_application_instances 256$/m);
  });

  it("moves a task to the other placement (restored there from its changelog), and queries follow the move", async () => {
    const { key, partition } = sampleKeys("moving", 256)[0]!;
    await ingest([{ key, value: { amount: 5 } }]);
    await driver.runUntilQuiet();
    const taskId = `0_${partition}`;
    const from = (await assignment()).find((i) => i.taskId === taskId && i.role === "active")!.placement;
    const to = from === "eu" ? "us" : "eu";
    expect((await call(`/tasks`)).status).toBe(200);
    const moved = await call(`/admin/tasks/${taskId}/migrate`, { body: { to } });
    expect(moved.status, await moved.clone().text()).toBe(200);
    await driver.runUntilQuiet();
    // The edge's cached assignment names the old owner: it answers "not the owner", and the assignment is read again.
    expect(await total(key)).toEqual({ count: 1, sum: 5 });
    await ingest([{ key, value: { amount: 1 } }]);
    await until(async () => (await total(key))?.sum === 6, 30_000, "the moved task to process");
    const after = (await assignment()).filter((i) => i.taskId === taskId);
    expect(after.find((i) => i.role === "active")!.placement).toBe(to);
    // The instance left behind keeps its state, idle.
    expect(after.find((i) => i.placement === from)!.role).toBe("idle");
  });

  it("restores a corrupted task through its placement's shard, pause and resume reaching every shard", async () => {
    const taskId = "0_7";
    const records = keysOn(Number(taskId.slice(2)), 40, "restored", PARTITIONS).map((k) => ({ key: k, value: { amount: 2 } }));
    await ingest(records);
    await driver.runUntilQuiet();
    const active = (await assignment()).find((i) => i.taskId === taskId && i.role === "active")!;
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    for (const placement of ["eu", "us"]) for (const shard of [0, 1]) expect((await driver.restoreWorker(placement, shard).status()).paused).toBe(true);
    try {
      await driver.task(active).corrupt();
      const shard = restoreShardOf(taskId, 2);
      await until(
        async () =>
          (await driver.restoreWorker(active.placement, shard).status()).changelogs.some(
            (c) => c.instance === `${taskId}@${active.placement}` && c.role === "active",
          ),
        10_000,
        "the registration at the task's shard",
      );
      const other = await driver.restoreWorker(active.placement, 1 - shard).status();
      expect(other.changelogs.some((c) => c.instance === `${taskId}@${active.placement}`)).toBe(false);
      const restoring = await call(`/stores/totals/keys/${records[0]!.key}`);
      expect(restoring.status).toBe(503);
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    for (const { key: k } of records) expect(await total(k)).toEqual({ count: 1, sum: 2 });
  });

  it("survives a restart of the coordinator: the same assignment, moves and queries go on", async () => {
    const before = await assignment();
    await restartDurableObject(coordinator());
    const after = await assignment();
    expect(after).toEqual(before);
    const { key, partition } = sampleKeys("after-restart", 256)[0]!;
    const taskId = `0_${partition}`;
    const from = after.find((i) => i.taskId === taskId && i.role === "active")!.placement;
    const to = from === "eu" ? "us" : "eu";
    expect((await call(`/admin/tasks/${taskId}/migrate`, { body: { to } })).status).toBe(200);
    await ingest([{ key, value: { amount: 3 } }]);
    await until(async () => (await total(key))?.sum === 3, 30_000, "the order to be processed after the restart and the move");
    const moved = (await assignment()).find((i) => i.taskId === taskId && i.role === "active")!;
    expect(moved.placement).toBe(to);
    expect(moved.epoch).toBeGreaterThan(Math.max(...before.map((i) => i.epoch)));
  });
});
