/**
 * `LogPartition`: one partition of one topic of the embedded log. The class only wires storage and
 * RPC to `PartitionStore`; log errors travel back as values because RPC drops error classes.
 */
import { DurableObject } from "cloudflare:workers";
import { LogUnavailable, outcome, type Outcome } from "../src/log/errors";
import { PartitionStore, Subscribers } from "../src/log/partition-store";
import type { EncodedFetch } from "../src/log/record-batch";
import type {
  AppendResult,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
} from "../src/log/types";
import { isRestoreWorkerName } from "../src/names";
import type { ObjectDirectory, PartitionCalls } from "./calls";

/** A partition of the embedded log; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class LogPartition extends DurableObject implements PartitionCalls {
  private readonly store: PartitionStore;
  private readonly subscribers: Subscribers;
  /** Calls still to fail, set by the fault-injection route; kept in memory like a flaky link. */
  private failuresToInject = 0;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly objects: ObjectDirectory,
  ) {
    super(ctx, env as never);
    this.store = new PartitionStore(ctx.storage);
    this.subscribers = new Subscribers(ctx.storage);
  }

  private call<T>(fn: () => T): Outcome<T> {
    return outcome(() => {
      if (this.failuresToInject > 0) {
        this.failuresToInject--;
        throw new LogUnavailable("injected failure: the partition did not answer");
      }
      return fn();
    });
  }

  append(tp: TopicPartition, records: ProducerRecord[], producer?: ProducerId): Outcome<AppendResult> {
    const result = this.call(() => this.store.append(tp, records, producer));
    if (result.ok && !result.value.duplicate) this.wakeSubscribers(tp);
    return result;
  }

  /** `append` of an encoded batch (src/log/record-batch.ts): one string instead of an object per record. */
  appendEncoded(tp: TopicPartition, records: string, producer?: ProducerId): Outcome<AppendResult> {
    const result = this.call(() => this.store.appendEncoded(tp, records, producer));
    if (result.ok && !result.value.duplicate) this.wakeSubscribers(tp);
    return result;
  }

  /** Task instances that read this partition register here to be woken by appends. */
  subscribe(name: string): void {
    this.subscribers.add(name);
  }

  unsubscribe(name: string): void {
    this.subscribers.remove(name);
  }

  /**
   * Wakes every subscriber after the append is acknowledged: task instances reading this
   * partition, and restore workers (`restore@…`) keeping standbys on it. A failed wake-up only
   * delays work.
   */
  private wakeSubscribers(tp: TopicPartition): void {
    const names = this.subscribers.list();
    if (names.length === 0) return;
    this.ctx.waitUntil(
      Promise.allSettled(names.map((name) => (isRestoreWorkerName(name) ? this.objects.restoreWorker(name).wake(tp) : this.objects.taskObject(name).wake()))),
    );
  }

  read(tp: TopicPartition, offset: number, bounds: FetchBounds): Outcome<FetchResult> {
    return this.call(() => this.store.fetch(tp, offset, bounds));
  }

  /** `read`, encoded: stored batches as they are, decoded by the caller (`DurableLog`). */
  readEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): Outcome<EncodedFetch> {
    return this.call(() => this.store.fetchEncoded(tp, offset, bounds));
  }

  offsets(tp: TopicPartition): Outcome<OffsetRange> {
    return this.call(() => this.store.offsets(tp));
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): Outcome<number> {
    return this.call(() => this.store.offsetForTimestamp(tp, timestamp));
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): Outcome<OffsetRange> {
    return this.call(() => this.store.deleteRecordsBefore(tp, offset));
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Outcome<void> {
    return this.call(() => this.store.commitOffset(group, tp, committed));
  }

  committedOffset(group: string, tp: TopicPartition): Outcome<CommittedOffset | null> {
    return this.call(() => this.store.committedOffset(group, tp));
  }

  /** Fault injection: the next `times` calls fail as an unreachable partition would. */
  injectFailures(times: number): void {
    this.failuresToInject = Math.max(0, Math.floor(times));
  }
}
