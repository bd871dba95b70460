/**
 * The embedded log: each topic-partition is a `LogPartition` Durable Object named
 * `<topic>/<partition>`. Errors come back from the objects as values and are rethrown here typed.
 */
import type { LogPartition } from "../../durable-objects/log-partition";
import { LogUnavailable, unwrap, type Outcome } from "./errors";
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

  /** Calls a partition; a failed call (the object unreachable, reset or overloaded) is `LogUnavailable`. */
  private async call<T>(tp: TopicPartition, fn: (stub: DurableObjectStub<LogPartition>) => Promise<Outcome<T>>): Promise<T> {
    const stub = this.partition(tp);
    let result: Outcome<T>;
    try {
      result = await fn(stub);
    } catch (error) {
      throw new LogUnavailable(`${partitionName(tp)}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return unwrap(result);
  }

  async topics(): Promise<ReadonlyMap<string, number>> {
    return this.catalog.all;
  }

  append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): Promise<AppendResult> {
    return this.call(tp, (s) => s.append(tp, [...records], producer) as Promise<Outcome<AppendResult>>);
  }

  fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<FetchResult> {
    return this.call(tp, (s) => s.read(tp, offset, bounds) as Promise<Outcome<FetchResult>>);
  }

  offsets(tp: TopicPartition): Promise<OffsetRange> {
    return this.call(tp, (s) => s.offsets(tp) as Promise<Outcome<OffsetRange>>);
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number> {
    return this.call(tp, (s) => s.offsetForTimestamp(tp, timestamp) as Promise<Outcome<number>>);
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): Promise<OffsetRange> {
    return this.call(tp, (s) => s.deleteRecordsBefore(tp, offset) as Promise<Outcome<OffsetRange>>);
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<void> {
    return this.call(tp, (s) => s.commitOffset(group, tp, committed) as Promise<Outcome<void>>);
  }

  committedOffset(group: string, tp: TopicPartition): Promise<CommittedOffset | null> {
    return this.call(tp, (s) => s.committedOffset(group, tp) as Promise<Outcome<CommittedOffset | null>>);
  }
}
