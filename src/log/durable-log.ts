/**
 * The embedded log: each topic-partition is an object named `<topic>/<partition>` that answers the
 * calls of `PartitionObject` (durable-objects/log-partition.ts hosts them; this module does not
 * know that). Errors come back from the objects as values and are rethrown here typed.
 */
import { topicPartition } from "../names";
import { LogUnavailable, unwrap, type Outcome } from "./errors";
import { decodeFetch, encodeBatch, toEntry, type BatchMeasure, type EncodedFetch } from "./record-batch";
import type { PartitionStats } from "./partition-store";
import type { TopicConfig } from "./topic-config";
import type { TopicCatalog } from "./topics";
import type {
  AppendResult,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  Log,
  LogCapabilities,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
  UnseenAppendResult,
} from "./types";

/**
 * Who an append is for. `"application"`: the application that hosts the log (its ingest, its
 * tasks, its test driver) — the first append to a partition its tasks read makes its tasks.
 * `"external"`: a producer outside it, through the Kafka REST endpoint — possibly another
 * deployment using this one as its log, whose tasks read these partitions under the same group;
 * such appends never make this deployment's tasks (they would process that deployment's input
 * beside its own tasks, with the same epochs, changelogs and group offsets).
 */
export type AppendOrigin = "application" | "external";

/** What the embedded log calls of a partition's object (by RPC: errors come back as values). */
export interface PartitionObject {
  /** `config` is the topic's configuration: the partition keeps it for its retention and compaction. */
  append(tp: TopicPartition, records: ProducerRecord[], producer?: ProducerId, config?: TopicConfig, origin?: AppendOrigin): Promise<Outcome<AppendResult>>;
  appendEncoded(
    tp: TopicPartition,
    records: string,
    producer?: ProducerId,
    config?: TopicConfig,
    origin?: AppendOrigin,
    measure?: BatchMeasure,
  ): Promise<Outcome<AppendResult>>;
  appendUnseen(tp: TopicPartition, records: string, config?: TopicConfig, origin?: AppendOrigin, measure?: BatchMeasure): Promise<Outcome<UnseenAppendResult>>;
  readEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<Outcome<EncodedFetch>>;
  offsets(tp: TopicPartition): Promise<Outcome<OffsetRange>>;
  offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<Outcome<number>>;
  deleteRecordsBefore(tp: TopicPartition, offset: number): Promise<Outcome<OffsetRange>>;
  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<Outcome<void>>;
  committedOffset(group: string, tp: TopicPartition): Promise<Outcome<CommittedOffset | null>>;
  stats(tp: TopicPartition): Promise<Outcome<PartitionStats>>;
}

/**
 * `P` is what the namespace hands out for a name (a Durable Object stub); it must answer the
 * calls of `PartitionObject`, which RPC stubs' types do not spell the same way.
 */
export class DurableLog<P = PartitionObject> implements Log {
  private externalView: DurableLog<P> | undefined;
  /** A partition wakes its subscribers after every append and tells the coordinator of the application's first. */
  readonly capabilities: LogCapabilities;

  constructor(
    private readonly partitions: { getByName(name: string): P },
    readonly catalog: TopicCatalog,
    /** Whose appends these are (see `AppendOrigin`); the application's unless made by `forExternalProducers`. */
    readonly origin: AppendOrigin = "application",
  ) {
    this.capabilities = { wakesReaders: true, startsTasks: origin === "application", deletesRecords: true };
  }

  /** The same log, its appends made for producers outside the application (the Kafka REST endpoint). */
  forExternalProducers(): DurableLog<P> {
    if (this.origin === "external") return this;
    this.externalView ??= new DurableLog(this.partitions, this.catalog, "external");
    return this.externalView;
  }

  /** The stub of a declared partition (throws `UnknownTopicOrPartition` for others). */
  partition(tp: TopicPartition): P {
    this.catalog.check(tp);
    return this.partitions.getByName(topicPartition(tp));
  }

  /**
   * Calls a partition; a failed call (the object unreachable, reset or overloaded) is
   * `LogUnavailable`. `fn` gets the topic and partition alone: RPC copies every property of what
   * it sends, and callers' objects may carry more (an outbox batch carries its records).
   */
  private async call<T>(tp: TopicPartition, fn: (stub: PartitionObject, tp: TopicPartition) => Promise<Outcome<T>>): Promise<T> {
    const stub = this.partition(tp) as PartitionObject;
    let result: Outcome<T>;
    try {
      result = await fn(stub, { topic: tp.topic, partition: tp.partition });
    } catch (error) {
      throw new LogUnavailable(`${topicPartition(tp)}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return unwrap(result);
  }

  async topics(): Promise<ReadonlyMap<string, number>> {
    return this.catalog.all;
  }

  /**
   * Records cross to the partition encoded as one string (record-batch.ts), with their measure, so
   * that the partition stores them as they are without parsing them again; records JSON cannot
   * carry exactly go as they are, for the partition to reject.
   */
  append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): Promise<AppendResult> {
    const encoded = encodeBatch(records);
    if (encoded === undefined) return this.call(tp, (s, at) => s.append(at, [...records], producer, this.catalog.config(at.topic), this.origin));
    return this.appendEncoded(tp, encoded.text, producer, encoded.measure);
  }

  /** The topic's configuration goes along, so the partition applies its retention and compaction. */
  appendEncoded(tp: TopicPartition, records: string, producer?: ProducerId, measure?: BatchMeasure): Promise<AppendResult> {
    return this.call(tp, (s, at) => s.appendEncoded(at, records, producer, this.catalog.config(at.topic), this.origin, measure));
  }

  /** Records of an at-least-once source, those the partition appended recently left out (see `Log.appendUnseen`). */
  appendUnseen(tp: TopicPartition, records: readonly ProducerRecord[]): Promise<UnseenAppendResult> {
    const encoded = encodeBatch(records);
    const text = encoded?.text ?? JSON.stringify(records.map(toEntry));
    return this.call(tp, (s, at) => s.appendUnseen(at, text, this.catalog.config(at.topic), this.origin, encoded?.measure));
  }

  stats(tp: TopicPartition): Promise<PartitionStats> {
    return this.call(tp, (s, at) => s.stats(at));
  }

  /** Stored batches cross encoded, and are decoded here. */
  async fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<FetchResult> {
    return decodeFetch(await this.fetchEncoded(tp, offset, bounds));
  }

  fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<EncodedFetch> {
    return this.call(tp, (s, at) => s.readEncoded(at, offset, bounds));
  }

  offsets(tp: TopicPartition): Promise<OffsetRange> {
    return this.call(tp, (s, at) => s.offsets(at));
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number> {
    return this.call(tp, (s, at) => s.offsetForTimestamp(at, timestamp));
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): Promise<OffsetRange> {
    return this.call(tp, (s, at) => s.deleteRecordsBefore(at, offset));
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<void> {
    return this.call(tp, (s, at) => s.commitOffset(group, at, committed));
  }

  committedOffset(group: string, tp: TopicPartition): Promise<CommittedOffset | null> {
    return this.call(tp, (s, at) => s.committedOffset(group, at));
  }
}
