/**
 * `GET /health`: whether the application is processing (docs/http-api.md). `200 {"status":
 * "ok"}`, or `503 {"status": "failing", "reasons": [{task, placement?, reason}]}` while an active
 * instance is FAILED or a task has no active instance that took its assignment. Cheap whatever
 * the number of tasks: the failures come from the summary the restore worker shards keep (one
 * call per shard, src/summary/summary.ts), the tasks without an active from the coordinator (one
 * call); no task object is asked. Reports may trail by seconds. `GET /healthz` stays the
 * unauthenticated liveness check.
 */
import { Hono } from "hono";
import { FAILURES_NAMED } from "../../../src/summary/summary";
import { coordinator } from "../cluster";
import type { ApiEnv } from "../context";
import { applicationView } from "../views";

export interface HealthReason {
  readonly task: string;
  readonly placement?: string;
  readonly reason: string;
}

export const health = new Hono<ApiEnv>().get("/health", async (c) => {
  const host = c.var.host;
  const [unassigned, view] = await Promise.all([coordinator(host).tasksWithoutActive(FAILURES_NAMED), applicationView(host, 0)]);
  const reasons: HealthReason[] = [
    ...view.summary.failures.map((f) => ({ task: f.task, placement: f.placement, reason: f.reason })),
    ...unassigned.tasks.map((task) => ({ task, reason: "no active instance has taken the task" })),
  ];
  c.header("Cache-Control", "no-store");
  if (reasons.length === 0) return c.json({ status: "ok" }, 200);
  // The counts go on beyond the reasons named.
  return c.json({ status: "failing", failed: view.summary.failed, withoutActive: unassigned.count, reasons }, 503);
});
