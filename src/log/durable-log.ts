/**
 * The embedded log: each topic-partition is a `LogPartition` Durable Object named
 * `<topic>/<partition>`. Errors come back from the objects as values and are rethrown here typed.
 */
import type { LogPartition } from "../../durable-objects/log-partition";
import { LogUnavailable, unwrap, type Outcome } from "./errors";
import { decodeBatches, encodeRecords, type EncodedFetch } from "./record-batch";
import type { PartitionStats } from "./partition-store";
import { partitionName, type TopicCatalog } from "./topics";
import type {
  AppendResult,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  Log,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
} from "./types";

export class DurableLog implements Log {
  constructor(
    private readonly partitions: DurableObjectNamespace<LogPartition>,
    readonly catalog: TopicCatalog,
  ) {}

  /** The stub of a declared partition (throws `UnknownTopicOrPartition` for others). */
  partition(tp: TopicPartition): DurableObjectStub<LogPartition> {
    this.catalog.check(tp);
    return this.partitions.getByName(partitionName(tp));
  }

  /**
   * Calls a partition; a failed call (the object unreachable, reset or overloaded) is
   * `LogUnavailable`. `fn` gets the topic and partition alone: RPC copies every property of what
   * it sends, and callers' objects may carry more (an outbox batch carries its records).
   */
  private async call<T>(tp: TopicPartition, fn: (stub: DurableObjectStub<LogPartition>, tp: TopicPartition) => Promise<Outcome<T>>): Promise<T> {
    const stub = this.partition(tp);
    let result: Outcome<T>;
    try {
      result = await fn(stub, { topic: tp.topic, partition: tp.partition });
    } catch (error) {
      throw new LogUnavailable(`${partitionName(tp)}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return unwrap(result);
  }

  async topics(): Promise<ReadonlyMap<string, number>> {
    return this.catalog.all;
  }

  /**
   * Records cross to the partition encoded as one string (record-batch.ts), which the partition
   * stores as it is; records JSON cannot carry exactly go as they are, for the partition to reject.
   */
  append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): Promise<AppendResult> {
    const encoded = encodeRecords(records);
    if (encoded === undefined) return this.call(tp, (s, at) => s.append(at, [...records], producer, this.catalog.config(at.topic)) as Promise<Outcome<AppendResult>>);
    return this.appendEncoded(tp, encoded, producer);
  }

  /** The topic's configuration goes along, so the partition applies its retention and compaction. */
  appendEncoded(tp: TopicPartition, records: string, producer?: ProducerId): Promise<AppendResult> {
    return this.call(tp, (s, at) => s.appendEncoded(at, records, producer, this.catalog.config(at.topic)) as Promise<Outcome<AppendResult>>);
  }

  stats(tp: TopicPartition): Promise<PartitionStats> {
    return this.call(tp, (s, at) => s.stats(at) as Promise<Outcome<PartitionStats>>);
  }

  /** Stored batches cross encoded, and are decoded here. */
  async fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<FetchResult> {
    const { batches, ...rest } = await this.call(tp, (s, at) => s.readEncoded(at, offset, bounds) as Promise<Outcome<EncodedFetch>>);
    return { records: decodeBatches(batches), ...rest };
  }

  offsets(tp: TopicPartition): Promise<OffsetRange> {
    return this.call(tp, (s, at) => s.offsets(at) as Promise<Outcome<OffsetRange>>);
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number> {
    return this.call(tp, (s, at) => s.offsetForTimestamp(at, timestamp) as Promise<Outcome<number>>);
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): Promise<OffsetRange> {
    return this.call(tp, (s, at) => s.deleteRecordsBefore(at, offset) as Promise<Outcome<OffsetRange>>);
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<void> {
    return this.call(tp, (s, at) => s.commitOffset(group, at, committed) as Promise<Outcome<void>>);
  }

  committedOffset(group: string, tp: TopicPartition): Promise<CommittedOffset | null> {
    return this.call(tp, (s, at) => s.committedOffset(group, at) as Promise<Outcome<CommittedOffset | null>>);
  }
}
