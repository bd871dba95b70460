/**
 * Processing a task instance's input and committing it (Kafka Streams' `StreamTask.process` and
 * its commit). It owns the processor of the instance's current incarnation and the work processed
 * since the last commit (Kafka Streams' uncommitted task state): that work's effects are only in
 * memory — the stores' held writes and record caches, the collector's records, the processor's
 * partition times — until a commit writes all of it in one storage transaction (I2): store rows,
 * outbox batches, input positions, partition times, the skips it passes. Queries read it; a crash
 * or an error loses it, and the input is processed again from the committed positions. Whether
 * to commit, and what an error means, is the executor's (task-executor.ts, uncaught-errors.ts).
 */
import type { Application } from "../application";
import type { RecordOrigin } from "../streams/errors";
import { createTaskProcessor } from "../streams/runtime/task-processor";
import type { InputRecord, TaskEventMetrics, TaskProcessor } from "../streams/runtime/types";
import type { Outbox } from "./outbox";
import type { OutboxSender } from "./outbox-sender";
import { RecordCollector, type InputPositions } from "./record-collector";
import { isSkipped, recordOrigin, remainingSkips } from "./skips";
import type { SqliteStoreBackend } from "./sqlite-stores";
import type { TaskCounters } from "./task-metrics";
import type { TaskOptions } from "./task-options";
import type { TaskMeta, TaskStorage } from "./task-storage";
import { topicPartition } from "../names";

/** How a step commits: at once, or when due (see `TaskExecutor.step`). */
export type CommitMode = "at-once" | "when-due";

/**
 * What a commit did: wrote everything processed since the last commit, or left it for later
 * (`"deferred"`); found the instance no longer RUNNING in the incarnation it fetched for
 * (`"superseded"`); or rolled back on an error, with the input record it stopped at when known.
 */
export type CommitResult = "committed" | "deferred" | "superseded" | { readonly failed: unknown; readonly at?: RecordOrigin };

/** What was processed since the last commit: how far into each input partition, how many records were processed in each, and how many were taken in all. */
export interface UncommittedWork {
  readonly reached: InputPositions;
  readonly processed: Record<string, number>;
  records: number;
}

export interface TaskCommitDeps {
  readonly application: Application;
  readonly storage: TaskStorage;
  readonly stores: SqliteStoreBackend;
  readonly outbox: Outbox;
  readonly sender: OutboxSender;
  readonly counters: TaskCounters;
  readonly options: Pick<TaskOptions, "clock" | "cacheMaxBytes" | "maxBatchRecords">;
  readonly now: () => number;
}

/** The processor of the current incarnation, its collector, and the event counts already added to `counters`. */
interface ActiveProcessor {
  readonly incarnation: number;
  readonly processor: TaskProcessor;
  readonly collector: RecordCollector;
  reported: TaskEventMetrics;
}

class SupersededDuringFetch extends Error {}

export class TaskCommit {
  private processor: ActiveProcessor | undefined;
  /** Undefined when everything processed is committed. */
  private work: UncommittedWork | undefined;
  /** When the last commit started (its transaction): when the next is due, under load or with work uncommitted. */
  private lastStartedAt = 0;

  constructor(private readonly deps: TaskCommitDeps) {}

  /** What was processed and not committed yet, if anything was. */
  get uncommitted(): Readonly<UncommittedWork> | undefined {
    return this.work;
  }

  get startedAt(): number {
    return this.lastStartedAt;
  }

  /** The processor of `incarnation`, if it is made (the first step of a RUNNING instance makes it). */
  processorOf(incarnation: number): TaskProcessor | undefined {
    return this.processor?.incarnation === incarnation ? this.processor.processor : undefined;
  }

  /** The running processor's record cache, through which queries read what was processed, committed or not. */
  recordCache() {
    return this.processor?.processor.recordCache;
  }

  metrics() {
    return this.processor?.processor.metrics;
  }

