/**
 * Admin routes of docs/http-api.md: migrate, restore pause/resume, resuming tasks stopped by an uncaught
 * error (one task, or the whole application after `"shutdown-application"`), skipping the record a
 * task stopped at and input resets (recovery.ts), and — only with `FAULT_INJECTION=on` — the fault
 * routes (corrupt a task, crash it, make log calls fail, drop wake-ups, make the coordinator fail).
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { instanceName } from "../../../src/names";
import { activeInstance, coordinator, taskObject } from "../cluster";
import { LIFECYCLE_STEPS, type LifecycleStep } from "../../../src/task/protocol";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { invalidInput } from "../validation";
import { recovery } from "./recovery";

const migrateBody = z.object({ to: z.string().min(1).max(64) }).strict();
const resumeBody = z.object({ maxBatches: z.number().int().min(1).max(1_000_000).optional() }).strict();
const logFailBody = z.object({ topic: z.string().min(1), partition: z.number().int().min(0), times: z.number().int().min(1).max(10_000) }).strict();

export const admin = new Hono<ApiEnv>();

admin.post("/admin/tasks/:id/migrate", zValidator("json", migrateBody, invalidInput), async (c) => {
  const taskId = c.req.param("id");
  const { to } = c.req.valid("json");
  if (!c.var.host.application.task(taskId)) throw new ApiError(404, "not_found", `unknown task ${JSON.stringify(taskId)}`);
  if (!c.get("config").PLACEMENTS.includes(to)) throw new ApiError(400, "invalid_input", `unknown placement ${JSON.stringify(to)}`);
  const result = await coordinator(c.var.host).migrate(taskId, to);
  return c.json({ task: taskId, ...result });
});

admin.post("/admin/tasks/:id/resume", async (c) => {
  const taskId = c.req.param("id");
  if (!c.var.host.application.task(taskId)) throw new ApiError(404, "not_found", `unknown task ${JSON.stringify(taskId)}`);
  const result = await coordinator(c.var.host).resumeTask(taskId);
  if (result.status === "application-shut-down") {
    const { shutdown } = result;
    throw new ApiError(
      409,
      "conflict",
      `the application is shut down (task ${shutdown.taskId} failed: ${shutdown.reason}); resume it with POST /admin/application/resume`,
    );
  }
  return c.json({ task: result.task });
});

// Skipping the record a task stopped at, and input resets (recovery.ts).
admin.route("/", recovery);

admin.post("/admin/application/resume", async (c) => {
  const tasks = await coordinator(c.var.host).resumeApplication();
  return c.json({ shutdown: null, tasks });
});

admin.post("/admin/restore/pause", async (c) => {
  await Promise.all(c.get("config").PLACEMENTS.flatMap((p) => c.var.host.restoreWorkers(p).map((worker) => worker.pause())));
  return c.json({ paused: true });
});

admin.post("/admin/restore/resume", zValidator("json", resumeBody, invalidInput), async (c) => {
  const { maxBatches } = c.req.valid("json");
  // Every shard of every placement; with `maxBatches`, each shard may take that many.
  await Promise.all(c.get("config").PLACEMENTS.flatMap((p) => c.var.host.restoreWorkers(p).map((worker) => worker.resume(maxBatches))));
  return c.json({ paused: maxBatches !== undefined, maxBatches: maxBatches ?? null });
});

// Fault injection: invisible (404) unless FAULT_INJECTION=on.
const faults = new Hono<ApiEnv>();
for (const path of ["/admin/tasks/:id/corrupt", "/admin/tasks/:id/crash", "/admin/log/fail", "/admin/wakes/drop", "/admin/coordinator/fail"]) {
  faults.use(path, async (c, next) => {
    if (c.get("config").FAULT_INJECTION !== "on") throw new ApiError(404, "not_found", `no route for ${c.req.method} ${c.req.path}`);
    await next();
  });
}

async function requireActive(c: Context<ApiEnv>, taskId: string) {
  if (!c.var.host.application.task(taskId)) throw new ApiError(404, "not_found", `unknown task ${JSON.stringify(taskId)}`);
  const instance = await activeInstance(c.var.host, taskId, true);
  if (!instance) throw new ApiError(503, "unavailable", `task ${taskId} has no active instance`, 1);
  return instance;
}

faults.post("/admin/tasks/:id/corrupt", async (c) => {
  const instance = await requireActive(c, c.req.param("id"));
  return c.json({ task: await taskObject(c.var.host, instance).corrupt() });
});

const crashBody = z
  .object({
    at: z.enum(LIFECYCLE_STEPS as [LifecycleStep, ...LifecycleStep[]]).optional(),
    placement: z.string().min(1).max(64).optional(),
  })
  .strict();

/**
 * The task's active instance dies at once; or, with `at`, the next time a lifecycle operation of
 * the instance at `placement` (default: the active's) reaches that step.
 */
