/**
 * `/kafka/*`: the Upstash Kafka REST dialect over the Worker's log, so `@upstash/kafka` works
 * against Edge Streams unchanged. HTTP Basic auth (user `edge`, password a token; checked with
 * every other route's, ../authenticate.ts); errors as the dialect has them. This file holds produce,
 * fetch, offsets and topics; consumer groups are in kafka-rest-groups.ts. The decisions behind the
 * shapes are in src/kafka-rest/dialect.ts. A GET never writes: the dialect's
 * `GET /produce/:topic/:value` is not served (404).
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import {
  produceBody,
  produceTopicBody,
  fetchBody,
  MAX_PARTITIONS_PER_REQUEST,
  offsetsTimestamp,
  topicPartitionsBody,
  type DialectMessage,
  type ProduceMetadata,
  type TopicMessage,
} from "../../../src/kafka-rest/dialect";
import { dialectErrorBody } from "../../../src/kafka-rest/errors";
import { readBounded } from "../../../src/kafka-rest/fetch";
import { metadataInRequestOrder, planProduce } from "../../../src/kafka-rest/produce";
import { UnknownTopicOrPartition } from "../../../src/log/errors";
import { checkBatch, MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES } from "../../../src/log/records";
import type { AppendResult, ProducerId } from "../../../src/log/types";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { refuseOutsideWrite, refuseRuntimeHeaders } from "../owned";
import { kafkaGroups } from "./kafka-rest-groups";
import { bodyText, dialectErrorResponse, invalidDialectInput, validate } from "./kafka-rest-support";
import { topicPartition } from "../../../src/names";

export const kafkaRest = new Hono<ApiEnv>();

/** Whether a request path is the dialect's (mounted at `/kafka`). */
export function isKafkaPath(path: string): boolean {
  return path === "/kafka" || path.startsWith("/kafka/");
}

kafkaRest.onError((error, c) => dialectErrorResponse(c, error));

const topicParam = z.object({ topic: z.string().min(1).max(249) });

/**
 * A client's idempotent producer: with an `Idempotency-Key` header (1–200 characters), the
 * request's messages are appended as producer `ingest:<key>`, as `POST /topics/:topic/records`
 * does, one batch per partition: a retry appends only what is missing and answers the same
 * offsets. Those ids cannot be the runtime's (`<applicationId>-<task>`: no `:` in either).
 */
function idempotentProducer(c: Context<ApiEnv>): { producer?: ProducerId } {
  const key = c.req.header("Idempotency-Key");
  if (key === undefined) return {};
  if (key.length < 1 || key.length > 200) throw new ApiError(400, "invalid_input", "Idempotency-Key must be 1 to 200 characters");
  return { producer: { producerId: `ingest:${key}`, epoch: 0, sequence: 0 } };
}

