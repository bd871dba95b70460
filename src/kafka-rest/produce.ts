/**
 * Produce planning for the dialect: which partition each message goes to and which messages are
 * appended together. Per request, the messages for one partition form one atomic append, except
 * that messages carrying an `edge-producer` header form their own batch per header value (one
 * `Log.append` has one producer). Partitions: explicit, else Kafka's default partitioner on the
 * key, else — keyless — one partition picked at random per topic and request (Kafka's "sticky"
 * partitioner), so a request's keyless messages still land in one batch. A request with an
 * `Idempotency-Key` is a client's idempotent producer for its messages without the header.
 */
import { InvalidRecord, UnknownTopicOrPartition } from "../log/errors";
import { partitionForKey } from "../log/partitioner";
import type { AppendResult, Header, ProducerId, ProducerRecord } from "../log/types";
import type { ProduceMetadata, TopicMessage } from "./dialect";
import { SOURCE_ID_HEADER } from "../log/partition/source-ids";
import { EDGE_PRODUCER_HEADER, parseProducerHeader, takeProducerHeader } from "./producer-header";

export interface ProduceBatch {
  readonly topic: string;
  readonly partition: number;
  readonly producer?: ProducerId;
  /** The request positions of this batch's messages, in order. */
  readonly positions: number[];
  readonly records: ProducerRecord[];
}

export interface PlanOptions {
  /** The partition count of a topic; throws `UnknownTopicOrPartition` for undeclared ones. */
  readonly partitions: (topic: string) => number;
  /** Stamped on records without a timestamp, except in producer batches (see below). */
  readonly now: number;
  /** A partition in [0, count) for keyless messages; random by default. */
  readonly pickPartition?: (count: number) => number;
  /**
   * The producer of messages without an `edge-producer` header: a client's idempotent producer
   * (an `Idempotency-Key`), one batch per partition, so a retry appends only what is missing.
   */
  readonly producer?: ProducerId;
}

/**
 * Groups messages into batches, in order of first appearance. Throws `InvalidRecord` or
 * `UnknownTopicOrPartition` before anything is appended, so a bad request changes nothing.
 */
export function planProduce(messages: readonly TopicMessage[], options: PlanOptions): ProduceBatch[] {
  // An idempotent producer's retry must land where its first attempt did: its keyless messages go
  // to the partition its id hashes to, not a random one.
  const idempotent = options.producer;
  const pick =
    options.pickPartition ??
    (idempotent ? (count: number) => partitionForKey(idempotent.producerId, count) : (count: number) => Math.floor(Math.random() * count));
  const sticky = new Map<string, number>();
  const batches = new Map<string, ProduceBatch>();
  messages.forEach((message, position) => {
    const where = `message ${position}`;
    const count = options.partitions(message.topic);
    let partition: number;
    if (message.partition !== undefined) {
      if (message.partition >= count) {
        throw new UnknownTopicOrPartition(`${where}: topic ${JSON.stringify(message.topic)} has no partition ${message.partition} (it has ${count})`);
      }
      partition = message.partition;
    } else if (message.key !== undefined && message.key !== null) {
      partition = partitionForKey(message.key, count);
    } else {
      let chosen = sticky.get(message.topic);
      if (chosen === undefined) sticky.set(message.topic, (chosen = pick(count)));
      partition = chosen;
    }
    // A queue message's id is the runtime's own (a partition appends each once): a client's record
    // carrying one could make the partition leave a real message out.
    if ((message.headers ?? []).some((h) => h.key === SOURCE_ID_HEADER)) {
      throw new InvalidRecord(`${where}: the header name ${SOURCE_ID_HEADER} is reserved`);
    }
    const { producer: header, rest, count: producerHeaders } = takeProducerHeader(message.headers ?? []);
    if (producerHeaders > 1) throw new InvalidRecord(`${where}: more than one ${EDGE_PRODUCER_HEADER} header`);
    const producer = header === undefined ? options.producer : parseProducerHeader(header);
    if (producer === null) {
      throw new InvalidRecord(`${where}: ${EDGE_PRODUCER_HEADER} must be "<producerId>;<epoch>;<sequence>"`);
    }
    const id = producer ? JSON.stringify([producer.producerId, producer.epoch, producer.sequence]) : "";
    const batchKey = JSON.stringify([message.topic, partition, id]);
    let batch = batches.get(batchKey);
    if (!batch) {
      batch = { topic: message.topic, partition, positions: [], records: [], ...(producer ? { producer } : {}) };
      batches.set(batchKey, batch);
    }
    batch.positions.push(position);
    batch.records.push(toRecord(message, rest, producer ? undefined : options.now));
  });
  return [...batches.values()];
}

/**
 * A producer batch is sent without a stamped timestamp: its retry must match the first attempt's
 * content, and a stamp taken at each attempt would differ. The log stamps it with the append time.
 */
function toRecord(message: TopicMessage, headers: Header[], stamp: number | undefined): ProducerRecord {
  const timestamp = message.timestamp ?? stamp;
  return {
    key: message.key ?? null,
    value: message.value,
    ...(headers.length ? { headers } : {}),
    ...(timestamp === undefined ? {} : { timestamp }),
  };
}

/** The metadata of every message, in request order. */
export function metadataInRequestOrder(batches: readonly ProduceBatch[], results: readonly AppendResult[], total: number, now: number): ProduceMetadata[] {
  const metadata = new Array<ProduceMetadata>(total);
  batches.forEach((batch, i) => {
    const result = results[i]!;
    batch.positions.forEach((position, j) => {
      metadata[position] = {
        topic: batch.topic,
        partition: batch.partition,
        offset: result.baseOffset + j,
        timestamp: batch.records[j]!.timestamp ?? now,
        duplicate: result.duplicate,
      };
    });
  });
  return metadata;
}