faults.post("/admin/tasks/:id/crash", async (c) => {
  const text = await c.req.text();
  let body: unknown = {};
  try {
    if (text.trim() !== "") body = JSON.parse(text);
  } catch {
    throw new ApiError(400, "invalid_input", "the body is not JSON");
  }
  const parsed = crashBody.safeParse(body);
  if (!parsed.success) throw new ApiError(400, "invalid_input", parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "));
  const { at, placement } = parsed.data;
  const active = await requireActive(c, c.req.param("id"));
  if (placement !== undefined && !c.get("config").PLACEMENTS.includes(placement))
    throw new ApiError(400, "invalid_input", `unknown placement ${JSON.stringify(placement)}`);
  const instance = { taskId: active.taskId, placement: placement ?? active.placement };
  if (at !== undefined) {
    await taskObject(c.var.host, instance).crash(at);
    return c.json({ planned: instanceName(instance), at });
  }
  // The object dies while answering: its own call fails by design.
  await taskObject(c.var.host, instance)
    .crash()
    .catch(() => undefined);
  return c.json({ crashed: instanceName(instance) });
});

faults.post("/admin/log/fail", zValidator("json", logFailBody, invalidInput), async (c) => {
  const { topic, partition, times } = c.req.valid("json");
  const log = c.get("log");
  const partitions = (await log.topics()).get(topic);
  if (partitions === undefined) throw new ApiError(404, "unknown_topic", `unknown topic ${JSON.stringify(topic)}`);
  if (partition >= partitions) throw new ApiError(400, "invalid_input", `topic ${topic} has partitions 0 to ${partitions - 1}`);
  await c.var.host.partition({ topic, partition }).injectFailures(times);
  return c.json({ topic, partition, failing: times });
});

const wakesDropBody = z.object({ seconds: z.number().int().min(0).max(3_600) }).strict();

/**
 * For `seconds`, wake-ups that log partitions send after appends are dropped, as if lost on the
 * way: processing must still complete (the partitions wake their readers again later).
 */
faults.post("/admin/wakes/drop", zValidator("json", wakesDropBody, invalidInput), async (c) => {
  const { seconds } = c.req.valid("json");
  const topics = await c.get("log").topics();
  const partitions = [...topics].flatMap(([topic, count]) => Array.from({ length: count }, (_, partition) => ({ topic, partition })));
  await Promise.all(partitions.map((tp) => c.var.host.partition(tp).dropWakes(seconds * 1000)));
  return c.json({ dropping: seconds, partitions: partitions.length });
});

const coordinatorFailBody = z.object({ seconds: z.number().int().min(0).max(3_600) }).strict();

/**
 * For `seconds`, the coordinator answers every call with an error, as an object that cannot be
 * reached would, and rebalances nothing; 0 ends it. Ingest and queries of running tasks go on.
 */
faults.post("/admin/coordinator/fail", zValidator("json", coordinatorFailBody, invalidInput), async (c) => {
  const { seconds } = c.req.valid("json");
  const { until } = await coordinator(c.var.host).failFor(seconds * 1000);
  return c.json({ failing: seconds, until: new Date(until).toISOString() });
});

admin.route("/", faults);
