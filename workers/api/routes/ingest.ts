/**
 * `POST /topics/:topic/records`: validated, encoded for the topic (with the serdes of the source
 * reading it, each record checked by reading it back: src/ingest/encode.ts), partitioned with
 * Kafka's default partitioner, each partition's records appended atomically. One refused record
 * refuses the request before anything is appended. An `Idempotency-Key` makes the request an
 * idempotent producer (one batch per partition), so a retry appends only what is missing. Without
 * one, a partition's batch goes with those of concurrent requests as one append
 * (src/ingest/gather.ts); the answer still waits for its own records and names their offsets.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import { encodeIngest } from "../../../src/ingest/encode";
import { AppendGatherer } from "../../../src/ingest/gather";
import { offsetsInRequestOrder, planIngest } from "../../../src/ingest/plan";
import { encodeBatch } from "../../../src/log/record-batch";
import type { Log } from "../../../src/log/types";
import { parseTopicPartition, topicPartition } from "../../../src/names";
import { inputSerdes } from "../../../src/streams/topology/input-encoding";
import { cachedAssignment } from "../cluster";
import { ApiError } from "../http-error";
import { refuseOutsideWrite, refuseRuntimeHeaders } from "../owned";
import type { ApiEnv } from "../context";
import { invalidInput } from "../validation";

/**
 * Each log's gatherer of ingest appends (src/ingest/gather.ts): one per log, hence per application
 * and environment in the isolate. Only a log that takes encoded appends gathers.
 */
const gatherers = new WeakMap<Log, AppendGatherer>();

function ingestGatherer(log: Log, lingerMs: number): AppendGatherer | undefined {
  const appendEncoded = log.appendEncoded?.bind(log);
  if (!appendEncoded) return undefined;
  let gatherer = gatherers.get(log);
  if (!gatherer) {
    gatherer = new AppendGatherer((lane, batch) => appendEncoded(parseTopicPartition(lane)!, batch.text, undefined, batch.measure), { lingerMs });
    gatherers.set(log, gatherer);
  }
  return gatherer;
}

const ingestBody = z.object({
  records: z
    .array(
      z.object({
        key: z.string(),
        value: z.unknown().refine((v) => v !== undefined, "value is required"),
        partition: z.number().int().min(0).optional(),
        timestamp: z.number().int().min(0).optional(),
      }),
    )
    .min(1, "send at least one record"),
});

/**
 * Whether a body certainly passes `ingestBody` as it is: a hand-written check of the usual,
 * valid body, much cheaper than zod on a thousand records. It accepts nothing zod refuses (it is
 * stricter, if anything); whatever it does not accept goes to zod, which says what is wrong. The
 * body passes on unchanged, where zod would copy each record (the route reads only these fields).
 */
function plainlyValid(body: unknown): body is z.output<typeof ingestBody> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const records = (body as { records?: unknown }).records;
  if (!Array.isArray(records) || records.length === 0) return false;
  for (let i = 0; i < records.length; i++) {
    const record: unknown = records[i];
    if (typeof record !== "object" || record === null || Array.isArray(record)) return false;
    const { key, value, partition, timestamp } = record as Record<string, unknown>;
    if (typeof key !== "string" || value === undefined) return false;
    if (partition !== undefined && !(Number.isSafeInteger(partition) && (partition as number) >= 0)) return false;
    if (timestamp !== undefined && !(Number.isSafeInteger(timestamp) && (timestamp as number) >= 0)) return false;
  }
  return true;
}

const validateIngestBody = {
  validationFunction: (schema: typeof ingestBody, value: unknown) =>
    plainlyValid(value) ? { success: true as const, data: value, error: undefined } : schema.safeParseAsync(value),
};

/**
 * Checks the one header the route reads, by hand: a header validator would copy every header of
 * every request first, and zod's object parse of it cost half a millisecond per request here.
 */
const validIngestHeaders: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const key = c.req.header("idempotency-key");
  if (key !== undefined && (key.length < 1 || key.length > 200)) {
    throw new ApiError(400, "invalid_input", "idempotency-key: Idempotency-Key must be 1 to 200 characters");
  }
  return next();
};

