/**
 * One stream task instance: its lifecycle, processing and commits. It owns the instance's storage
 * (stores, checkpoints, input positions, outbox) and is driven by its Durable Object: `step()`
 * does one unit of work. A commit is one storage transaction (I2); the outbox is then sent through
 * the log's idempotent, fenced producer, so a crash at any point repeats no record and loses none.
 */
import type { Application } from "../application";
import { LogUnavailable, OffsetOutOfRange, ProducerFenced, RecordTooLarge } from "../log/errors";
import type { AppendResult, Log, LogRecord, ProducerId, TopicPartition } from "../log/types";
import { createTaskProcessor } from "../streams/runtime/task-processor";
import { fetchSessions } from "../streams/state/session-store";
import { fetchWindows } from "../streams/state/window-store";
import type { WindowedValue } from "../streams/windowed";
import type { InputRecord, TaskEventMetrics, TaskProcessor } from "../streams/runtime/types";
import { positionFromHeaders } from "../streams/runtime/position-header";
import { NotAssigned } from "./not-assigned";
import { canApplyRestoreBatch, checkpointAfterAck, type RestoredBatch } from "./checkpoint";
import { CHANGELOG_PHASE, Outbox, type OutboxBatch } from "./outbox";
import { positionKey, RecordCollector, TOMBSTONE_HEADER, type InputPositions } from "./record-collector";
import { DEFAULT_CACHE_LIMITS, SqliteStoreBackend } from "./sqlite-stores";
import { transition, type TaskRole, type TaskState } from "./state";
import { TaskStorage, type StorageLike, type TaskMeta } from "./task-storage";
import { TaskCounters } from "./task-metrics";
import { RetryBackoff, type BackoffSettings } from "./retry-backoff";
import { compareKeys } from "../streams/state/key-value-store";
import type { KeyValue } from "../streams/record";

/** An assignment from the coordinator: which task, where, in which role and epoch. */
export interface Assignment {
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  readonly epoch: number;
  /** The application is shut down (an uncaught error's `"shutdown-application"`): the instance starts stopped, with this reason. */
  readonly halted?: string;
}

/** Points of a commit where tests (and the crash fault route) can kill the instance. */
export type CommitStep = "before-commit" | "after-commit" | "mid-send" | "after-send";

export const COMMIT_STEPS: readonly CommitStep[] = ["before-commit", "after-commit", "mid-send", "after-send"];

/**
 * Points between the awaits of the instance's lifecycle operations where tests can kill it: each
 * operation must converge from every one of them without outside help (the object's alarm
 * reconciles what the outside knows with its durable state).
 */
export type LifecycleStep =
  /** The assignment is durable; input subscriptions and the restore registration are not made yet. */
  | "assign:after-meta"
  /** Revoked (idle) durably; still subscribed to its input and registered for restoration. */
  | "revoke:after-suspend"
  /** The outbox is delivered before a wipe; nothing is wiped yet. */
  | "corrupt:after-deliver"
  /** Wiped and revived as a new incarnation; not yet registered with the restore worker. */
  | "corrupt:after-wipe"
  /** Subscriptions match the assignment; the restore registration does not yet. */
  | "sync:after-subscriptions"
  /** Restored and RUNNING durably; still registered with the restore worker, no processing scheduled. */
  | "restore:after-running";

export const LIFECYCLE_STEPS: readonly LifecycleStep[] = [
  "assign:after-meta",
  "revoke:after-suspend",
  "corrupt:after-deliver",
  "corrupt:after-wipe",
  "sync:after-subscriptions",
  "restore:after-running",
];

export interface TaskOptions {
  readonly application: Application;
  readonly log: Log;
  readonly storage: StorageLike;
  /** Most input records per partition per commit (default 1000). */
  readonly maxBatchRecords?: number;
  /**
   * Most input records per partition per commit under load (default 5000): once a commit found at
   * least `maxBatchRecords` records waiting, the next ones may take up to this many.
   */
  readonly maxLoadedBatchRecords?: number;
  readonly maxBatchBytes?: number;
  readonly clock?: () => number;
  /** The back-off of the `"retry"` uncaught-error policy (default 1 s doubling up to 60 s). */
  readonly retryBackoff?: BackoffSettings;
  /**
   * Told when input was gone below the task's position (retention deleted it) and the task
   * resumed at the earliest offset kept (Kafka's auto.offset.reset=earliest): records were lost.
   */
  readonly onInputReset?: (tp: TopicPartition, from: number, to: number) => void;
  /**
   * Called at each commit step, once what the steps before wrote is durable when it returns a
   * promise; a test hook that may crash the instance there.
   */
  readonly onCommitStep?: (step: CommitStep) => void | Promise<void>;
}

