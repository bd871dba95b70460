/** `GET /tasks`: every task instance with its role, state, epoch, incarnation, changelogs and lag. */
import { Hono } from "hono";
import { assignments, taskObject } from "../cluster";
import type { ApiEnv } from "../context";

export const tasks = new Hono<ApiEnv>().get("/tasks", async (c) => {
  const instances = await assignments(c.env, true);
  const described = await Promise.all(instances.map((instance) => taskObject(c.env, instance).describe()));
  return c.json({ tasks: described });
});
