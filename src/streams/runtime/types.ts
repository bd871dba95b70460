/**
 * What a task processor consumes, produces and depends on. Keys and values cross this boundary
 * serialized; everything is synchronous so one call can run inside one storage transaction.
 */
import type { Header } from "../record";
import type { StoreBackend } from "../state/key-value-store";
import type { RecordCache } from "../state/record-cache";

/** A record read from one of the task's source topics (external or repartition). */
export interface InputRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  /** Null only for a tombstone (a topology can write them, for example from a filtered table). */
  readonly value: string | null;
  readonly timestamp: number;
  readonly headers: readonly Header[];
}

/** A record the task produces: output, repartition, changelog or dead-letter. */
export interface OutgoingRecord {
  readonly topic: string;
  /** Undefined: the collector picks it with Kafka's default partitioner on the key. */
  readonly partition?: number;
  readonly key: string | null;
  /** Null is a tombstone (a deleted store entry, a deleted table row). */
  readonly value: string | null;
  readonly timestamp: number;
  readonly headers: readonly Header[];
}

/** The task's record collector. `send` must only buffer: it runs inside the processing transaction. */
export interface RecordSink {
  send(record: OutgoingRecord): void;
}

export interface TaskProcessorDeps {
  /** The task instance's stores; every write through the runtime is also sent to the changelog. */
  readonly stores: StoreBackend;
  readonly collector: RecordSink;
  /** Stream time to resume from (the largest timestamp processed before); default -1, none yet. */
  readonly initialStreamTimeMs?: number;
  /**
   * Partition time to resume from, per source topic (the largest timestamp extracted from the
   * task's partition of it): what the task committed before (Kafka keeps it in the committed
   * offset's metadata). Stream time resumes from the largest of them too.
   */
  readonly initialPartitionTimes?: Readonly<Record<string, number>>;
  /**
   * The byte budget of the task's record cache, shared by its cached stores (Kafka's
   * `statestore.cache.max.bytes`; default 10 MiB). 0 sends every update on at once, as if uncached.
   */
  readonly cacheMaxBytes?: number;
  /** Wall-clock time: for store writes made outside `process` (in `init`) and wall-clock schedules; default `Date.now`. */
  readonly clock?: () => number;
}

/** Counters of one task processor; they start at zero with each instance. */
export interface TaskMetrics {
  /** Input records deserialized and run through the topology. */
  readonly processedRecords: number;
  /** Input records that could not be deserialized and were skipped (`"continue"` without a dead letter topic). */
  readonly skippedRecords: number;
  /** Input records that could not be deserialized and went to a dead letter topic. */
  readonly deadLetteredRecords: number;
  /** Records an operator discarded as invalid, such as a null key reaching an aggregation. */
  readonly droppedRecords: number;
}

/**
 * Counters added with windows, punctuation and error handlers. They are kept apart from
 * `TaskMetrics` so that its shape, which its consumers compare whole, stays as it was.
 */
export interface TaskEventMetrics {
  /**
   * Records that came after a window they belong to had closed (stream time past its end + grace)
   * and were dropped from it by windowed aggregations: once per window, as Kafka counts them.
   */
  readonly lateRecordsDropped: number;
  /** Input records that could not be deserialized and were skipped (`"continue"` without a dead letter topic). */
  readonly skippedRecords: number;
  /** Input records that could not be deserialized and went to a dead letter topic. */
  readonly deserializationErrorsDeadLettered: number;
  /** Records an operator discarded as invalid, such as a null key reaching an aggregation or a table. */
  readonly invalidRecordsDropped: number;
  /** Processing errors (`onProcessingError: "continue"`) after which processing went on. */
  readonly processingErrorsContinued: number;
  /** Processing errors whose input record went to the dead letter topic. */
  readonly processingErrorsDeadLettered: number;
  /** Output records that could not be produced (or that the log refused) and were dropped (`onProductionError: "continue"`). */
  readonly productionErrorsContinued: number;
  /** Output records that could not be produced; their input record (or, refused by the log, the record) went to a dead letter topic. */
  readonly productionErrorsDeadLettered: number;
  /** Punctuator calls, stream-time and wall-clock. */
  readonly punctuations: number;
}

/** Kafka's dropped-records: every record skipped or dropped, whatever the reason (a dead-lettered one too, as Kafka counts it). */
export function droppedRecords(events: TaskEventMetrics): number {
  const handled =
    events.skippedRecords +
    events.deserializationErrorsDeadLettered +
    events.processingErrorsContinued +
    events.processingErrorsDeadLettered +
    events.productionErrorsContinued +
    events.productionErrorsDeadLettered;
  return handled + events.invalidRecordsDropped + events.lateRecordsDropped;
}

/** Event counts at zero, as a new task starts (a fresh object each call: callers count in it). */
export function noEvents(): { -readonly [K in keyof TaskEventMetrics]: number } {
  return {
    lateRecordsDropped: 0,
    skippedRecords: 0,
    deserializationErrorsDeadLettered: 0,
    invalidRecordsDropped: 0,
    processingErrorsContinued: 0,
    processingErrorsDeadLettered: 0,
    productionErrorsContinued: 0,
    productionErrorsDeadLettered: 0,
    punctuations: 0,
  };
}

/** Reads of a record cache by store: a key's entry (a deletion is a `null` value), and the entries in a range, in key order. */
export type CacheReads = Pick<RecordCache<unknown>, "get" | "range">;

export interface TaskProcessor {
  readonly taskId: string;
  readonly subtopology: number;
  readonly partition: number;
  /** The topics whose partition `partition` this task reads. */
  readonly sourceTopics: readonly string[];
  /** Global tables' topics: the task reads every partition of them. */
  readonly globalSourceTopics: readonly string[];
  readonly metrics: TaskMetrics;
  readonly eventMetrics: TaskEventMetrics;
  /** The largest timestamp of the input records processed; -1 before the first. */
  readonly streamTimeMs: number;
  /**
   * Per source topic, the largest timestamp extracted from the task's partition of it (Kafka's
   * partition time): to commit with the input positions, and resume from (`initialPartitionTimes`).
   */
  partitionTimes(): Readonly<Record<string, number>>;
  /**
   * Runs one input record through the topology: store writes (each change-logged) and output
   * records are done when it returns. Not atomic by itself: if it throws, the caller must discard
   * everything the call did, by running it in a storage transaction that also holds the
   * collector's buffer.
   */
  process(record: InputRecord): void;
  /**
   * Runs the wall-clock punctuators due at `nowMs`. Like `process`, its store writes and output
   * records are done when it returns, and the caller runs it in a storage transaction.
   */
  punctuate(nowMs: number): void;
  /**
   * Flushes the record cache (Kafka's first step of a commit): every cached store's dirty keys are
   * written to the store and its changelog and forwarded downstream, each as of its last update;
   * then the rows a store logs once per commit are sent (see `ChangelogRows.writeAtCommit`).
   * The caller runs it in the commit's transaction, after the last `process`/`punctuate` and before
   * taking the collector's records, so what the commit checkpoints is what was flushed.
   */
  flush(): void;
  /**
   * The record cache's entries of a cached store, for interactive queries, which read through
   * the cache as Kafka's do: what the task processed since its last flush (or read since).
   */
  readonly recordCache: CacheReads;
  /**
   * When the earliest wall-clock punctuator is due, undefined when none is scheduled: the time to
   * arm the task's one alarm for (it may change after `process` and `punctuate`).
   */
  nextWallClockPunctuationMs(): number | undefined;
  /** Closes the processors; the task processor cannot be used afterwards. */
  close(): void;
}