/**
 * What a step found: `more` input may be waiting; `idle` none; `blocked` the instance is stopped
 * by a failure; `waiting` it is backing off after an uncaught error it will retry (`wakeAt`).
 */
export type StepOutcome = "more" | "idle" | "blocked" | "waiting";

/** Changelog records read by the restore worker for one changelog partition of an instance. */
export interface RestoreBatch extends RestoredBatch, TopicPartition {
  /** The assignment epoch the batch was read for; a batch for another assignment is a no-op (I3). */
  readonly epoch?: number;
  readonly records: readonly LogRecord[];
  /** The changelog's end offset when the batch was read. */
  readonly end: number;
}

/** What the instance says after a restore batch: the restore worker's only source of positions. */
export interface RestoreReply {
  readonly applied: boolean;
  readonly incarnation: number;
  /** The instance's assignment epoch now: another than the batch's means its registration is over. */
  readonly epoch: number;
  readonly role: TaskRole;
  readonly state: TaskState;
  /** Where this changelog's restoration stands now (null: nothing restored since the last wipe). */
  readonly checkpoint: number | null;
  /** The batch brought this changelog to the end it was read against. */
  readonly caughtUp: boolean;
}

export class StaleAssignment extends Error {
  override name = "StaleAssignment";
}

/** How the reason of an instance stopped by an application shutdown begins. */
export const APPLICATION_SHUT_DOWN = "application shut down";

/** Incarnations per epoch in the producer epoch: epoch * this + incarnation stays monotonic. */
const INCARNATIONS_PER_EPOCH = 1_000_000;

export class StreamTask {
  private readonly storage: TaskStorage;
  private readonly outbox: Outbox;
  private readonly stores: SqliteStoreBackend;
  private processor: ActiveProcessor | undefined;
  /** Between the attempts of the `"retry"` uncaught-error policy. */
  private readonly backoff: RetryBackoff;
  /** Records processed, restored and applied as a standby, and commit latency (in memory). */
  readonly counters: TaskCounters;
  /** When the commit now in progress started (its transaction), for its latency. */
  private commitStartedAt = 0;
  /** How much input the last step found; see `loaded` and `backlog`. */
  private pace = { loaded: false, backlog: false };

  constructor(private readonly options: TaskOptions) {
    this.counters = new TaskCounters(options.clock);
    this.backoff = new RetryBackoff(options.retryBackoff);
    this.storage = new TaskStorage(options.storage);
    this.outbox = new Outbox(this.storage.db);
    this.stores = new SqliteStoreBackend(this.storage.db, DEFAULT_CACHE_LIMITS, this.storage);
    // Store writes held during a transaction reach SQLite before it commits; in-memory copies
    // must not outlive a rolled-back transaction or a wipe.
    this.storage.onFlush(() => this.stores.flushWrites());
    this.storage.onReset(() => {
      this.stores.forget();
      this.outbox.forget();
    });
  }

  /**
   * The task is under load: the last commit found at least a batch (`maxBatchRecords`) of input
   * waiting. Its driver then lets input gather briefly before the next commit, and commits take up
   * to `maxLoadedBatchRecords`: fewer, larger commits. A step that finds no input clears it, so a
   * task that is not busy processes each arrival at once.
   */
  get loaded(): boolean {
    return this.pace.loaded;
  }

  /** The last commit left input behind (its bounds were reached): the next step has work now. */
  get backlog(): boolean {
    return this.pace.backlog;
  }

  private get app(): Application {
    return this.options.application;
  }

  meta(): TaskMeta | undefined {
    return this.storage.meta();
  }

