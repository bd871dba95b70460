/**
 * `GET /stores/:store/keys?prefix=&from=&to=&limit=&cursor=`: a page of a store across all its
 * partitions. Every owning task answers its first `limit + 1` entries within the bounds; the
 * pages are merged in key order (UTF-8 bytes, `compareKeys`) and cut at `limit`. The cursor is
 * the base64url of the last key returned, and the next page starts strictly after it — so paging
 * stays correct while writes go on (a key written behind the cursor is simply not revisited).
 * Only RUNNING active instances answer; while one restores, the route answers 503 like the point
 * read — or with `stale=true`, that task's page comes from an instance holding part of its store
 * (../stale.ts), and the response says `"stale": true`. Bounds are keys as text, as in the point
 * read's path, serialized with the store's key serde (a prefix of a JSON-keyed store's string keys
 * stays an open JSON string); the keys answered are deserialized.
 *
 * The work of one request is bounded: it asks every partition of the store (its fan-out, one call
 * each) for `limit + 1` entries and merges them, so `partitions × limit` may be at most
 * MAX_SCAN_ENTRIES. A store of many partitions takes a smaller limit (400 beyond it, naming it);
 * its default limit shrinks to fit.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { z } from "zod";
import { keyForAnswer, serializedPrefixFromText } from "../../../src/streams/key-text";
import { compareKeys } from "../../../src/streams/state/key-value-store";
import type { ScanAnswer, ScanBounds } from "../../../src/task/protocol";
import { askActive } from "../cluster";
import { decodeCursor, encodeCursor } from "../cursor";
import type { ApiEnv } from "../context";
import type { Host } from "../../../platform/host";
import { ApiError } from "../http-error";
import { queryableStore } from "../queryable-store";
import { staleAnswer } from "../stale";
import { storeKey } from "../store-key";
import { invalidInput } from "../validation";

export const DEFAULT_SCAN_LIMIT = 100;
export const MAX_SCAN_LIMIT = 1000;
/** Most entries one scan may merge: partitions × limit (4 partitions take 1,000; 256 the default 100; 10,000 take 3). */
export const MAX_SCAN_ENTRIES = 32_000;

/** The largest limit a scan over `owners` partitions may ask for. */
export function maxScanLimit(owners: number): number {
  return Math.max(1, Math.min(MAX_SCAN_LIMIT, Math.floor(MAX_SCAN_ENTRIES / owners)));
}
/** Longest bound (prefix, from, to) accepted, in UTF-16 units; and longest cursor. */
const MAX_BOUND_LENGTH = 16_384;
const MAX_CURSOR_LENGTH = 65_536;

const bound = z.string().max(MAX_BOUND_LENGTH, `at most ${MAX_BOUND_LENGTH} characters`);

const scanQuery = z
  .object({
    stale: z.enum(["true", "false"]).optional(),
    prefix: bound.optional(),
    from: bound.optional(),
    to: bound.optional(),
    limit: z
      .string()
      .regex(/^[0-9]{1,9}$/, "limit is a positive integer")
      .transform(Number)
      .pipe(z.number().int().min(1, "limit is at least 1").max(MAX_SCAN_LIMIT, `limit is at most ${MAX_SCAN_LIMIT}`))
      .optional(),
    cursor: z
      .string()
      .max(MAX_CURSOR_LENGTH, "cursor is too long")
      .transform((cursor, ctx) => {
        const key = decodeCursor(cursor);
        if (key === undefined) {
          ctx.addIssue({ code: "custom", message: "cursor is not one this route returned" });
          return z.NEVER;
        }
        return key;
      })
      .optional(),
  })
  .strict();

/** Merges pages sorted by key into one, in key order. */
export function mergeByKey<T extends { key: string }>(pages: readonly (readonly T[])[]): T[] {
  return pages.flat().sort((a, b) => compareKeys(a.key, b.key));
}

/**
 * The page of one task from its active instance (workers/api/cluster.ts: the cached assignment's,
 * read again when it says it is not the owner); while it restores, with `allowStale`, from an instance holding part of the store.
 */
async function scanTask(host: Host, taskId: string, store: string, bounds: ScanBounds, allowStale: boolean): Promise<ScanAnswer> {
  const answer = await askActive(host, taskId, async (stub) => (await stub.scan(store, bounds)) as ScanAnswer);
  if (answer?.status === "restoring" && allowStale)
    return (await staleAnswer(host, taskId, async (stub) => (await stub.scan(store, bounds, true)) as ScanAnswer)) ?? answer;
  if (answer && answer.status !== "not-owner") return answer;
  throw new ApiError(503, "unavailable", `task ${taskId} has no active instance right now`, 1);
}

export const scans = new Hono<ApiEnv>().get("/stores/:store/keys", zValidator("query", scanQuery, invalidInput), async (c) => {
  const name = c.req.param("store");
  const found = queryableStore(c.var.host.application, name, "keys");
  const query = c.req.valid("query");
  const { limit: asked, cursor, stale } = query;
  const keySerde = found.store.keySerde;
  // Every task holds a whole global table: one of them answers for all.
  const owners = found.store.global ? 1 : found.subtopology.partitions;
  const most = maxScanLimit(owners);
  if (asked !== undefined && asked > most) {
    throw new ApiError(
      400,
      "invalid_input",
      `limit: at most ${most} for store ${name}, which merges entries from ${owners} partitions (partitions × limit may be at most ${MAX_SCAN_ENTRIES})`,
    );
  }
  const limit = asked ?? Math.min(DEFAULT_SCAN_LIMIT, most);
  const bounds: ScanBounds = {
    prefix: query.prefix === undefined ? undefined : serializedPrefixFromText(keySerde, query.prefix),
    from: query.from === undefined ? undefined : storeKey(found.store, query.from).serialized,
    to: query.to === undefined ? undefined : storeKey(found.store, query.to).serialized,
    after: cursor,
    limit: limit + 1,
  };
  const taskIds = Array.from({ length: owners }, (_, p) => c.var.host.application.taskForStorePartition(found.subtopology, p));
  const answers = await Promise.all(taskIds.map((taskId) => scanTask(c.var.host, taskId, name, bounds, stale === "true")));

  const restoring = answers.findIndex((a) => a.status === "restoring");
  if (restoring >= 0) {
    const answer = answers[restoring] as Extract<ScanAnswer, { status: "restoring" }>;
    const task = taskIds[restoring]!;
    c.header("Retry-After", "1");
    return c.json({ error: "restoring", message: `task ${task} is restoring`, task, progress: answer.progress }, 503);
  }
  const pages = answers as Extract<ScanAnswer, { status: "ok" }>[];
  const merged = mergeByKey(pages.map((a) => a.items));
  const page = merged.slice(0, limit);
  const items = page.map(({ key, value }) => ({ key: keyForAnswer(keySerde, key), value: found.store.valueSerde.deserialize(value) }));
  const next = merged.length > limit ? encodeCursor(page[page.length - 1]!.key) : null;
  return c.json(pages.some((a) => a.stale) ? { items, next, stale: true } : { items, next });
});
