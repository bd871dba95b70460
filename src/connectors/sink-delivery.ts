/**
 * The delivery of one partition of a topic to one sink (docs/connectors.md#sinks): read from the
 * sink's position, cut a batch within the sink's limits, deliver it, then commit the position past
 * it — deliver first, commit after, so a crash between the two delivers the batch again (at least
 * once, every record with the same id). The position is the committed offset of the group
 * `edge-streams.sink.<name>` in the partition itself, and that row's metadata carries the
 * sink's counters (delivered, failures, dead letters, the last error): one row, updated per
 * delivered batch and per failure, no table of its own.
 *
 * A retryable failure keeps the batch and backs off exponentially (`retry`); a batch the sink
 * refuses is tried again record by record, and a record refused alone — or too large for the sink
 * — goes to the dead-letter topic (Kafka's dead letter, with the record's topic, partition and
 * offset) and the position moves past it: a bad record never wedges the partition. Records that
 * retention removed before they were delivered are skipped and counted (lost to the sink).
 */
import { OffsetOutOfRange } from "../log/errors";
import type { CommittedOffset, FetchResult, ProducerRecord, TopicPartition } from "../log/types";
import { sinkGroup } from "../names";
import { messageOf } from "../streams/errors";
import { deadLetterRecord } from "../streams/runtime/dead-letter";
import { backoffDelay } from "../util/backoff";
import { logEvent } from "../util/logging";
import { type Sink, type SinkRecord, sinkRecord } from "./sink";

/** What a delivery needs of the partition it runs in (the log partition's own store, and its way to the dead-letter topic). */
export interface SinkPartition {
  readonly tp: TopicPartition;
  offsets(): { readonly earliest: number; readonly latest: number };
  fetch(offset: number, bounds: { maxRecords: number; maxBytes: number }): FetchResult;
  committed(group: string): CommittedOffset | null;
  commit(group: string, offset: number, metadata: string): void;
  /** Appends a dead letter to `topic` (durable when it resolves). */
  deadLetter(topic: string, record: ProducerRecord): Promise<void>;
  /** A crash point between a delivery and its commit (tests). */
  delivered(): Promise<void>;
}

/** The counters a sink keeps per partition (in its committed offset's metadata). */
export interface SinkCounters {
  /** Records delivered (each counted once per delivery: a redelivery after a crash counts again). */
  readonly delivered: number;
  /** Failed deliveries (every attempt), and how many in a row until the last success. */
  readonly failures: number;
  readonly consecutiveFailures: number;
  /** Records sent to the dead-letter topic; records dropped (no dead-letter topic, or it could not take them); records retention removed before delivery. */
  readonly deadLettered: number;
  readonly dropped: number;
  readonly skipped: number;
  readonly lastError: string | null;
  readonly lastErrorAt: number | null;
}

/** A sink's state in a partition, for `/sinks` and `/metrics`. */
export interface SinkPartitionStatus extends SinkCounters {
  readonly sink: string;
  readonly kind: string;
  readonly target: string;
  readonly topic: string;
  readonly partition: number;
  /** The next offset to deliver; the partition's end; records between them. */
  readonly position: number;
  readonly end: number;
  readonly lag: number;
  /** When a failing delivery is tried next (ms since the epoch); null when none is failing. */
  readonly nextAttemptAt: number | null;
}

const ZERO: SinkCounters = { delivered: 0, failures: 0, consecutiveFailures: 0, deadLettered: 0, dropped: 0, skipped: 0, lastError: null, lastErrorAt: null };
/** The header a sink's dead letter names it by. */
export const SINK_HEADER = "edge-streams.sink";

export interface SinkDeliveryOptions {
  readonly name: string;
  readonly sink: Sink;
  readonly deadLetterTopic: string | undefined;
  readonly retry: { readonly initialMs: number; readonly maxMs: number };
}