/** Appends the planned batches: partitions in parallel, one partition's batches in request order. */
async function produce(c: Context<ApiEnv>, messages: readonly TopicMessage[]): Promise<ProduceMetadata[]> {
  // Before anything is appended: a request naming a topic only the application writes, or carrying
  // its producer identity, anywhere changes nothing (unless it comes from the runtime, ../owned.ts).
  const { roles } = c.var.access;
  refuseRuntimeHeaders(messages, roles);
  for (const message of messages) refuseOutsideWrite(c.var.host.application, message.topic, roles);
  // An external producer's appends never make this deployment's tasks (see AppendOrigin): it may
  // be another deployment using this one as its log, under the same group and epochs.
  const log = c.get("log").forExternalProducers();
  const counts = await log.topics();
  const now = Date.now();
  const batches = planProduce(messages, {
    now,
    partitions: (topic) => {
      const count = counts.get(topic);
      if (count === undefined) throw new UnknownTopicOrPartition(`unknown topic ${JSON.stringify(topic)}`);
      return count;
    },
    ...idempotentProducer(c),
  });
  if (batches.length > MAX_PARTITIONS_PER_REQUEST) {
    throw new ApiError(400, "invalid_input", `a request appends to at most ${MAX_PARTITIONS_PER_REQUEST} partitions (this one to ${batches.length}): split it`);
  }
  // Every batch is checked before any is appended, so a bad message anywhere changes nothing. A
  // client's record must leave room for the headers of its dead letter (MAX_INPUT_RECORD_BYTES), so
  // no record it writes can wedge a partition; the runtime's own (the log role) are held to the log's limit.
  const maxRecordBytes = roles.has("log") ? MAX_RECORD_BYTES : MAX_INPUT_RECORD_BYTES;
  for (const batch of batches) checkBatch(batch.records, now, maxRecordBytes);
  const chains = new Map<string, Promise<unknown>>();
  const appends = batches.map((batch) => {
    const key = `${topicPartition(batch)}`;
    const previous = chains.get(key) ?? Promise.resolve();
    const append = previous.then(() => log.append({ topic: batch.topic, partition: batch.partition }, batch.records, batch.producer));
    chains.set(key, append);
    return append;
  });
  const settled = await Promise.allSettled(appends);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<AppendResult>).value);
  return metadataInRequestOrder(batches, results, messages.length, now);
}

kafkaRest.get("/topics", async (c) => c.json(Object.fromEntries(await c.get("log").topics())));

/** One message or a list, each naming its topic; always answered with a list (the client takes [0]). */
kafkaRest.post("/produce", zValidator("json", produceBody, invalidDialectInput), async (c) => {
  const body = c.req.valid("json");
  return c.json(await produce(c, Array.isArray(body) ? body : [body]));
});

/**
 * A body that is a message (an object with `value`) or a list of them is taken as such; any other
 * body is the value itself, as raw text. One message is answered with one metadata object.
 */
kafkaRest.post("/produce/:topic", zValidator("param", topicParam, invalidDialectInput), async (c) => {
  const { topic } = c.req.valid("param");
  const text = await bodyText(c);
  if (text === "") throw new ApiError(400, "invalid_input", "empty body: send a message, a list of messages, or the value itself");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const structured = Array.isArray(parsed) || (typeof parsed === "object" && parsed !== null && "value" in parsed);
  const body: DialectMessage | DialectMessage[] = structured ? validate(produceTopicBody, parsed) : { value: text };
  const messages = (Array.isArray(body) ? body : [body]).map((m) => ({ ...m, topic }));
  const metadata = await produce(c, messages);
  return c.json(Array.isArray(body) ? metadata : metadata[0]);
});

kafkaRest.post("/fetch", zValidator("json", fetchBody, invalidDialectInput), async (c) => {
  const body = c.req.valid("json");
  const reads = [
    ...(body.topic === undefined ? [] : [{ topic: body.topic, partition: body.partition!, offset: body.offset! }]),
    ...(body.topicPartitionOffsets ?? []),
  ];
  // `timeout` is only an upper bound: the embedded log answers at once with what it has.
  return c.json((await readBounded(c.get("log"), reads)).messages);
});

kafkaRest.post(
  "/offsets/:timestamp",
  zValidator("param", z.object({ timestamp: offsetsTimestamp }), invalidDialectInput),
  zValidator("json", topicPartitionsBody, invalidDialectInput),
  async (c) => {
    const { timestamp } = c.req.valid("param");
    const log = c.get("log");
    const offsets = await Promise.all(
      c.req.valid("json").map(async (tp) => {
        const offset =
          timestamp === "earliest"
            ? (await log.offsets(tp)).earliest
            : timestamp === "latest"
              ? (await log.offsets(tp)).latest
              : await log.offsetForTimestamp(tp, timestamp);
        return { topic: tp.topic, partition: tp.partition, offset };
      }),
    );
    return c.json(offsets);
  },
);

kafkaRest.route("/", kafkaGroups);

kafkaRest.all("*", (c) => c.json(dialectErrorBody(404, `no route for ${c.req.method} ${c.req.path}`), 404));
