/**
 * Health that tells the truth on the example app: `GET /health` answers ok while every task
 * runs, and 503 naming a task while it has no active instance that took its assignment (here: the
 * new instance of a migration dies before it acknowledges), ok again once the move completes on
 * its own; and the records-processed total a task shows (`/metrics`, the status page) is durable:
 * it survives the object's restart (as an eviction after idling would) and a wipe.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { restartDurableObject } from "./support/restart";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const coordinator = () => env.COORDINATOR.getByName(COORDINATOR_NAME);

async function processed(taskId: string, placement: string): Promise<number | undefined> {
  const text = await (await call("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`edge_streams_task_processed_records_total{task="${taskId}",placement="${placement}",role="active"}`));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

describe("the processed total", { timeout: 60_000 }, () => {
  it("survives the task object's restart and a wipe (it is stored, not counted in memory)", async () => {
    const keys = keysOn(1, 3, "durable-count");
    await driver.log.append(
      { topic: "orders", partition: 1 },
      keys.map((key) => ({ key, value: JSON.stringify({ amount: 1 }) })),
    );
    await driver.runUntilQuiet();
    const active = await activeInstance(coordinator().assignments(), "0_1");
    const before = await processed("0_1", active.placement);
    expect(before).toBeGreaterThanOrEqual(3);

    await restartDurableObject(driver.task(active) as never);
    expect(await processed("0_1", active.placement)).toBe(before);
    const page = await (await call("/")).text();
    expect(page).toMatch(new RegExp(`data-instance="0_1@${active.placement}"[\\s\\S]*?processed <b>${before}</b>`));

    // A wipe deletes the rows the count lives on: it carries over.
    expect((await call("/admin/tasks/0_1/corrupt", { method: "POST" })).status).toBe(200);
    await driver.runUntilQuiet();
    expect(await processed("0_1", active.placement)).toBe(before);
    await driver.log.append({ topic: "orders", partition: 1 }, [{ key: keys[0]!, value: JSON.stringify({ amount: 1 }) }]);
    await driver.runUntilQuiet();
    expect(await processed("0_1", active.placement)).toBe(before! + 1);
  });
});

describe("GET /health", { timeout: 60_000 }, () => {
  it("is ok while every task runs, 503 while a task has no active instance that took it, and ok again once it has", async () => {
    await driver.runUntilQuiet();
    await until(async () => (await call("/health")).status === 200, 10_000, "/health ok");
    expect(await json(await call("/health"))).toEqual({ status: "ok" });

    const from = await activeInstance(coordinator().assignments(), "0_2");
    const to = from.placement === "a" ? "b" : "a";
    await driver.task({ taskId: "0_2", placement: to }).crash("assign:after-meta");
    const moved = await call("/admin/tasks/0_2/migrate", { body: { to } });
    expect(moved.status).toBe(503);
    const failing = await call("/health");
    expect(failing.status).toBe(503);
    expect(await json(failing)).toMatchObject({
      status: "failing",
      withoutActive: 1,
      reasons: [{ task: "0_2", reason: "no active instance has taken the task" }],
    });
    // The coordinator's alarm completes the move on its own.
    await until(async () => (await call("/health")).status === 200, 30_000, "/health ok once the move completed", 200);
    expect((await activeInstance(coordinator().assignments(), "0_2")).placement).toBe(to);
  });
});
