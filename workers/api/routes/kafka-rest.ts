/**
 * `/kafka/*`: the Upstash Kafka REST dialect over the Worker's log, so `@upstash/kafka` works
 * against Edge Streams unchanged. HTTP Basic auth (user `edge`, password `API_TOKEN`); errors as
 * the dialect has them. This file holds auth, produce, fetch, offsets and topics; consumer groups
 * are in kafka-rest-groups.ts. The decisions behind the shapes are in src/kafka-rest/dialect.ts.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import {
  produceBody,
  produceTopicBody,
  fetchBody,
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
import { DurableLog } from "../../../src/log/durable-log";
import { checkBatch } from "../../../src/log/records";
import type { AppendResult } from "../../../src/log/types";
import { basicMatches, requiredToken } from "../auth";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { refuseInternalTopicWrite } from "../owned";
import { EDGE_PRODUCER_HEADER, parseProducerHeader } from "../../../src/kafka-rest/producer-header";
import { kafkaGroups } from "./kafka-rest-groups";
import { bodyText, dialectErrorResponse, invalidDialectInput, validate } from "./kafka-rest-support";

export const kafkaRest = new Hono<ApiEnv>();

/** Whether a request path is the dialect's (mounted at `/kafka`). */
export function isKafkaPath(path: string): boolean {
  return path === "/kafka" || path.startsWith("/kafka/");
}

kafkaRest.onError((error, c) => dialectErrorResponse(c, error));

kafkaRest.use("*", async (c, next) => {
  const config = c.get("config");
  const token = requiredToken(config.API_TOKEN, config.localDevelopment, c.req.url);
  if (token !== null && !basicMatches(c.req.header("Authorization"), token)) {
    c.header("WWW-Authenticate", 'Basic realm="edge-streams"');
    return c.json(dialectErrorBody(401, "unauthorized: missing or wrong credentials (HTTP Basic, user edge)"), 401);
  }
  await next();
});

const topicParam = z.object({ topic: z.string().min(1).max(249) });

/** Appends the planned batches: partitions in parallel, one partition's batches in request order. */
async function produce(c: Context<ApiEnv>, messages: readonly TopicMessage[]): Promise<ProduceMetadata[]> {
  // Before anything is appended: a request naming an internal topic anywhere changes nothing.
  for (const message of messages) {
    const header = message.headers?.find((h) => h.key === EDGE_PRODUCER_HEADER);
    const producer = header === undefined ? undefined : parseProducerHeader(String(header.value));
    refuseInternalTopicWrite(c.var.host.application, message.topic, producer?.producerId);
  }
  // An external producer's appends never make this deployment's tasks (see AppendOrigin): it may
  // be another deployment using this one as its log, under the same group and epochs.
  const shared = c.get("log");
  const log = shared instanceof DurableLog ? shared.forExternalProducers() : shared;
  const counts = await log.topics();
  const now = Date.now();
  const batches = planProduce(messages, {
    now,
    partitions: (topic) => {
      const count = counts.get(topic);
      if (count === undefined) throw new UnknownTopicOrPartition(`unknown topic ${JSON.stringify(topic)}`);
      return count;
    },
  });
  // Every batch is checked before any is appended, so a bad message anywhere changes nothing.
  for (const batch of batches) checkBatch(batch.records, now);
  const chains = new Map<string, Promise<unknown>>();
  const appends = batches.map((batch) => {
    const key = `${batch.topic}/${batch.partition}`;
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

kafkaRest.get(
  "/produce/:topic/:value",
  zValidator("param", topicParam.extend({ value: z.string() }), invalidDialectInput),
  zValidator("query", z.object({ key: z.string().optional() }), invalidDialectInput),
  async (c) => {
    const { topic, value } = c.req.valid("param");
    const { key } = c.req.valid("query");
    const [metadata] = await produce(c, [{ topic, value, ...(key === undefined ? {} : { key }) }]);
    return c.json(metadata);
  },
);

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