export class SinkDelivery {
  private readonly group: string;
  private counters: SinkCounters | undefined;
  /** Records up to this offset go one at a time (a batch with them was refused). In memory: after a restart the batch is tried whole first. */
  private singleUntil = -1;

  constructor(
    private readonly options: SinkDeliveryOptions,
    private readonly partition: SinkPartition,
  ) {
    this.group = sinkGroup(options.name);
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * Delivers until caught up, a failure, or `deadline`; the time it wants to run next: a retry's
   * (back-off), now (more to deliver), or undefined (caught up).
   */
  async run(now: number, deadline: number): Promise<number | undefined> {
    const retryAt = this.nextAttemptAt();
    if (retryAt !== null && retryAt > now) return retryAt;
    const { sink } = this.options;
    for (;;) {
      const { earliest, latest } = this.partition.offsets();
      let position = this.position();
      if (position < earliest) {
        logEvent("sink.records-skipped", { sink: this.name, ...this.partition.tp, from: position, to: earliest }, "error");
        this.save(earliest, { skipped: this.read().skipped + (earliest - position) });
        position = earliest;
      }
      if (position >= latest) return undefined;
      if (Date.now() >= deadline) return Date.now();
      const fetched = this.fetch(position);
      const records = fetched.records.map((record) => sinkRecord(this.partition.tp, record));
      // Compaction may have left nothing in between: move past the gap.
      if (records.length === 0) {
        this.save(Math.max(position, fetched.nextOffset), {});
        continue;
      }
      const { batch, tooLarge } = this.cut(records);
      if (tooLarge) {
        const bytes = sink.recordBytes(tooLarge);
        if (
          !(await this.deadLetter(
            tooLarge,
            new RangeError(`${tooLarge.id} is ${bytes} bytes: the ${sink.kind} sink takes at most ${sink.limits.maxRecordBytes}`),
          ))
        ) {
          return this.nextAttemptAt()!;
        }
        continue;
      }
      const attempt = batch[0]!.offset <= this.singleUntil ? batch.slice(0, 1) : batch;
      const outcome = await sink.deliver(attempt);
      const last = attempt[attempt.length - 1]!;
      if (outcome.ok) {
        await this.partition.delivered();
        const counters = this.read();
        this.save(last.offset + 1, { delivered: counters.delivered + attempt.length, consecutiveFailures: 0 });
        continue;
      }
      if (outcome.retryable) return this.failed(position, outcome.error);
      if (attempt.length > 1) {
        // Refused as a batch: find the record it is refused for, one at a time.
        this.singleUntil = last.offset;
        continue;
      }
      if (!(await this.deadLetter(attempt[0]!, new Error(outcome.error)))) return this.nextAttemptAt()!;
    }
  }

  /** The sink's state here now. */
  status(): SinkPartitionStatus {
    const { latest } = this.partition.offsets();
    const position = this.position();
    const { sink } = this.options;
    return {
      sink: this.name,
      kind: sink.kind,
      target: sink.target,
      ...this.partition.tp,
      position,
      end: latest,
      lag: Math.max(0, latest - position),
      ...this.read(),
      nextAttemptAt: this.nextAttemptAt(),
    };
  }

  /** When the alarm must run for this sink: undefined when caught up. */
  dueAt(now: number): number | undefined {
    if (this.position() >= this.partition.offsets().latest) return undefined;
    return Math.max(now, this.nextAttemptAt() ?? now);
  }

  private nextAttemptAt(): number | null {
    const { consecutiveFailures, lastErrorAt } = this.read();
    if (consecutiveFailures === 0 || lastErrorAt === null) return null;
    return lastErrorAt + backoffDelay(this.options.retry.initialMs, this.options.retry.maxMs, consecutiveFailures - 1);
  }

  private fetch(position: number): FetchResult {
    const { maxRecords, maxBatchBytes } = this.options.sink.limits;
    try {
      return this.partition.fetch(position, { maxRecords, maxBytes: maxBatchBytes });
    } catch (error) {
      // Retention ran between the offsets and the fetch: the next round skips what it removed.
      if (error instanceof OffsetOutOfRange) return { records: [], nextOffset: position, earliest: position, latest: position };
      throw error;
    }
  }

  /** The longest prefix within the sink's limits; or the first record alone, when it is too large for any batch. */
  private cut(records: readonly SinkRecord[]): { batch: SinkRecord[]; tooLarge?: SinkRecord } {
    const { sink } = this.options;
    const batch: SinkRecord[] = [];
    let bytes = 0;
    for (const record of records) {
      const size = sink.recordBytes(record);
      if (size > sink.limits.maxRecordBytes || size > sink.limits.maxBatchBytes) return batch.length === 0 ? { batch, tooLarge: record } : { batch };
      if (batch.length >= sink.limits.maxRecords || bytes + size > sink.limits.maxBatchBytes) break;
      batch.push(record);
      bytes += size;
    }
    return { batch };
  }

  /** The record to the dead-letter topic, the position past it; false when the dead-letter topic could not take it (retried). */
  private async deadLetter(record: SinkRecord, error: Error): Promise<boolean> {
    const topic = this.options.deadLetterTopic;
    const counters = this.read();
    const fields = { sink: this.name, record: record.id, error: error.message };
    if (topic === undefined) {
      logEvent("sink.record-dropped", { ...fields, reason: "no dead-letter topic" }, "error");
      this.save(record.offset + 1, { dropped: counters.dropped + 1 });
      return true;
    }
    let letter: ProducerRecord;
    try {
      const context = {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        headers: [...record.headers, { key: SINK_HEADER, value: this.name }],
        processorNodeId: null,
        taskId: "",
        timestamp: record.timestamp,
        sourceRawKey: record.key,
        sourceRawValue: record.value,
      };
      const built = deadLetterRecord(topic, context, record.key, record.value, error);
      letter = { key: built.key, value: built.value ?? "", timestamp: built.timestamp, headers: [...built.headers] };
    } catch (unwritable) {
      logEvent("sink.record-dropped", { ...fields, reason: messageOf(unwritable) }, "error");
      this.save(record.offset + 1, { dropped: counters.dropped + 1 });
      return true;
    }
    try {
      await this.partition.deadLetter(topic, letter);
    } catch (failed) {
      this.failed(record.offset, `dead-letter topic ${topic}: ${messageOf(failed)}`);
      return false;
    }
    logEvent("sink.dead-lettered", { ...fields, topic }, "warn");
    this.save(record.offset + 1, { deadLettered: counters.deadLettered + 1 });
    return true;
  }

  private failed(position: number, error: string): number {
    const counters = this.read();
    logEvent("sink.delivery-failed", { sink: this.name, ...this.partition.tp, position, failures: counters.consecutiveFailures + 1, error }, "warn");
    this.save(position, {
      failures: counters.failures + 1,
      consecutiveFailures: counters.consecutiveFailures + 1,
      lastError: error.slice(0, 500),
      lastErrorAt: Date.now(),
    });
    return this.nextAttemptAt()!;
  }

  private position(): number {
    this.read();
    return this.partition.committed(this.group)?.offset ?? this.partition.offsets().earliest;
  }

  private read(): SinkCounters {
    if (this.counters) return this.counters;
    const metadata = this.partition.committed(this.group)?.metadata;
    let parsed: Partial<SinkCounters> = {};
    try {
      parsed = metadata ? (JSON.parse(metadata) as Partial<SinkCounters>) : {};
    } catch {
      // Someone else's metadata (a commit through /kafka): counters start again.
    }
    this.counters = { ...ZERO, ...parsed };
    return this.counters;
  }

  /** Commits `position` with the counters changed by `change`: one row. */
  private save(position: number, change: Partial<SinkCounters>): void {
    const counters = { ...this.read(), ...change };
    this.partition.commit(this.group, position, JSON.stringify(counters));
    this.counters = counters;
  }
}