/** A request that gathers: its log's gatherer, and its word that it has given its members (`AppendGatherer.expect`). */
interface Gathering {
  readonly gatherer: AppendGatherer;
  readonly given: () => void;
}

/** The route's own variable: set by `announceIngest` for a request that gathers, absent otherwise. */
type IngestEnv = ApiEnv & { Variables: { gathering?: Gathering } };

/**
 * Announces a request that will gather (no `Idempotency-Key`) to its log's gatherer as it begins,
 * before its body is read and parsed, so that the appends of requests already on their way wait
 * for its members (src/ingest/gather.ts); it says it arrived once its appends are given, or as it
 * ends whatever happened (a refused body, an error).
 */
const announceIngest: MiddlewareHandler<IngestEnv> = async (c, next) => {
  const gatherer = c.req.header("idempotency-key") === undefined ? ingestGatherer(c.get("log"), c.var.config.INGEST_LINGER_MS) : undefined;
  if (!gatherer) return next();
  const given = gatherer.expect(c.req.param("topic") ?? "");
  c.set("gathering", { gatherer, given });
  try {
    await next();
  } finally {
    given();
  }
};

export const ingest = new Hono<IngestEnv>().post(
  "/topics/:topic/records",
  validIngestHeaders,
  announceIngest,
  zValidator("json", ingestBody, invalidInput, validateIngestBody),
  async (c) => {
    const topic = c.req.param("topic");
    refuseOutsideWrite(c.var.host.application, topic, c.var.access.roles);
    const log = c.get("log");
    const partitions = (await log.topics()).get(topic);
    if (partitions === undefined) throw new ApiError(404, "unknown_topic", `unknown topic ${JSON.stringify(topic)}`);
    const { records } = c.req.valid("json");
    refuseRuntimeHeaders(records, c.var.access.roles);
    const outOfRange = records.findIndex((r) => r.partition !== undefined && r.partition >= partitions);
    if (outOfRange >= 0) {
      throw new ApiError(400, "invalid_input", `records[${outOfRange}].partition: topic ${topic} has partitions 0 to ${partitions - 1}`);
    }
    const key = c.req.header("idempotency-key");
    // Appends never wait for the coordinator when the log starts the tasks (the embedded log's
    // partition tells it of the first append). A remote log tells no one: the isolate's first
    // ingest gets the assignment (which makes the tasks) before appending, as tasks made after
    // their first records did not process them (test/node/upstash-backend.test.ts); cached after that.
    if (!log.capabilities.startsTasks) await cachedAssignment(c.var.host);
    const encoded = encodeIngest(records, inputSerdes(c.var.host.application.topology, topic));
    if (!encoded.ok) {
      const { index, refused } = encoded;
      const where = `records[${index}]${refused.field ? `.${refused.field}` : ""}`;
      const message = `${where}: ${refused.message}`;
      if (refused.refusal === "too-large") return c.json({ error: "record_too_large", message, index }, 413);
      if (refused.refusal === "key") return c.json({ error: "invalid_input", message, index }, 400);
      return c.json({ error: "InvalidRecord", message, index }, 400);
    }
    const batches = planIngest(records, encoded.records, partitions);
    const gathering = c.get("gathering");
    const gatherer = gathering?.gatherer;
    const appends = batches.map((batch) => {
      const tp = { topic, partition: batch.partition };
      if (key !== undefined) return log.append(tp, batch.records, { producerId: `ingest:${key}`, epoch: 0, sequence: 0 });
      const member = gatherer && encodeBatch(batch.records);
      if (!gatherer || !member?.measure) return log.append(tp, batch.records);
      const appended = gatherer.append(topicPartition(tp), { text: member.text, measure: member.measure, bytes: member.bytes }, topic);
      // Its append may carry other requests' records: it runs to its end even if this client goes.
      c.executionCtx.waitUntil(appended.catch(() => {}));
      return appended;
    });
    // Every member is given: the lanes waiting for this request (gather.ts) may send.
    gathering?.given();
    const settled = await Promise.allSettled(appends);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) throw failed.reason;
    const results = settled.map((s) => (s as PromiseFulfilledResult<Awaited<ReturnType<typeof log.append>>>).value);
    return c.json({ offsets: offsetsInRequestOrder(batches, results, records.length) });
  },
);