  /**
   * Processes `records`, then the wall-clock punctuators due at `now`, and commits, in one storage
   * transaction (I2): the store writes, outbox batches and input positions of everything processed
   * since the last commit. With `"when-due"` the commit is left for later (see `uncommitted`) —
   * unless the transaction had to write store rows (a range read over many held writes), which it
   * then commits with everything they depend on, or the work has grown to a batch. On an error
   * everything since the last commit is dropped, and the processor with it.
   */
  commit(meta: TaskMeta, records: readonly InputRecord[], now: number, mode: CommitMode): CommitResult {
    const { storage, stores, sender } = this.deps;
    let active: ActiveProcessor | undefined;
    let work: UncommittedWork | undefined;
    let deferred = false;
    /** The record being processed, for a failure that does not name one. */
    let inHand: InputRecord | undefined;
    // What the log and the group acknowledged since the last commit is written down by this one (no storage commit of its own).
    const owed = sender.owed();
    const flushes = stores.flushes;
    try {
      storage.transaction(() => {
        const current = storage.meta();
        if (!current || current.state !== "RUNNING" || current.incarnation !== meta.incarnation) throw new SupersededDuringFetch();
        // Created in the transaction: what `init` writes or forwards commits with the rest.
        active = this.activeProcessor(meta.incarnation);
        work = this.work ??= { reached: {}, processed: {}, records: 0 };
        const skips = current.skips ?? [];
        // Records come by partition, in runs: a run's key is made once, not per record.
        let key = "";
        let keyOf: InputRecord | undefined;
        for (const record of records) {
          if (keyOf === undefined || record.partition !== keyOf.partition || record.topic !== keyOf.topic) {
            key = topicPartition(record);
            keyOf = record;
          }
          // A record an operator skipped is passed over: never processed (its partition moves past it all the same).
          if (skips.length === 0 || !isSkipped(skips, record)) {
            inHand = record;
            active.processor.process(record);
            work.processed[key] = (work.processed[key] ?? 0) + 1;
          }
          work.reached[key] = record.offset + 1;
        }
        inHand = undefined;
        work.records += records.length;
        if ((active.processor.nextWallClockPunctuationMs() ?? Infinity) <= now) active.processor.punctuate(now);
        if (mode === "when-due" && stores.flushes === flushes && work.records < (this.deps.options.maxBatchRecords ?? 1000)) {
          deferred = true;
          return;
        }
        sender.writeOwed(owed);
        // The record cache first (Kafka's commit does too): what this commit checkpoints is what it flushed (I1).
        active.processor.flush();
        const written = active.collector.writeTo(this.deps.outbox, current.nextCommit);
        stores.flushWrites();
        // The processed counts ride on the positions (all of it is the book's one row: task-book.ts).
        storage.writePositions(work.reached, work.processed);
        // Partition time commits with the positions, as Kafka commits it with the offsets.
        storage.writePartitionTimes(active.processor.partition, active.processor.partitionTimes());
        // A skip leaves with the commit that passes its record (in the meta, changed only then).
        const skipsLeft = skips.length === 0 ? skips : remainingSkips(skips, storage.positions());
        if (written > 0 || skipsLeft.length !== skips.length)
          storage.writeMeta({ ...current, nextCommit: current.nextCommit + (written > 0 ? 1 : 0), skips: skipsLeft });
      });
    } catch (error) {
      // Everything since the last commit is rolled back or dropped; the processor may hold half-done state: rebuild it.
      this.dropProcessor();
      if (error instanceof SupersededDuringFetch) return "superseded";
      return { failed: error, at: recordOrigin(error) ?? inHand };
    }
    if (deferred) return "deferred";
    this.work = undefined;
    sender.forgetOwed(owed);
    this.deps.counters.events(active!.processor.eventMetrics, active!.reported);
    active!.reported = active!.processor.eventMetrics;
    if (work!.records > 0) this.deps.counters.committed(sumOf(work!.processed), this.deps.now() - now);
    this.lastStartedAt = now;
    return "committed";
  }

  private activeProcessor(incarnation: number): ActiveProcessor {
    if (this.processor && this.processor.incarnation === incarnation) return this.processor;
    this.dropProcessor();
    const { application: app, storage, stores, options } = this.deps;
    const meta = storage.meta()!;
    const partitions = (topic: string) => app.catalog.partitions(topic);
    const changelogs = new Set(app.changelogPartitions(meta.taskId).map((tp) => tp.topic));
    const collector = new RecordCollector(partitions, changelogs);
    const processor = createTaskProcessor(app.topology, meta.taskId, {
      stores,
      collector,
      clock: options.clock,
      initialPartitionTimes: storage.partitionTimes(),
      cacheMaxBytes: options.cacheMaxBytes,
    });
    this.processor = { incarnation, processor, collector, reported: processor.eventMetrics };
    return this.processor;
  }

  /** Drops what was processed and not committed, if anything was: the stores' held writes, and the processor with its record caches and collector. */
  dropUncommitted(): void {
    if (this.work) this.dropProcessor();
  }

  /** Drops the processor, and with it whatever was processed and not committed (see `uncommitted`). */
  dropProcessor(): void {
    if (this.work) {
      this.work = undefined;
      this.deps.stores.forget();
    }
    if (!this.processor) return;
    this.processor.collector.discard();
    try {
      this.processor.processor.close();
    } finally {
      this.processor = undefined;
    }
  }
}

function sumOf(counts: Readonly<Record<string, number>>): number {
  let sum = 0;
  for (const n of Object.values(counts)) sum += n;
  return sum;
}
