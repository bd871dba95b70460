/**
 * The Upstash Kafka REST dialect as `@upstash/kafka` 1.3.5 speaks it: request bodies (zod schemas,
 * so every input is checked before anything changes) and response shapes. Deliberate choices:
 * - a record without a key is answered with `"key": null` (Kafka's meaning), not `""`, so that an
 *   empty key and no key stay distinct for the Edge Streams `UpstashLog`;
 * - timestamps are milliseconds since the epoch, as Kafka's;
 * - produce metadata carries an extra `duplicate` flag: true when an idempotent producer's retry
 *   was answered with the offsets of its first attempt and nothing new was written.
 */
import { z } from "zod";

/** Most records and bytes (keys, values, headers) one fetch or consume call answers. */
export const FETCH_MAX_RECORDS = 500;
export const FETCH_MAX_BYTES = 1024 * 1024;
/** Longest wait a client may ask for; the embedded log answers at once, so it is only checked. */
export const MAX_TIMEOUT_MS = 60_000;
/**
 * Most partitions one offsets, committed or commit call names: each costs a call to its partition's
 * object (a subrequest), so a request's work stays bounded (a fetch's list too).
 */
export const MAX_PARTITIONS_PER_REQUEST = 1_000;
const tooManyPartitions = `at most ${MAX_PARTITIONS_PER_REQUEST} partitions per request: split the list`;

const topicName = z.string().min(1).max(249);
const partition = z.number().int().min(0).max(99_999);
const offset = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const timeout = z.number().int().min(0).max(MAX_TIMEOUT_MS);

export const headerSchema = z.object({ key: z.string(), value: z.string() });

/** A value as sent: the dialect says string; other JSON values are kept as their JSON text. */
const value = z
  .unknown()
  .refine((v) => v !== undefined, "value is required")
  .transform((v) => (typeof v === "string" ? v : JSON.stringify(v)));

/** A message of `/produce/:topic` (the topic comes from the path). */
export const messageSchema = z.object({
  value,
  key: z.string().nullable().optional(),
  partition: partition.optional(),
  timestamp: offset.optional(),
  headers: z.array(headerSchema).max(1_000).optional(),
});
export type DialectMessage = z.infer<typeof messageSchema>;

/** A message of `/produce`, naming its topic. */
export const topicMessageSchema = messageSchema.extend({ topic: topicName });
export type TopicMessage = z.infer<typeof topicMessageSchema>;

const maxMessages = 10_000;
export const produceBody = z.union([topicMessageSchema, z.array(topicMessageSchema).min(1, "send at least one message").max(maxMessages)]);
export const produceTopicBody = z.union([messageSchema, z.array(messageSchema).min(1, "send at least one message").max(maxMessages)]);

export const topicPartitionSchema = z.object({ topic: topicName, partition });
export const topicPartitionOffsetSchema = topicPartitionSchema.extend({ offset });

export const fetchBody = z
  .object({
    topic: topicName.optional(),
    partition: partition.optional(),
    offset: offset.optional(),
    topicPartitionOffsets: z.array(topicPartitionOffsetSchema).max(MAX_PARTITIONS_PER_REQUEST, tooManyPartitions).optional(),
    timeout: timeout.optional(),
  })
  .refine((b) => b.topic === undefined || (b.partition !== undefined && b.offset !== undefined), {
    message: "a fetch naming a topic needs its partition and offset",
  })
  .refine((b) => b.topic !== undefined || (b.partition === undefined && b.offset === undefined), {
    message: "partition and offset need a topic",
  })
  .refine((b) => b.topic !== undefined || (b.topicPartitionOffsets?.length ?? 0) > 0, {
    message: "name a topic, partition and offset, or topicPartitionOffsets",
  });

/** One `{topic, partition}` or a list of them (the dialect accepts both). */
export const topicPartitionsBody = z
  .unknown()
  .transform((v) => (Array.isArray(v) ? v : [v]))
  .pipe(z.array(topicPartitionSchema).max(MAX_PARTITIONS_PER_REQUEST, tooManyPartitions));

/** Nothing (commit what was consumed), one offset or a list of them. */
export const commitBody = z
  .unknown()
  .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]))
  .pipe(z.array(topicPartitionOffsetSchema).max(MAX_PARTITIONS_PER_REQUEST, tooManyPartitions).optional());

export const consumeBody = z
  .object({
    topic: topicName.optional(),
    topics: z.array(topicName).min(1).max(100).optional(),
    timeout: timeout.optional(),
  })
  .refine((b) => (b.topic === undefined) !== (b.topics === undefined), { message: "name either topic or topics" })
  .transform((b) => ({ topics: [...new Set(b.topics ?? [b.topic!])].sort(), timeout: b.timeout }));

export const autoOffsetReset = z.enum(["earliest", "latest", "none"]);
export type AutoOffsetReset = z.infer<typeof autoOffsetReset>;

/** The consumer headers of the dialect (names are case-insensitive; Hono gives them lower-case). */
export const consumeHeaders = z.object({
  "kafka-enable-auto-commit": z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  "kafka-auto-commit-interval": z.coerce.number().int().min(0).max(86_400_000).default(5_000),
  "kafka-auto-offset-reset": autoOffsetReset.default("latest"),
});

/** `earliest`, `latest` or milliseconds since the epoch. */
export const offsetsTimestamp = z.union([
  z.enum(["earliest", "latest"]),
  z
    .string()
    .regex(/^-?[0-9]{1,16}$/, "timestamp is earliest, latest or milliseconds since the epoch")
    .transform(Number)
    .pipe(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)),
]);

/** A consumer group or instance id as a path segment. */
export const consumerId = z.string().min(1).max(255);

// ---- responses ----

export interface ProduceMetadata {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** Edge Streams extension: this record was already written by an earlier attempt. */
  readonly duplicate: boolean;
}

export interface Message {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** null for a record without a key (see the module comment). */
  readonly key: string | null;
  readonly value: string;
  readonly headers: readonly { key: string; value: string }[];
}

export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

export interface GroupAssignments {
  readonly name: string;
  readonly instances: readonly { name: string; topics: readonly { topic: string; partitions: number[] }[] }[];
}

/** What commit and delete-consumer answer. */
export const SUCCESS = { result: "Success", status: 200 } as const;
