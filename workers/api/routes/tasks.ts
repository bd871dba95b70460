/**
 * `GET /tasks?limit=&cursor=`: a page of the task instances (default and at most 500), each as
 * the instance describes itself (role, state, epoch, incarnation, changelogs, lag, failure), in
 * task and placement order; `next` is the cursor of the following page (null on the last); the
 * `summary` covers the whole application (from the restore worker shards, see ../views.ts); and
 * `shutdown` says whether the application is shut down. A page costs one call per instance on it,
 * plus one to the coordinator and one per restore worker shard.
 *
 * `GET /tasks/watch?limit=&cursor=&format=`: the same view as server-sent events — first the whole
 * view, then an event each time a read of it finds a change (src/subscriptions/view-watch.ts:
 * every second while it changes, backing off to every 5 s while it does not; each read costs what
 * a page of `GET /tasks` costs). `format=html` sends the status page's parts (../status/live.tsx),
 * which the page's script puts in place. It holds one of the isolate's subscription slots.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { runViewWatch } from "../../../src/subscriptions/view-watch";
import { taskObject } from "../cluster";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { viewWatch, type ViewFormat } from "../status/live";
import { clusterSnapshot } from "../status/snapshot";
import { openEventStream, takeSlot } from "../subscription-stream";
import { invalidInput } from "../validation";
import { applicationView, assignmentPage, DEFAULT_PAGE, MAX_PAGE, nextCursor, pageQuery, summaryJson } from "../views";

/** Instances a watch of the view follows by default (the status page's page): each read asks each of them. */
export const WATCH_PAGE = 100;

const FORMATS: readonly ViewFormat[] = ["json", "html"];

export const tasks = new Hono<ApiEnv>()
  .get("/tasks", zValidator("query", pageQuery(DEFAULT_PAGE, MAX_PAGE), invalidInput), async (c) => {
    const { limit, after } = c.req.valid("query");
    const page = await assignmentPage(c.var.host, after, limit);
    const [described, view] = await Promise.all([
      Promise.all(page.instances.map((instance) => taskObject(c.var.host, instance).describe())),
      applicationView(c.var.host, page.total),
    ]);
    return c.json({ tasks: described, next: nextCursor(page), summary: summaryJson(view), shutdown: page.shutdown });
  })
  .get("/tasks/watch", zValidator("query", pageQuery(WATCH_PAGE, MAX_PAGE), invalidInput), (c) => {
    const { limit, after } = c.req.valid("query");
    const format = (c.req.query("format") ?? "json") as ViewFormat;
    if (!FORMATS.includes(format)) throw new ApiError(400, "invalid_input", "format is json or html");
    const host = c.var.host;
    const watch = viewWatch(format, () => clusterSnapshot(host, { after, limit }));
    return openEventStream(c, "tasks", takeSlot(), (ports) => runViewWatch(watch, ports));
  });
