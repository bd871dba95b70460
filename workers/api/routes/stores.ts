/**
 * Interactive queries: `GET /stores/:store/keys/:key` finds the task owning the key (the same
 * partitioner the producer used) and reads its store. Keys in the path are the serialized keys
 * (for string keys, the key itself), percent-decoded.
 */
import { Hono } from "hono";
import { partitionForKey } from "../../../src/log/partitioner";
import { application } from "../../application";
import { activeInstance, taskObject } from "../cluster";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";

export const stores = new Hono<ApiEnv>().get("/stores/:store/keys/:key{.+}", async (c) => {
  const name = c.req.param("store");
  const key = c.req.param("key");
  const found = application.store(name);
  if (!found) throw new ApiError(404, "not_found", `unknown store ${JSON.stringify(name)}`);
  const taskId = application.taskForStorePartition(found.subtopology, partitionForKey(key, found.subtopology.partitions));
  const allowStale = c.req.query("stale") === "true";
  for (const fresh of [false, true]) {
    const instance = await activeInstance(c.env, taskId, fresh);
    if (!instance) continue;
    const answer = await taskObject(c.env, instance).query(name, key, allowStale);
    if (answer.status === "not-owner") continue;
    if (answer.status === "restoring") {
      c.header("Retry-After", "1");
      return c.json({ error: "restoring", message: `task ${taskId} is restoring`, task: taskId, progress: answer.progress }, 503);
    }
    if (answer.value === undefined) throw new ApiError(404, "not_found", `no key ${JSON.stringify(key)} in store ${name}`);
    return c.json({ key, value: found.store.valueSerde.deserialize(answer.value), task: taskId, stale: answer.stale });
  }
  throw new ApiError(503, "unavailable", `task ${taskId} has no active instance right now`, 1);
});
