/**
 * The sinks of one log partition (docs/connectors.md#where-delivery-runs): every sink of the
 * partition's topic, each delivered by its own `SinkDelivery`, all from the partition's alarm —
 * run side by side, so a slow or failing sink holds back neither the others nor the partition's
 * appends (they go on while the alarm awaits). The Durable Object only wires this to its alarm.
 */
import type { CommittedOffset, FetchBounds, FetchResult, OffsetRange, ProducerRecord, TopicPartition } from "../log/types";
import { logEvent } from "../util/logging";
import type { Sink } from "./sink";
import { SinkDelivery, type SinkPartition, type SinkPartitionStatus } from "./sink-delivery";

/** A sink of a topic as the partition runs it. */
/** Where a sink's delivery can be made to crash (tests): after a batch was delivered, before its position is committed. */
export type SinkCrashPoint = "sink:after-delivery";

export interface PartitionSink {
  readonly name: string;
  readonly sink: Sink;
  readonly deadLetterTopic: string | undefined;
  readonly retry: { readonly initialMs: number; readonly maxMs: number };
}

/** How long one alarm delivers at most (then it arms itself again at once). */
export const SINK_RUN_BUDGET_MS = 15_000;
/** After a sink's delivery threw (a bug, a storage error), the next try waits this long. */
const SINK_ERROR_RETRY_MS = 30_000;

/** The calls of a log partition's own store a delivery reads and commits through (PartitionStore). */
export interface SinkStore {
  offsets(tp: TopicPartition): OffsetRange;
  fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): FetchResult;
  committedOffset(group: string, tp: TopicPartition): CommittedOffset | null;
  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): void;
}

/** A partition as its deliveries see it: its store, the way to the dead-letter topics, and the crash point after a delivery. */
export function sinkPartition(
  store: SinkStore,
  tp: TopicPartition,
  deadLetter: (topic: string, record: ProducerRecord) => Promise<void>,
  delivered: () => Promise<void>,
): SinkPartition {
  return {
    tp,
    offsets: () => store.offsets(tp),
    fetch: (offset, bounds) => store.fetch(tp, offset, bounds),
    committed: (group) => store.committedOffset(group, tp),
    commit: (group, offset, metadata) => store.commitOffset(group, tp, { offset, metadata }),
    deadLetter,
    delivered,
  };
}

export class PartitionSinks {
  private deliveries: SinkDelivery[] | undefined;

  constructor(
    /** The sinks of a topic (built once per partition, from the Worker's environment). */
    private readonly sinksOf: (topic: string) => readonly PartitionSink[],
    private readonly partition: (topic: string, partition: number) => SinkPartition,
  ) {}

  /** Whether any sink delivers `topic`. */
  delivers(topic: string): boolean {
    return this.sinksOf(topic).length > 0;
  }

  private of(topic: string, partition: number): SinkDelivery[] {
    if (!this.deliveries) {
      const at = this.partition(topic, partition);
      this.deliveries = this.sinksOf(topic).map((sink) => new SinkDelivery(sink, at));
    }
    return this.deliveries;
  }

  /** Delivers what each sink has to, side by side; when to run next (undefined: all caught up). */
  async run(topic: string, partition: number, now: number): Promise<number | undefined> {
    const deadline = now + SINK_RUN_BUDGET_MS;
    const next = await Promise.all(
      this.of(topic, partition).map((delivery) =>
        delivery.run(now, deadline).catch((error: unknown) => {
          logEvent("sink.run-failed", { sink: delivery.name, topic, partition, error: String(error) }, "error");
          return Date.now() + SINK_ERROR_RETRY_MS;
        }),
      ),
    );
    return earliest(next);
  }

  /** When the alarm must run for the sinks (undefined: all caught up). */
  dueAt(topic: string, partition: number, now: number): number | undefined {
    return earliest(this.of(topic, partition).map((delivery) => delivery.dueAt(now)));
  }

  status(topic: string, partition: number, sink?: string): SinkPartitionStatus[] {
    return this.of(topic, partition)
      .filter((delivery) => sink === undefined || delivery.name === sink)
      .map((delivery) => delivery.status());
  }
}

function earliest(times: readonly (number | undefined)[]): number | undefined {
  const known = times.filter((t): t is number => t !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}