  /**
   * Takes an assignment. The same epoch again changes nothing; an older epoch is refused (I3).
   * A new epoch starts a new producer epoch: the outbox must be empty by then (revocation flushes
   * it), and producer sequences restart.
   */
  async assign(assignment: Assignment): Promise<TaskMeta> {
    const current = this.storage.meta();
    if (current && current.taskId !== assignment.taskId) throw new Error(`instance of ${current.taskId} cannot take ${assignment.taskId}`);
    if (current && assignment.epoch < current.epoch) {
      throw new StaleAssignment(`task ${assignment.taskId}: epoch ${assignment.epoch} is older than ${current.epoch}`);
    }
    if (current && assignment.epoch === current.epoch && assignment.role === current.role) {
      // The coordinator pushes assignments again (after a crash, and in its periodic sweep): the
      // same assignment changes nothing, but it carries whether the application is shut down.
      if (assignment.halted !== undefined && current.failure === null) this.fail(assignment.halted);
      if (assignment.halted === undefined && current.role === "active" && current.failure?.startsWith(APPLICATION_SHUT_DOWN)) this.resume();
      return this.storage.meta()!;
    }
    if (current && !this.outbox.isEmpty()) await this.flush();
    this.storage.transaction(() => {
      const before = this.storage.meta();
      let state: TaskState = before?.state ?? "CREATED";
      if (state === "CLOSED") state = transition(state, "CREATED");
      if (state === "RUNNING" || state === "RESTORING" || state === "UPDATING") state = transition(state, "SUSPENDED");
      if (assignment.role === "active") state = transition(state, "RESTORING");
      else if (assignment.role === "standby") state = transition(state, "UPDATING");
      this.outbox.clear();
      // A new assignment starts a new restoration (or none): `replayed` counts from here.
      this.storage.resetReplayed();
      this.storage.writeMeta({
        taskId: assignment.taskId,
        placement: assignment.placement,
        role: assignment.role,
        state,
        epoch: assignment.epoch,
        incarnation: before?.incarnation ?? 0,
        nextCommit: before?.nextCommit ?? 1,
        failure: assignment.halted ?? (before?.shutdownRequested ? before.failure : null),
        // A shutdown not yet reported must still reach the coordinator.
        shutdownRequested: before?.shutdownRequested ?? false,
      });
    });
    this.dropProcessor();
    this.backoff.reset();
    // With nothing to restore, the instance runs at once; a log that cannot say yet leaves it
    // RESTORING, and the restore worker's first batch completes it.
    if (assignment.role === "active") {
      await this.tryCompleteRestoration().catch((error: unknown) => {
        if (!(error instanceof LogUnavailable)) throw error;
      });
    }
    return this.storage.meta()!;
  }

  /**
   * A restoring active task turns RUNNING once every changelog is restored to its end. (Restoring
   * itself is the restore worker's job; the task only checks whether it is done.)
   */
  async tryCompleteRestoration(): Promise<boolean> {
    const meta = this.storage.meta();
    if (!meta || meta.state !== "RESTORING") return meta?.state === "RUNNING";
    const changelogs = this.app.changelogPartitions(meta.taskId);
    const ends = await Promise.all(changelogs.map(async (tp) => (await this.options.log.offsets(tp)).latest));
    const inputs = this.app.inputPartitions(meta.taskId);
    const starts = await Promise.all(inputs.map((tp) => this.startingPosition(tp, this.app.isGlobalInput(meta.taskId, tp.topic))));
    return this.storage.transaction(() => {
      const now = this.storage.meta();
      if (!now || now.state !== "RESTORING" || now.incarnation !== meta.incarnation) return false;
      const caughtUp = changelogs.every((tp, i) => (this.storage.checkpoint(tp) ?? 0) >= ends[i]!);
      if (!caughtUp) return false;
      const positions = this.storage.positions();
      const resumed: InputPositions = {};
      const committed: InputPositions = {};
      inputs.forEach((tp, i) => {
        const { position, committed: held } = starts[i]!;
        resumed[positionKey(tp)] = Math.max(positions[positionKey(tp)] ?? 0, position);
        if (held !== undefined) committed[positionKey(tp)] = held;
      });
      this.storage.writePositions(resumed);
      this.storage.writeCommitted(committed);
      this.storage.writeMeta({ ...now, state: transition(now.state, "RUNNING") });
      return true;
    });
  }

  /**
   * Where input resumes when the instance has no position of its own: the group's committed
   * offset (committed only after everything before it reached the changelog and outputs, so the
   * restored store reflects it; only task instances can commit for the group, under their epoch),
   * else the earliest kept offset.
   */
  private async startingPosition(tp: TopicPartition, global: boolean): Promise<{ position: number; committed?: number }> {
    // A global table's input resumes where its restored copy says (the positions its changelog carries), else from the start.
    if (global) return { position: (await this.options.log.offsets(tp)).earliest };
    const committed = await this.options.log.committedOffset(this.app.groupId, tp);
    if (committed) return { position: committed.offset, committed: committed.offset };
    return { position: (await this.options.log.offsets(tp)).earliest };
  }

  /**
   * Applies a restore batch (active RESTORING or standby UPDATING): the store writes, the new
   * checkpoint (= the restored position) and the input positions the records carry, in one
   * transaction — and only at the current position of the current incarnation (I4).
   */
  applyRestoreBatch(batch: RestoreBatch): RestoreReply {
    const reply = this.applyRestoreBatchNow(batch);
    if (reply.applied) (reply.state === "UPDATING" ? this.counters.standbyUpdated : this.counters.restored).add(batch.records.length);
    return reply;
  }

