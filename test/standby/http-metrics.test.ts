/**
 * `GET /metrics` with standbys (NUM_STANDBYS=1): a standby counts the changelog records it applies
 * (records, not batches), with their rate, and has nothing left to apply once caught up.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);

async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const response = await call("/metrics");
  expect(response.status).toBe(200);
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = (await response.text()).split("\n").find((l) => l.startsWith(`edge_streams_${name}{`) && wanted.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("standby metrics", () => {
  it("count the changelog records a standby applies, and its rate", async () => {
    const standby = (await driver.instances()).find((i) => i.taskId === "0_2" && i.role === "standby")!;
    const labels = { task: "0_2", placement: standby.placement, role: "standby" };
    const before = (await sample("task_standby_records_total", labels)) ?? 0;
    // 60 orders: 60 changelog records, more than two restore batches (RESTORE_BATCH_RECORDS=25).
    const keys = keysOn(2, 60, "standby-metrics");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    // The restore worker learns of the changelog's growth from the partition's wake-up: poll, bounded.
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      if ((await driver.task(standby).describe()).lag === 0) break;
      await driver.restoreRound();
    }
    expect((await driver.task(standby).describe()).lag).toBe(0);
    expect((await sample("task_standby_records_total", labels))! - before).toBe(60);
    expect(await sample("task_standby_records_per_second", labels)).toBeGreaterThan(0);
    expect(await sample("task_restore_remaining_records", labels)).toBe(0);
    expect(await sample("task_restored_records_total", labels)).toBe(0);
  });
});
