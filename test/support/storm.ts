/**
 * The faults a subscription storm puts a task through, one per round (test/watch-storm.test.ts,
 * test/client.test.ts): migrated to the other placement, corrupted, crashed at once, every Durable
 * Object restarted, and a corruption that dies right after its wipe (the instance converges on its own).
 */
import { abortAllDurableObjects } from "cloudflare:test";
import { expect } from "vitest";
import type { TestDriver } from "../../platform/testing/test-driver";
import { activeInstance } from "./active";
import { call } from "./api";

export const STORM_FAULTS = ["migrate", "corrupt", "crash", "restart", "corrupt-dies-after-wipe"] as const;
export type StormFault = (typeof STORM_FAULTS)[number];

export async function injectFault(driver: TestDriver, task: string, fault: StormFault): Promise<void> {
  switch (fault) {
    case "migrate": {
      const { placement } = await activeInstance(driver.instances(), task);
      expect((await call(`/admin/tasks/${task}/migrate`, { body: { to: placement === "a" ? "b" : "a" } })).status).toBe(200);
      return;
    }
    case "corrupt":
      expect((await call(`/admin/tasks/${task}/corrupt`, { method: "POST" })).status).toBe(200);
      return;
    case "crash":
      expect((await call(`/admin/tasks/${task}/crash`, { method: "POST" })).status).toBe(200);
      return;
    case "restart":
      await abortAllDurableObjects();
      return;
    case "corrupt-dies-after-wipe":
      expect((await call(`/admin/tasks/${task}/crash`, { body: { at: "corrupt:after-wipe" } })).status).toBe(200);
      await call(`/admin/tasks/${task}/corrupt`, { method: "POST" });
  }
}
