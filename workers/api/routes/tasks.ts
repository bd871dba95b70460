/**
 * `GET /tasks`: every task instance with its role, state, epoch, incarnation, changelogs, lag and
 * failure, and whether the application is shut down (`shutdown`: null, or who stopped it and why).
 */
import { Hono } from "hono";
import { coordinator, freshAssignment, taskObject } from "../cluster";
import type { ApiEnv } from "../context";

export const tasks = new Hono<ApiEnv>().get("/tasks", async (c) => {
  const { instances } = await freshAssignment(c.var.host);
  const [described, shutdown] = await Promise.all([
    Promise.all(instances.map((instance) => taskObject(c.var.host, instance).describe())),
    coordinator(c.var.host).shutdownState(),
  ]);
  return c.json({ tasks: described, shutdown });
});
