/**
 * Recovering a failed task without a redeploy (docs/operations.md, "Recover a failed task"):
 * `POST /admin/tasks/:id/skip` passes over the record a task stopped at; `POST /admin/reset`
 * moves the application's input forward (Kafka's `kafka-streams-application-reset`), and
 * `GET /admin/reset` says how the last one went. Both go through the coordinator.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { z } from "zod";
import type { InputResetView } from "../../../src/coordinator/input-resets";
import type { ResetTarget } from "../../../src/task/input-reset";
import { coordinator } from "../cluster";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { invalidInput } from "../validation";
import { topicPartition } from "../../../src/names";

const offset = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const position = z.object({ topic: z.string().min(1).max(249), partition: z.number().int().min(0).max(9_999), offset }).strict();

/** Most partitions one reset may name (each is checked against the group's committed offset: one log call). */
export const MAX_RESET_OFFSETS = 500;

const resetBody = z
  .object({
    to: z.enum(["earliest", "latest", "timestamp", "offsets"]),
    timestamp: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    offsets: z.array(position).min(1).max(MAX_RESET_OFFSETS).optional(),
    topics: z.array(z.string().min(1).max(249)).min(1).max(100).optional(),
    id: z.string().min(1).max(64).optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.to === "timestamp" && body.timestamp === undefined) ctx.addIssue({ code: "custom", path: ["timestamp"], message: "required with to: timestamp" });
    if (body.to === "offsets" && body.offsets === undefined) ctx.addIssue({ code: "custom", path: ["offsets"], message: "required with to: offsets" });
    if (body.to !== "timestamp" && body.timestamp !== undefined) ctx.addIssue({ code: "custom", path: ["timestamp"], message: "only with to: timestamp" });
    if (body.to !== "offsets" && body.offsets !== undefined) ctx.addIssue({ code: "custom", path: ["offsets"], message: "only with to: offsets" });
  });

export const recovery = new Hono<ApiEnv>();

recovery.post("/admin/tasks/:id/skip", zValidator("json", position, invalidInput), async (c) => {
  const taskId = c.req.param("id");
  const at = c.req.valid("json");
  const application = c.var.host.application;
  if (!application.task(taskId)) throw new ApiError(404, "not_found", `unknown task ${JSON.stringify(taskId)}`);
  const answer = await coordinator(c.var.host).skipRecord(taskId, at);
  if (answer.status === "refused") {
    throw new ApiError(409, "conflict", `task ${taskId} is not stopped at ${topicPartition(at)} offset ${at.offset}: ${answer.reason}`);
  }
  return c.json({ task: answer.task, skipped: at, already: answer.already });
});

/**
 * Starts an input reset. Forward only: `earliest`, or an offset before what the application has
 * committed in its partition, is refused (409) before anything moves, since the stores already
 * reflect those records; a timestamp or an offset behind where a task has got to since leaves
 * that partition where it is (the answer says so per partition).
 */
recovery.post("/admin/reset", zValidator("json", resetBody, invalidInput), async (c) => {
  const body = c.req.valid("json");
  const host = c.var.host;
  const application = host.application;
  const external = application.externalInputTopics();
  const topics = body.topics ?? (body.to === "offsets" ? [...new Set(body.offsets!.map((o) => o.topic))] : external);
  for (const topic of topics) {
    if (!external.includes(topic))
      throw new ApiError(400, "invalid_input", `topics: ${JSON.stringify(topic)} is not an input topic of the application (${external.join(", ")})`);
  }
  if (body.to === "earliest") {
    throw new ApiError(
      409,
      "conflict",
      "a reset to the earliest offsets would apply records again to stores that already reflect them, so Edge Streams resets only forward (latest, a later offset, a timestamp). To process input again from the start, run the topology under a new applicationId: its stores, changelogs and consumer group start empty.",
    );
  }
  let target: ResetTarget;
  if (body.to === "offsets") {
    const offsets = body.offsets!;
    for (const o of offsets) {
      if (!topics.includes(o.topic)) throw new ApiError(400, "invalid_input", `offsets: topic ${JSON.stringify(o.topic)} is not among the topics reset`);
      if (o.partition >= application.catalog.partitions(o.topic))
        throw new ApiError(400, "invalid_input", `offsets: topic ${o.topic} has partitions 0 to ${application.catalog.partitions(o.topic) - 1}`);
    }
    // Refused before anything moves: a target before what the application committed there is backward.
    const committed = await Promise.all(offsets.map((o) => host.log.committedOffset(application.groupId, o)));
    offsets.forEach((o, i) => {
      const held = committed[i]?.offset;
      if (held !== undefined && o.offset < held) {
        throw new ApiError(
          409,
          "conflict",
          `${topicPartition(o)} offset ${o.offset} is before what the application has processed and committed there (${held}): a reset only skips forward, since the stores already reflect those records. To process them again, run the topology under a new applicationId.`,
        );
      }
    });
    target = { to: "offsets", offsets };
  } else if (body.to === "timestamp") target = { to: "timestamp", timestamp: body.timestamp! };
  else target = { to: "latest" };
  const answer = await coordinator(host).resetInput({ id: body.id ?? crypto.randomUUID(), target, topics });
  if (answer.status === "busy")
    throw new ApiError(409, "conflict", `input reset ${answer.reset.id} is under way (${answer.reset.pending} tasks to go); GET /admin/reset follows it`);
  return c.json({ reset: resetJson(answer.reset) }, answer.reset.finishedAt === null ? 202 : 200);
});

recovery.get("/admin/reset", async (c) => {
  const reset = await coordinator(c.var.host).inputResetState();
  if (!reset) throw new ApiError(404, "not_found", "no input reset was made");
  return c.json({ reset: resetJson(reset) });
});

/** A reset as the routes answer it (docs/http-api.md). */
function resetJson(reset: InputResetView) {
  const { id, target, topics, startedAt, finishedAt, partitions, pending } = reset;
  return {
    id,
    ...target,
    topics,
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: finishedAt === null ? null : new Date(finishedAt).toISOString(),
    pending,
    skipped: partitions.reduce((n, p) => n + p.skipped, 0),
    partitions,
  };
}
