/**
 * A Cloudflare Queue as the input of a topic (docs/connectors.md). Each message of a delivered
 * batch becomes a record: its key from the source's key function (by default a field of the
 * body), its value the body (or what the source's value function makes of it), its timestamp the
 * message's; encoded with the topic's serdes exactly as HTTP ingest encodes
 * (src/streams/topology/input-encoding.ts), and carrying the message's id (SOURCE_ID_HEADER), so
 * that the partition appends a redelivered message once. The records are grouped into one batch
 * per partition (Kafka's default partitioner on the key), each appended atomically.
 *
 * A message that cannot become a record (the key function throws, no key, the serdes refuse the
 * body) becomes a dead letter instead: Kafka's dead-letter record (src/streams/runtime/dead-letter.ts)
 * of the body, with the error, for the source's dead-letter topic (default: the topology's
 * `deadLetterQueueTopic`). Without one, it is left to the Queue's own retries and dead-letter queue.
 *
 * Pure: what the Worker's `queue()` handler appends and acknowledges (workers/queue-consumer.ts).
 */
import { encodeBase64 } from "hono/utils/encode";
import { partitionForKey } from "../log/partitioner";
import { SOURCE_ID_HEADER } from "../log/partition/source-ids";
import type { Header, ProducerRecord } from "../log/types";
import { messageOf } from "../streams/errors";
import { deadLetterRecord } from "../streams/runtime/dead-letter";
import { encodeInput, type InputSerdes, toProducerRecord } from "../streams/topology/input-encoding";

/** A delivered message, as the Queue hands it over (the parts of Workers' `Message` read here). */
export interface QueueMessage<Body = unknown> {
  readonly id: string;
  readonly timestamp: Date;
  readonly body: Body;
  readonly attempts: number;
}

/** Where a Queue's messages go, and how each becomes a record. */
export interface QueueSource<Body = unknown> {
  /** The topic the messages are appended to. */
  readonly topic: string;
  /**
   * The record's key (of the key type of the topic's source: a string for `Serdes.string()`): the
   * body's field of this name, or what this function returns. Default: the field `"key"`. A
   * function that throws, or a key that is missing (undefined or null), dead-letters the message.
   */
  readonly key?: string | ((body: Body, message: QueueMessage<Body>) => unknown);
  /** The record's value: by default the body itself. */
  readonly value?: (body: Body, message: QueueMessage<Body>) => unknown;
  /**
   * Where messages that cannot become records go, as dead letters with Kafka's error headers.
   * Default: the topology's `deadLetterQueueTopic`. Without either, such a message is retried:
   * the Queue's own `max_retries` and `dead_letter_queue` decide its fate.
   */
  readonly deadLetterTopic?: string;
}

/** The field a source keys by when it names none. */
export const DEFAULT_KEY_FIELD = "key";
/** Where a dead letter says its message came from: the Queue's name. */
export const QUEUE_HEADER = "edge-streams.queue";

/** One partition's records, and the ids of the messages they came from. */
export interface QueueAppend {
  readonly topic: string;
  readonly partition: number;
  readonly records: ProducerRecord[];
  readonly messageIds: string[];
}

/** A batch planned: the appends (input and dead letters), and the messages no append takes (retried). */
export interface QueuePlan {
  readonly appends: QueueAppend[];
  readonly unplaced: { readonly id: string; readonly error: Error }[];
}

/** What planning needs to know of the application: the topic's serdes and the partition counts. */
export interface QueueTarget {
  readonly serdes: InputSerdes | undefined;
  readonly partitions: (topic: string) => number;
  /** The dead-letter topic: the source's, else the topology's; undefined for none. */
  readonly deadLetterTopic: string | undefined;
}

/** The records of a delivered batch, one batch per partition, in delivery order within each. */
export function planQueueBatch(queue: string, messages: readonly QueueMessage[], source: QueueSource, target: QueueTarget): QueuePlan {
  const appends = new Map<string, QueueAppend>();
  const unplaced: { id: string; error: Error }[] = [];
  const add = (topic: string, partition: number, record: ProducerRecord, id: string) => {
    const at = `${partition}@${topic}`;
    const append = appends.get(at) ?? { topic, partition, records: [], messageIds: [] };
    appends.set(at, append);
    append.records.push(record);
    append.messageIds.push(id);
  };
  const idHeader = (message: QueueMessage): Header => ({ key: SOURCE_ID_HEADER, value: message.id });
  for (const message of messages) {
    const timestamp = message.timestamp.getTime();
    let key: unknown;
    try {
      key = keyOf(source, message);
      const encoded = encodeInput(target.serdes, key, source.value ? source.value(message.body, message) : message.body);
      const record = toProducerRecord(encoded, timestamp);
      const withId = { ...record, headers: [...(record.headers ?? []), idHeader(message)] };
      add(source.topic, partitionForKey(encoded.key!, target.partitions(source.topic)), withId, message.id);
    } catch (thrown) {
      const error = thrown instanceof Error ? thrown : new Error(messageOf(thrown));
      if (target.deadLetterTopic === undefined) {
        unplaced.push({ id: message.id, error });
        continue;
      }
      try {
        const letter = deadLetterOf(queue, message, typeof key === "string" ? key : null, error, target.deadLetterTopic, idHeader(message));
        // Keyed or not, a message's dead letter always goes to the same partition: a redelivery finds its id there.
        add(target.deadLetterTopic, partitionForKey(letter.key ?? message.id, target.partitions(target.deadLetterTopic)), letter, message.id);
      } catch (unwritable) {
        unplaced.push({ id: message.id, error: unwritable instanceof Error ? unwritable : error });
      }
    }
  }
  return { appends: [...appends.values()], unplaced };
}

function keyOf(source: QueueSource, message: QueueMessage): unknown {
  const key = source.key ?? DEFAULT_KEY_FIELD;
  const found = typeof key === "function" ? key(message.body, message) : fieldOf(message.body, key);
  if (found === undefined || found === null) {
    throw new TypeError(
      typeof key === "function" ? "the key function returned no key" : `the message has no key: its body has no field ${JSON.stringify(key)}`,
    );
  }
  return found;
}

function fieldOf(body: unknown, field: string): unknown {
  return typeof body === "object" && body !== null && !ArrayBuffer.isView(body) ? (body as Record<string, unknown>)[field] : undefined;
}

/** Kafka's dead letter of a message: its key when it had one, its body as text, the error, and the queue and message id. */
function deadLetterOf(queue: string, message: QueueMessage, key: string | null, error: Error, topic: string, id: Header): ProducerRecord {
  const headers = [id, { key: QUEUE_HEADER, value: queue }];
  const context = {
    topic: null,
    partition: -1,
    offset: -1,
    headers,
    processorNodeId: null,
    taskId: "",
    timestamp: message.timestamp.getTime(),
    sourceRawKey: key,
    sourceRawValue: null,
  };
  const letter = deadLetterRecord(topic, context, key, bodyText(message.body), error);
  return { key: letter.key, value: letter.value ?? "", timestamp: letter.timestamp, headers: [...letter.headers] };
}

/** A body as text: a string as it is, bytes in base64, anything else as JSON (or its string form). */
function bodyText(body: unknown): string {
  if (typeof body === "string") return body;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    return encodeBase64(body instanceof ArrayBuffer ? body : body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  }
  try {
    return JSON.stringify(body) ?? String(body);
  } catch {
    return String(body);
  }
}
