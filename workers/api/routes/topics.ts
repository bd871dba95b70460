/**
 * `GET /topics` and `GET /topics/:topic` (read-only): every topic the Worker serves with its
 * partition count and configuration (Kafka's names), and per partition what it keeps now — its
 * earliest and latest offsets, and the records and bytes left after retention and compaction
 * (null where the log cannot say: the `@upstash/kafka` backend).
 */
import { Hono } from "hono";
import type { Log, TopicPartition } from "../../../src/log/types";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";

async function partitionView(log: Log, tp: TopicPartition) {
  if (log.stats) {
    const { earliest, latest, records, bytes } = await log.stats(tp);
    return { partition: tp.partition, earliest, latest, records, bytes };
  }
  const { earliest, latest } = await log.offsets(tp);
  return { partition: tp.partition, earliest, latest, records: null, bytes: null };
}

export const topics = new Hono<ApiEnv>()
  .get("/topics", (c) => {
    const catalog = c.var.host.catalog;
    const list = [...catalog.all]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, partitions]) => ({ name, partitions, config: catalog.config(name) }));
    return c.json({ topics: list });
  })
  .get("/topics/:topic", async (c) => {
    const name = c.req.param("topic");
    const catalog = c.var.host.catalog;
    if (!catalog.has(name)) throw new ApiError(404, "unknown_topic", `unknown topic ${JSON.stringify(name)}`);
    const count = catalog.partitions(name);
    const partitions = await Promise.all(Array.from({ length: count }, (_, partition) => partitionView(c.get("log"), { topic: name, partition })));
    return c.json({ name, config: catalog.config(name), partitions });
  });
