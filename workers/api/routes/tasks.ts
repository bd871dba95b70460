/**
 * `GET /tasks?limit=&cursor=`: a page of the task instances (default and at most 500), each as
 * the instance describes itself (role, state, epoch, incarnation, changelogs, lag, failure), in
 * task and placement order; `next` is the cursor of the following page (null on the last); the
 * `summary` covers the whole application (from the restore worker shards, see ../views.ts); and
 * `shutdown` says whether the application is shut down. A page costs one call per instance on it,
 * plus one to the coordinator and one per restore worker shard.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { taskObject } from "../cluster";
import type { ApiEnv } from "../context";
import { invalidInput } from "../validation";
import { applicationView, assignmentPage, DEFAULT_PAGE, MAX_PAGE, nextCursor, pageQuery, summaryJson } from "../views";

export const tasks = new Hono<ApiEnv>().get("/tasks", zValidator("query", pageQuery(DEFAULT_PAGE, MAX_PAGE), invalidInput), async (c) => {
  const { limit, after } = c.req.valid("query");
  const page = await assignmentPage(c.var.host, after, limit);
  const [described, view] = await Promise.all([
    Promise.all(page.instances.map((instance) => taskObject(c.var.host, instance).describe())),
    applicationView(c.var.host, page.total),
  ]);
  return c.json({ tasks: described, next: nextCursor(page), summary: summaryJson(view), shutdown: page.shutdown });
});
