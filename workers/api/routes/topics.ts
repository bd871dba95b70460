/**
 * `GET /topics` and `GET /topics/:topic` (read-only): every topic the Worker serves with its
 * partition count and configuration (Kafka's names), and per partition what it keeps now — its
 * earliest and latest offsets, and the records and bytes left after retention and compaction
 * (null where the log cannot say: the `@upstash/kafka` backend). A topic's partitions are paged
 * (`?limit=&cursor=`, at most MAX_TOPIC_PARTITIONS_PAGE): each costs a call to its object, so a
 * request's fan-out stays bounded whatever the topic's size.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { z } from "zod";
import type { Log, TopicPartition } from "../../../src/log/types";
import type { ApiEnv } from "../context";
import { decodeCursor, encodeCursor } from "../cursor";
import { ApiError } from "../http-error";
import { invalidInput } from "../validation";
import { limitParam } from "../views";

/** Partitions described per page of `GET /topics/:topic`, by default and at most. */
export const MAX_TOPIC_PARTITIONS_PAGE = 1_000;

async function partitionView(log: Log, tp: TopicPartition) {
  if (log.stats) {
    const { earliest, latest, records, bytes, remote } = await log.stats(tp);
    // With tiered storage: what of it is in R2 (records and bytes above count it too).
    return { partition: tp.partition, earliest, latest, records, bytes, ...(remote ? { remote } : {}) };
  }
  const { earliest, latest } = await log.offsets(tp);
  return { partition: tp.partition, earliest, latest, records: null, bytes: null };
}

/** `cursor`: where the last page ended (a partition number this route returned). */
const topicQuery = z
  .object({
    limit: limitParam(MAX_TOPIC_PARTITIONS_PAGE),
    cursor: z
      .string()
      .max(64, "cursor is too long")
      .transform((cursor, ctx) => {
        const last = decodeCursor(cursor);
        if (last === undefined || !/^(0|[1-9][0-9]{0,8})$/.test(last)) {
          ctx.addIssue({ code: "custom", message: "cursor is not one this route returned" });
          return z.NEVER;
        }
        return Number(last);
      })
      .optional(),
  })
  .strict();

export const topics = new Hono<ApiEnv>()
  .get("/topics", (c) => {
    const catalog = c.var.host.catalog;
    const list = [...catalog.all]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, partitions]) => ({ name, partitions, config: catalog.config(name) }));
    return c.json({ topics: list });
  })
  .get("/topics/:topic", zValidator("query", topicQuery, invalidInput), async (c) => {
    const name = c.req.param("topic");
    const catalog = c.var.host.catalog;
    if (!catalog.has(name)) throw new ApiError(404, "unknown_topic", `unknown topic ${JSON.stringify(name)}`);
    const { limit = MAX_TOPIC_PARTITIONS_PAGE, cursor } = c.req.valid("query");
    const count = catalog.partitions(name);
    const first = cursor === undefined ? 0 : cursor + 1;
    const last = Math.min(count, first + limit);
    const partitions = await Promise.all(
      Array.from({ length: Math.max(0, last - first) }, (_, i) => partitionView(c.get("log"), { topic: name, partition: first + i })),
    );
    const next = last < count ? encodeCursor(String(last - 1)) : null;
    return c.json({ name, config: catalog.config(name), partitions, next });
  });