  private applyRestoreBatchNow(batch: RestoreBatch): RestoreReply {
    return this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (!meta) throw new NotAssigned();
      const checkpoint = this.storage.checkpoint(batch);
      const reply = (applied: boolean, at: number | null): RestoreReply => ({
        applied,
        incarnation: meta.incarnation,
        epoch: meta.epoch,
        role: meta.role,
        state: meta.state,
        checkpoint: at,
        caughtUp: at !== null && at >= batch.end,
      });
      const restoring = meta.state === "RESTORING" || meta.state === "UPDATING";
      const store = this.app.changelogPartitions(meta.taskId).find((c) => c.topic === batch.topic && c.partition === batch.partition);
      const staleEpoch = batch.epoch !== undefined && batch.epoch !== meta.epoch;
      if (!restoring || !store || staleEpoch || !canApplyRestoreBatch({ incarnation: meta.incarnation, checkpoint }, batch)) return reply(false, checkpoint);
      const reached: InputPositions = {};
      const writes = batch.records.map((record) => {
        const position = positionFromHeaders(record.headers);
        if (position) reached[positionKey(position)] = Math.max(reached[positionKey(position)] ?? 0, position.offset + 1);
        const tombstone = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
        // The record's timestamp is the value's (the changelog carries it as Kafka's does).
        return { key: record.key ?? "", value: tombstone ? null : record.value, timestamp: record.timestamp };
      });
      this.stores.keyValue(store.store).writeAll(writes);
      this.storage.writeCheckpoint(batch, batch.nextOffset);
      this.storage.addReplayed(batch, batch.records.length);
      this.storage.writePositions(reached);
      return reply(true, batch.nextOffset);
    });
  }

  /** The changelogs restoration must bring up to date, with where each stands. */
  restoreRegistration(): { incarnation: number; epoch: number; role: TaskRole; changelogs: (TopicPartition & { store: string; checkpoint: number | null })[] } | undefined {
    const meta = this.storage.meta();
    if (!meta || (meta.state !== "RESTORING" && meta.state !== "UPDATING")) return undefined;
    return {
      incarnation: meta.incarnation,
      epoch: meta.epoch,
      role: meta.role,
      changelogs: this.app.changelogPartitions(meta.taskId).map((tp) => ({ ...tp, checkpoint: this.storage.checkpoint(tp) })),
    };
  }

  /**
   * One unit of work: send what is pending, then commit one batch of input together with the
   * wall-clock punctuations due, and send that. The first step of a RUNNING instance creates its
   * processors (their `init` may schedule punctuators: see `wakeAt`), even without input.
   */
  async step(): Promise<StepOutcome> {
    const meta = this.storage.meta();
    if (!meta || meta.role !== "active") return "idle";
    if (meta.failure) return "blocked";
    if (meta.state === "RESTORING" && !(await this.tryCompleteRestoration())) return "idle";
    if (this.storage.meta()?.state !== "RUNNING") return "idle";
    if (this.backoff.waitingUntil(this.now()) !== undefined) return "waiting";
    if (!this.outbox.isEmpty()) await this.flush();
    else await this.commitInputOffsets();
    const records = await this.fetchBatch(meta);
    if (this.storage.meta()?.failure) return "blocked";
    const now = this.now();
    const current = this.processor?.incarnation === meta.incarnation ? this.processor.processor : undefined;
    const punctuationDue = (current?.nextWallClockPunctuationMs() ?? Infinity) <= now;
    if (records.length === 0 && current && !punctuationDue) return "idle";
    // Only commits of work pass the crash points; creating the processors is not one.
    const work = records.length > 0 || punctuationDue;
    if (work) await this.options.onCommitStep?.("before-commit");
    this.commitStartedAt = now;
    const committed = this.commit(meta, records, now);
    if (committed !== "committed") return committed;
    if (work) await this.options.onCommitStep?.("after-commit");
    if (!this.outbox.isEmpty() || records.length > 0) await this.flush();
    if (records.length === 0) return "idle";
    this.counters.committed(records.length, this.now() - this.commitStartedAt);
    return "more";
  }

  /** Fetches one batch from every input partition, merged by timestamp; notes how much was waiting. */
  private async fetchBatch(meta: TaskMeta): Promise<InputRecord[]> {
    const positions = this.storage.positions();
    const inputs = this.app.inputPartitions(meta.taskId);
    const base = this.options.maxBatchRecords ?? 1000;
    const maxRecords = this.pace.loaded ? Math.max(base, this.options.maxLoadedBatchRecords ?? 5000) : base;
    const results = await Promise.all(inputs.map((tp) => this.fetchInput(tp, positions[positionKey(tp)] ?? 0, maxRecords)));
    this.pace = {
      loaded: results.reduce((n, r) => n + r.waiting, 0) >= base,
      backlog: results.some((r) => r.waiting > r.records.length),
    };
    // Global tables' updates first, as Kafka keeps its global tables current apart from (and ahead of) stream time.
    const global = inputs.map((tp) => this.app.isGlobalInput(meta.taskId, tp.topic));
    return [...results.filter((_, i) => global[i]).flatMap((r) => r.records), ...mergeByTimestamp(results.filter((_, i) => !global[i]).map((r) => r.records))];
  }

  /**
   * One commit, one storage transaction (I2): the records processed, then the wall-clock
   * punctuators due at `now`, their store writes, outbox batches and input positions. On an
   * uncaught error everything is rolled back and the topology's policy applies (`"retry"` backs
   * off and does it all again later; the others stop the instance with the error).
   */
  private commit(meta: TaskMeta, records: readonly InputRecord[], now: number): "committed" | StepOutcome {
    let active: ActiveProcessor | undefined;
    try {
      this.storage.transaction(() => {
        const current = this.storage.meta();
        if (!current || current.state !== "RUNNING" || current.incarnation !== meta.incarnation) throw new SupersededDuringFetch();
        // Created in the transaction: what `init` writes or forwards commits with the rest.
        active = this.activeProcessor(meta.incarnation);
        const reached: InputPositions = {};
        for (const record of records) {
          active.processor.process(record);
          reached[positionKey(record)] = record.offset + 1;
        }
        if ((active.processor.nextWallClockPunctuationMs() ?? Infinity) <= now) active.processor.punctuate(now);
        const written = active.collector.writeTo(this.outbox, current.nextCommit);
        this.storage.writePositions(reached);
        // Partition time commits with the positions, as Kafka commits it with the offsets.
        this.storage.writePartitionTimes(active.processor.partition, active.processor.partitionTimes());
        if (written > 0) this.storage.writeMeta({ ...current, nextCommit: current.nextCommit + 1 });
      });
    } catch (error) {
      // Everything the commit did is rolled back; the processor may hold half-done state: rebuild it.
      this.dropProcessor();
      if (error instanceof SupersededDuringFetch) return "idle";
      return this.onUncaughtError(error);
    }
    this.backoff.reset();
    this.counters.events(active!.processor.eventMetrics, active!.reported);
    active!.reported = active!.processor.eventMetrics;
    return "committed";
  }

  /** The topology's uncaught-error policy for an error that rolled a commit back. */
  private onUncaughtError(error: unknown): StepOutcome {
    // A record too large for the log fails the same way on every attempt: retrying cannot help.
    const chosen = this.app.topology.uncaughtErrorPolicy(error);
    const policy = chosen === "retry" && causedBy(error, RecordTooLarge) ? "fail" : chosen;
    this.counters.uncaughtError(policy);
    const reason = `processing failed: ${error instanceof Error ? error.message : String(error)}`;
    if (policy === "retry") {
      this.backoff.failed(this.now());
      return "waiting";
    }
    this.fail(reason, policy === "shutdown-application");
    return "blocked";
  }

  /**
   * When the instance must look again though nothing wakes it: the end of a retry back-off, or
   * its earliest wall-clock punctuation. Undefined when nothing is due (an idle task costs nothing).
   */
  wakeAt(): number | undefined {
    const meta = this.storage.meta();
    if (!meta || meta.role !== "active" || meta.state !== "RUNNING" || meta.failure) return undefined;
    const retry = this.backoff.waitingUntil(this.now());
    if (retry !== undefined) return retry;
    return this.processor?.incarnation === meta.incarnation ? this.processor.processor.nextWallClockPunctuationMs() : undefined;
  }

  /** Input of one partition from `offset`, and how many records were waiting there (`latest - offset`). */
  private async fetchInput(tp: TopicPartition, offset: number, maxRecords: number): Promise<{ records: InputRecord[]; waiting: number }> {
    const bounds = { maxRecords, maxBytes: this.options.maxBatchBytes ?? 1 << 20 };
    const read = async (from: number) => {
      const { records, latest } = await this.options.log.fetch(tp, from, bounds);
      return { records: records.map((r) => toInput(tp, r)), waiting: Math.max(records.length, latest - from) };
    };
    try {
      return await read(offset);
    } catch (error) {
      if (!(error instanceof OffsetOutOfRange)) throw error;
      // Input below the earliest kept offset is gone (retention): resume at the earliest, as
      // Kafka's auto.offset.reset=earliest does. Beyond the end means the log lost records.
      const { earliest, latest } = await this.options.log.offsets(tp);
      if (offset > latest) {
        this.fail(`input ${positionKey(tp)} ends at ${latest}, below the task's position ${offset}`);
        return { records: [], waiting: 0 };
      }
      this.storage.transaction(() => this.storage.writePositions({ [positionKey(tp)]: earliest }));
      this.options.onInputReset?.(tp, offset, earliest);
      return read(earliest);
    }
  }

  /**
   * Sends the outbox, oldest commit first and each commit's changelog before its output, through
   * the idempotent producer. The acknowledged batches leave the outbox together, in one
   * transaction that also advances the checkpoints — only if the instance was not wiped or
   * reassigned meanwhile. (Until then a crash resends them, and the log answers with the original
   * offsets: recording each group's acknowledgement before sending the next would cost a storage
   * commit per group and buy nothing.)
   */
  async flush(): Promise<void> {
    const meta = this.storage.meta();
    if (meta) {
      const sent = new Set<number>();
      const acked: { batch: OutboxBatch; result: AppendResult }[] = [];
      let failure: PromiseRejectedResult | undefined;
      for (;;) {
        const group = this.outbox.nextGroup(sent);
        if (group.length === 0) break;
        const results = await Promise.allSettled(group.map((batch) => this.send(batch, this.producer(meta, batch.sequence))));
        await this.options.onCommitStep?.("mid-send");
        group.forEach((batch, i) => {
          const result = results[i]!;
          sent.add(batch.id);
          if (result.status === "fulfilled") acked.push({ batch, result: result.value });
        });
        failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failure) break;
      }
      if (acked.length > 0) this.recordAcks(meta, acked);
      if (failure) {
        if (failure.reason instanceof ProducerFenced) this.fail(`fenced: ${failure.reason.message}`);
        throw failure.reason;
      }
    }
    await this.options.onCommitStep?.("after-send");
    await this.commitInputOffsets();
  }

  /** Appends an outbox batch, as the string stored when the log takes batches encoded. */
  private send(batch: OutboxBatch, producer: ProducerId): Promise<AppendResult> {
    const log = this.options.log;
    if (batch.encoded !== undefined && log.appendEncoded) return log.appendEncoded(batch, batch.encoded, producer);
    return log.append(batch, batch.records, producer);
  }

  /** Removes acknowledged batches from the outbox and moves the checkpoints of acknowledged changelog batches. */
  private recordAcks(meta: TaskMeta, acked: readonly { batch: OutboxBatch; result: AppendResult }[]): void {
    this.storage.transaction(() => {
      const now = this.storage.meta();
      if (!now || now.incarnation !== meta.incarnation || now.epoch !== meta.epoch) return;
      for (const { batch, result } of acked) {
        this.outbox.remove(batch.id);
        if (batch.phase !== CHANGELOG_PHASE) continue;
        const checkpoint = checkpointAfterAck(
          { incarnation: now.incarnation, checkpoint: this.storage.checkpoint(batch) },
          { incarnation: meta.incarnation, endOffset: result.baseOffset + result.count },
        );
        if (checkpoint !== null) this.storage.writeCheckpoint(batch, checkpoint);
      }
    });
  }

  /**
   * Records the input progress in the log as the group's committed offset, once everything it
   * implies has been sent, and notes what the group holds. Only positions beyond what the group
   * is known to hold are committed; the epoch fences commits of revoked and zombie instances.
   */
  private async commitInputOffsets(): Promise<void> {
    const meta = this.storage.meta();
    if (!meta || meta.role !== "active" || meta.state !== "RUNNING" || !this.outbox.isEmpty()) return;
    const pending = this.uncommittedPositions();
    const partitions = Object.keys(pending);
    if (partitions.length === 0) return;
    const epoch = this.producer(meta, 0).epoch;
    await Promise.all(
      this.app
        .inputPartitions(meta.taskId)
        // A global table's position is kept by its changelog alone (see Application.isGlobalInput).
        .filter((tp) => pending[positionKey(tp)] !== undefined && !this.app.isGlobalInput(meta.taskId, tp.topic))
        .map((tp) => this.options.log.commitOffset(this.app.groupId, tp, { offset: pending[positionKey(tp)]!, metadata: `epoch=${meta.epoch}`, epoch })),
    );
    this.storage.transaction(() => {
      const now = this.storage.meta();
      if (now && now.incarnation === meta.incarnation && now.epoch === meta.epoch) this.storage.writeCommitted(pending);
    });
  }

  /** Input positions processed and sent but not yet committed to the group. */
  private uncommittedPositions(): InputPositions {
    const positions = this.storage.positions();
    const committed = this.storage.committedPositions();
    return Object.fromEntries(Object.entries(positions).filter(([key, offset]) => offset > (committed[key] ?? -1)));
  }

  /** Processed input the group does not know of yet (see `commitInputOffsets`). */
  hasUncommittedInput(): boolean {
    return Object.keys(this.uncommittedPositions()).length > 0;
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  private producer(meta: TaskMeta, sequence: number): ProducerId {
    return {
      producerId: `${this.app.applicationId}-${meta.taskId}`,
      epoch: meta.epoch * INCARNATIONS_PER_EPOCH + meta.incarnation,
      sequence,
    };
  }

  /**
   * Before a wipe: delivers what earlier commits left in the outbox, and commits the input
   * positions they imply. Part of a commit may already be in the log (its changelog is sent
   * before its output, and a crash can come in between), and restoration brings that part back
   * into the store, so the rest must follow, not be dropped. Records that wrote no store (dead
   * letters, filtered records) are covered only by the group's committed offset: unless it is
   * committed now, they would be processed, and their output sent, again after the wipe. A
   * fenced (zombie) instance's outbox is dropped by the wipe instead: a newer instance owns the
   * task. A log that cannot take them fails the wipe, which is tried again later.
   */
  async deliverBeforeWipe(): Promise<void> {
    try {
      if (!this.outbox.isEmpty()) await this.flush();
      else await this.commitInputOffsets();
    } catch (error) {
      if (!(error instanceof ProducerFenced)) throw error;
    }
  }

  /**
   * Closes dirty and wipes (TaskCorrupted): stores, checkpoints, input positions, outbox and
   * collector state all go, and the instance is revived as a new incarnation that restores from
   * the changelog. The new incarnation is also a new producer epoch, so nothing the old one
   * had in flight can land afterwards.
   */
  wipe(): TaskMeta {
    this.dropProcessor();
    this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (!meta) return;
      this.storage.clearState();
      this.outbox.clear();
      let state = transition(meta.state, "CLOSED");
      state = transition(state, "CREATED");
      if (meta.role === "active") state = transition(state, "RESTORING");
      else if (meta.role === "standby") state = transition(state, "UPDATING");
      // A wipe cures a corrupted store, not an application someone shut down.
      const failure = meta.failure?.startsWith(APPLICATION_SHUT_DOWN) ? meta.failure : null;
      this.storage.writeMeta({ ...meta, state, incarnation: meta.incarnation + 1, failure });
    });
    return this.storage.meta()!;
  }

  /** Revocation: flush, then suspend. The checkpoint needs no writing: it is always current (I1). */
  async suspend(): Promise<TaskMeta | undefined> {
    const meta = this.storage.meta();
    if (!meta) return undefined;
    if (meta.role === "idle" && meta.state !== "RUNNING" && meta.state !== "RESTORING" && meta.state !== "UPDATING") return meta;
    if (meta.state === "RUNNING") await this.flush();
    this.dropProcessor();
    this.storage.transaction(() => {
      const now = this.storage.meta()!;
      if (now.state !== "SUSPENDED" && now.state !== "CLOSED" && now.state !== "CREATED") {
        this.storage.writeMeta({ ...now, state: transition(now.state, "SUSPENDED"), role: "idle" });
      } else {
        this.storage.writeMeta({ ...now, role: "idle" });
      }
    });
    return this.storage.meta();
  }

  /** The windows (or sessions) of a key in a window or session store, values still serialized. */
  windows(store: string, key: string, from: number, to: number, kind: "window" | "session"): WindowedValue<string>[] {
    const raw = this.stores.keyValue(store);
    return kind === "session" ? fetchSessions(raw, key, from, to) : fetchWindows(raw, key, from, to);
  }

  /** Reads a key of a store; only a RUNNING active instance answers with authority. */
  get(store: string, key: string): string | undefined {
    return this.stores.keyValue(store).get(key);
  }

  range(store: string, from?: string, to?: string, limit?: number) {
    return this.stores.keyValue(store).range(from, to, limit);
  }

  prefix(store: string, prefix: string, limit?: number) {
    return this.stores.keyValue(store).prefix(prefix, limit);
  }

  /**
   * Entries of a store in key order (UTF-8 bytes) within every bound given: `from <= key <= to`,
   * key starts with `prefix`, key strictly after `after` (a cursor); at most `limit`.
   */
  scan(store: string, bounds: ScanBounds): KeyValue<string, string>[] {
    const prefix = bounds.prefix ?? "";
    let lower = bounds.from ?? "";
    if (compareKeys(prefix, lower) > 0) lower = prefix;
    const after = bounds.after !== undefined && compareKeys(bounds.after, lower) >= 0 ? bounds.after : undefined;
    if (after !== undefined) lower = after;
    // Every key with the prefix sorts below the prefix followed by the largest code point twice.
    let upper = bounds.to;
    const prefixEnd = prefix === "" ? undefined : prefix + "\u{10FFFF}\u{10FFFF}";
    if (prefixEnd !== undefined && (upper === undefined || compareKeys(prefixEnd, upper) < 0)) upper = prefixEnd;
    if (upper !== undefined && compareKeys(lower, upper) > 0) return [];
    const rows = this.stores.keyValue(store).range(lower, upper, bounds.limit + (after === undefined ? 0 : 1));
    return rows.filter((row) => row.key !== after && row.key.startsWith(prefix)).slice(0, bounds.limit);
  }

  checkpoints(): Map<string, number> {
    return this.storage.checkpoints();
  }

  replayed(): Map<string, number> {
    return this.storage.replayed();
  }

  positions(): InputPositions {
    return this.storage.positions();
  }

  committedPositions(): InputPositions {
    return this.storage.committedPositions();
  }

  pendingOutboxBatches(): number {
    return this.outbox.pendingBatches();
  }

  metrics() {
    return this.processor?.processor.metrics;
  }

  /** Stops processing with `reason`; with `shutdownApplication`, the coordinator must stop every task too. */
  private fail(reason: string, shutdownApplication = false): void {
    this.updateMeta((meta) => ({ failure: reason, shutdownRequested: meta.shutdownRequested || shutdownApplication }));
  }

  /** Changes fields of the instance's meta row, in a transaction of its own (nothing when it has none). */
  private updateMeta(change: (meta: TaskMeta) => Partial<TaskMeta>): void {
    this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (meta) this.storage.writeMeta({ ...meta, ...change(meta) });
    });
  }

  /** The application is shut down (see `Assignment.halted`): an instance still processing stops. */
  halt(reason: string): TaskMeta | undefined {
    const meta = this.storage.meta();
    if (meta && meta.failure === null) this.fail(reason);
    return this.storage.meta();
  }

  /** The coordinator knows of the shutdown this instance asked for. */
  shutdownReported(): void {
    this.updateMeta(() => ({ shutdownRequested: false }));
  }

  /** An operator resumes the instance: its failure is cleared and processing is attempted again at once. */
  resume(): TaskMeta | undefined {
    this.backoff.reset();
    this.updateMeta(() => ({ failure: null }));
    return this.storage.meta();
  }

  private activeProcessor(incarnation: number) {
    if (this.processor && this.processor.incarnation === incarnation) return this.processor;
    this.dropProcessor();
    const meta = this.storage.meta()!;
    const partitions = (topic: string) => this.app.catalog.partitions(topic);
    const changelogs = new Set(this.app.changelogPartitions(meta.taskId).map((tp) => tp.topic));
    const collector = new RecordCollector(partitions, changelogs);
    const processor = createTaskProcessor(this.app.topology, meta.taskId, {
      stores: this.stores,
      collector,
      clock: this.options.clock,
      initialPartitionTimes: this.storage.partitionTimes(),
    });
    this.processor = { incarnation, processor, collector, reported: processor.eventMetrics };
    return this.processor;
  }

  private dropProcessor(): void {
    if (!this.processor) return;
    this.processor.collector.discard();
    try {
      this.processor.processor.close();
    } finally {
      this.processor = undefined;
    }
  }
}

