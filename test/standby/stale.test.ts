/**
 * `?stale=true` with one standby per task (NUM_STANDBYS=1): while the active restores, a standby
 * that holds the store answers point reads and scans, marked stale. A standby that restored
 * nothing (wiped too) cannot answer: then the task answers 503 with its progress.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "../support/orders-app";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";

const driver = new TestDriver(env, application);

async function instancesOf(taskId: string) {
  const instances = await driver.instances();
  return {
    active: instances.find((i) => i.taskId === taskId && i.role === "active")!,
    standby: instances.find((i) => i.taskId === taskId && i.role === "standby")!,
  };
}

afterEach(async () => {
  expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  await driver.runUntilQuiet();
});

describe("stale reads with a standby", () => {
  it("while the active restores, a scan with stale=true is served by the standby, marked stale", async () => {
    const keys = keysOn(1, 5, "sb-scan");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 2 } })),
    );
    await driver.runUntilQuiet();
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    expect((await call("/admin/tasks/0_1/corrupt", { method: "POST" })).status).toBe(200);

    expect((await call("/stores/totals/keys?prefix=sb-scan-")).status).toBe(503);
    const response = await call("/stores/totals/keys?prefix=sb-scan-&stale=true");
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const body = JSON.parse(text);
    expect(body).toMatchObject({ stale: true, next: null });
    expect(body.items).toEqual([...keys].sort().map((key) => ({ key, value: { count: 1, sum: 2 } })));
  });

  it("a standby that restored nothing cannot answer: with the active wiped too, point reads and scans answer 503 with progress", async () => {
    const keys = keysOn(3, 5, "sb-none");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 4 } })),
    );
    await driver.runUntilQuiet();
    const { standby } = await instancesOf("0_3");
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    expect((await call("/admin/tasks/0_3/corrupt", { method: "POST" })).status).toBe(200);
    const wiped = (await driver.task(standby).corrupt()) as TaskDescription;
    expect(wiped).toMatchObject({ role: "standby", state: "UPDATING" });
    expect(wiped.changelogs[0]!.checkpoint).toBeNull();

    for (const path of [`/stores/totals/keys/${keys[0]}?stale=true`, "/stores/totals/keys?prefix=sb-none-&stale=true"]) {
      const response = await call(path);
      const text = await response.text();
      expect(response.status, `${path}: ${text}`).toBe(503);
      expect(response.headers.get("Retry-After")).toBe("1");
      const body = JSON.parse(text);
      expect(body).toMatchObject({ error: "restoring", task: "0_3", progress: { restored: 0 } });
      expect(body.progress.total).toBeGreaterThan(0);
    }

    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    const read = await call(`/stores/totals/keys/${keys[0]}?stale=true`);
    expect(await json(read)).toMatchObject({ value: { count: 1, sum: 4 }, stale: false });
  });
});
