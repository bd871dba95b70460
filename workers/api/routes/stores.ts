/**
 * Interactive queries: `GET /stores/:store/keys/:key` finds the task owning the key (the same
 * partitioner the producer used, on the serialized key) and reads its store. The key in the path
 * is the key as text, percent-decoded, serialized with the store's key serde before the lookup
 * (src/streams/key-text.ts: a JSON-keyed store finds `/keys/NL` under `"NL"`). Only the RUNNING active instance answers
 * with authority; while it restores, `?stale=true` lets a standby (or the restoring instance
 * itself) that holds part of the store answer, marked `"stale": true` (see ../stale.ts).
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import type { QueryAnswer, WindowsAnswer } from "../../../src/task/protocol";
import { partitionForKey } from "../../../src/log/partitioner";
import { askActive } from "../cluster";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { queryableStore } from "../queryable-store";
import { staleAnswer } from "../stale";
import { storeKey } from "../store-key";
import { invalidInput } from "../validation";

const stale = z.enum(["true", "false"], "stale is true or false").optional();
const readQuery = z.object({ stale }).strict();
const time = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const windowQuery = z.object({ from: time.optional(), to: time.optional(), stale }).strict();

// `[\s\S]` rather than `.`: a key may hold line breaks.
/** The read options, checked only when there are any: a point read is the latency path, and zod's parse of nothing costs it more than the read itself here. */
const readOptions: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (!c.req.url.includes("?")) return next();
  return invalidInput(readQuery.safeParse(c.req.query()), c) ?? next();
};

export const stores = new Hono<ApiEnv>().get("/stores/:store/keys/:key{[\\s\\S]+}", readOptions, async (c) => {
  const name = c.req.param("store");
  const found = queryableStore(c.var.host.application, name, "keys");
  const { key: typedKey, serialized: key } = storeKey(found.store, c.req.param("key"));
  const taskId = c.var.host.application.taskForStorePartition(found.subtopology, partitionForKey(key, found.subtopology.partitions));
  const allowStale = c.req.query("stale") === "true";

  // The cached assignment's owner; one that was revoked since says so, and the assignment is read again.
  let answer = await askActive(c.var.host, taskId, async (stub) => (await stub.query(name, key)) as QueryAnswer);
  if (!answer || answer.status === "not-owner") throw new ApiError(503, "unavailable", `task ${taskId} has no active instance right now`, 1);

  if (answer.status === "restoring" && allowStale) {
    answer = (await staleAnswer(c.var.host, taskId, async (stub) => (await stub.query(name, key, true)) as QueryAnswer)) ?? answer;
  }
  if (answer.status === "restoring") {
    c.header("Retry-After", "1");
    return c.json({ error: "restoring", message: `task ${taskId} is restoring`, task: taskId, progress: answer.progress }, 503);
  }
  if (answer.status !== "ok") throw new ApiError(503, "unavailable", `task ${taskId} cannot answer right now`, 1);
  if (answer.value === undefined) {
    const message = `no key ${JSON.stringify(typedKey)} in store ${name}`;
    // Absent from what a restoring instance holds so far: it may yet appear.
    if (answer.stale) return c.json({ error: "not_found", message: `${message} (as restored so far)`, stale: true }, 404);
    throw new ApiError(404, "not_found", message);
  }
  return c.json({ key: typedKey, value: found.store.valueSerde.deserialize(answer.value), task: taskId, stale: answer.stale });
});

/**
 * `GET /stores/:store/windows/:key?from=&to=&stale=`: the windows (window stores: by window start)
 * or sessions of a key, oldest first, from the RUNNING active instance that owns the key; while it
 * restores, with `stale=true`, from an instance holding part of the store, as the point read.
 */
stores.get("/stores/:store/windows/:key{[\\s\\S]+}", zValidator("query", windowQuery, invalidInput), async (c) => {
  const name = c.req.param("store");
  const found = queryableStore(c.var.host.application, name, "windows");
  const { key: typedKey, serialized: key } = storeKey(found.store, c.req.param("key"));
  const kind = found.store.kind as "window" | "session";
  const { from = 0, to = Number.MAX_SAFE_INTEGER, stale } = c.req.valid("query");
  if (from > to) throw new ApiError(400, "invalid_input", "from must not be after to");
  const taskId = c.var.host.application.taskForStorePartition(found.subtopology, partitionForKey(key, found.subtopology.partitions));
  let answer = await askActive(c.var.host, taskId, async (stub) => (await stub.windows(name, key, from, to, kind)) as WindowsAnswer);
  if (!answer || answer.status === "not-owner") throw new ApiError(503, "unavailable", `task ${taskId} has no active instance right now`, 1);
  if (answer.status === "restoring" && stale === "true") {
    answer = (await staleAnswer(c.var.host, taskId, async (stub) => (await stub.windows(name, key, from, to, kind, true)) as WindowsAnswer)) ?? answer;
  }
  if (answer.status === "restoring") {
    c.header("Retry-After", "1");
    return c.json({ error: "restoring", message: `task ${taskId} is restoring`, task: taskId, progress: answer.progress }, 503);
  }
  if (answer.status !== "ok") throw new ApiError(503, "unavailable", `task ${taskId} cannot answer right now`, 1);
  const windows = answer.windows.map((w) => ({ window: w.window, value: found.store.valueSerde.deserialize(w.value) }));
  return c.json({ key: typedKey, task: taskId, windows, stale: answer.stale === true });
});