class SupersededDuringFetch extends Error {}

/** The processor of the current incarnation, its collector, and the event counts already added to `counters`. */
interface ActiveProcessor {
  readonly incarnation: number;
  readonly processor: TaskProcessor;
  readonly collector: RecordCollector;
  reported: TaskEventMetrics;
}

/** Bounds of `StreamTask.scan`; see there. */
export interface ScanBounds {
  readonly from?: string;
  readonly to?: string;
  readonly prefix?: string;
  /** Only keys strictly after this one (where the previous page ended). */
  readonly after?: string;
  readonly limit: number;
}

function toInput(tp: TopicPartition, record: LogRecord): InputRecord {
  const tombstone = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
  return {
    topic: tp.topic,
    partition: tp.partition,
    offset: record.offset,
    key: record.key,
    value: tombstone ? null : record.value,
    timestamp: record.timestamp,
    headers: tombstone ? record.headers.filter((h) => h.key !== TOMBSTONE_HEADER) : record.headers,
  };
}

/**
 * Interleaves the partitions' records by timestamp (the smallest head first, as Kafka Streams
 * chooses the next record), keeping each partition's own order.
 */
export function mergeByTimestamp(partitions: readonly (readonly InputRecord[])[]): InputRecord[] {
  if (partitions.length === 1) return [...partitions[0]!];
  const heads = partitions.map(() => 0);
  const merged: InputRecord[] = [];
  for (;;) {
    let pick = -1;
    partitions.forEach((records, i) => {
      const head = records[heads[i]!];
      if (head && (pick < 0 || head.timestamp < partitions[pick]![heads[pick]!]!.timestamp)) pick = i;
    });
    if (pick < 0) return merged;
    merged.push(partitions[pick]![heads[pick]!++]!);
  }
}

/** Whether `error`, or an error it was caused by, is a `kind`. */
function causedBy(error: unknown, kind: abstract new (...args: never[]) => Error): boolean {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof kind) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
