/**
 * One stream task instance: its lifecycle, processing and commits. It owns the instance's storage
 * (stores, checkpoints, input positions, outbox) and is driven by its Durable Object: `step()`
 * does one unit of work. A commit is one storage transaction (I2); the outbox is then sent through
 * the log's idempotent, fenced producer (outbox-sender.ts), so a crash at any point repeats no
 * record and loses none. Restore batches are applied by restoration.ts, store reads answered by
 * store-queries.ts; the types that cross RPC are in protocol.ts.
 */
import type { Application } from "../application";
import { InvalidRecord, LogUnavailable, OffsetOutOfRange, RecordTooLarge } from "../log/errors";
import { PushedFetches, type PushedFetch } from "../log/pushed-fetches";
import type { Log, LogRecord, TopicPartition } from "../log/types";
import type { RecordOrigin } from "../streams/errors";
import { createTaskProcessor } from "../streams/runtime/task-processor";
import type { InputRecord, TaskEventMetrics, TaskProcessor } from "../streams/runtime/types";
import type { StorageLike } from "../storage/sql";
import { OFFSET_COMMIT_INTERVAL_MS, OutboxSender, type OwedRecord } from "./outbox-sender";
import { Outbox } from "./outbox";
import { APPLICATION_SHUT_DOWN, type Assignment, type CommitStep, type RestoreBatch, type RestoreReply, type StepOutcome } from "./protocol";
import { positionKey, RecordCollector, TOMBSTONE_HEADER, type InputPositions } from "./record-collector";
import { Restoration, type RestoreRegistration } from "./restoration";
import { DEFAULT_CACHE_LIMITS, SqliteStoreBackend } from "./sqlite-stores";
import { ageMs, oldestWaiting, type InputHead } from "./input-lag";
import { positionAfterReset, resets, targetOffset, type AppliedReset, type InputReset, type PartitionReset } from "./input-reset";
import { isSkipped, recordOrigin, remainingSkips, skipDecision, type SkipOutcome } from "./skips";
import { transition, type TaskState } from "./state";
import { StoreQueries } from "./store-queries";
import { TaskStorage, type TaskMeta } from "./task-storage";
import { TaskCounters, type TaskCountersSnapshot } from "./task-metrics";
import { RetryBackoff, type BackoffSettings } from "./retry-backoff";
import { SendStopped, sendErrorKind } from "./send-errors";

export interface TaskOptions {
  readonly application: Application;
  readonly log: Log;
  readonly storage: StorageLike;
  /** Most input records per partition per commit (default 1000). */
  readonly maxBatchRecords?: number;
  /**
   * Most input records per partition per commit under load (default 10,000): once a commit found at
   * least `maxBatchRecords` records waiting, the next ones may take up to this many.
   */
  readonly maxLoadedBatchRecords?: number;
  readonly maxBatchBytes?: number;
  /** The record cache's byte budget (Kafka's `statestore.cache.max.bytes`, default 10 MiB); the cache lives in memory between a commit's start and its flush. */
  readonly cacheMaxBytes?: number;
  /** Kafka's `commit.interval.ms`: a task under load commits this often, and input offsets go to the group at most this often (default `OFFSET_COMMIT_INTERVAL_MS`). */
  readonly commitIntervalMs?: number;
  /**
   * Kafka Streams' producer `linger.ms` (100 ms by its default): while commits follow each other
   * closely, their outbox batches go out together at most this often; the first commit after a
   * quiet spell is sent at once. Default 0: every commit is sent at once.
   */
  readonly lingerMs?: number;
  readonly clock?: () => number;
  /**
   * The back-off of the `"retry"` uncaught-error policy, and of sending the outbox again after a
   * send that failed for a while (the log not answering): default 1 s doubling up to 60 s.
   */
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

export class StaleAssignment extends Error {
  override name = "StaleAssignment";
}

export class StreamTask {
  private readonly storage: TaskStorage;
  private readonly outbox: Outbox;
  private readonly stores: SqliteStoreBackend;
  private readonly sender: OutboxSender;
  private readonly restoration: Restoration;
  /** Reads of the instance's stores for interactive queries. */
  readonly queries: StoreQueries;
  private processor: ActiveProcessor | undefined;
  /** Between the attempts of the `"retry"` uncaught-error policy. */
  private readonly backoff: RetryBackoff;
  /**
   * Between attempts to send the outbox (or commit input offsets) after one failed for a while:
   * nothing is sent, and nothing processed, until it ends (see send-errors.ts). In memory: an
   * object that restarts sends at once.
   */
  private readonly sendBackoff: RetryBackoff;
  /** Records processed, restored and applied as a standby, and commit latency (in memory). */
  readonly counters: TaskCounters;
  /** When the last commit started (its transaction): when the next is due, under load or with work uncommitted (see `commitDueAt`). */
  private commitStartedAt = 0;
  /** When input was last processed, and whether that came within a commit interval of the time before (input keeps coming). */
  private inputProcessedAt = -Infinity;
  private streaming = false;
  /**
   * Input processed since the last commit (Kafka Streams' uncommitted task state): its effects are
   * only in memory (the stores' held writes and record caches, the collector's records, the
   * processor's partition times) until the commit that is due writes them in one transaction (I2).
   * Queries read them; a crash or an error loses them, and the input is processed again from the
   * committed positions. Undefined when everything processed is committed.
   */
  private uncommitted: UncommittedWork | undefined;
  /** Each input partition's end as its last fetch saw it (in memory: for reports, which must not call the log). */
  private readonly inputEnds = new Map<string, number>();
  /** Each input partition's oldest record not yet processed, as a fetch from the processed position saw it (input-lag.ts). */
  private readonly heads = new Map<string, InputHead>();
  /** When a stopped instance last looked at its input's ends (see `noteStoppedInput`). */
  private stoppedInputSeenAt = -Infinity;
  /** How much input the last step found; see `loaded` and `backlog`. */
  private pace = { loaded: false, backlog: false };
  /** When a step last sent the outbox (in memory: a restarted instance sends at once); see `lingerMs`. */
  private sentAt = -Infinity;
  /** Fetches the input partitions made as they appended, for the next fetch from there (src/log/pushed-fetches.ts). */
  private readonly pushed = new PushedFetches();

  constructor(private readonly options: TaskOptions) {
    this.counters = new TaskCounters(options.clock);
    this.backoff = new RetryBackoff(options.retryBackoff);
    this.sendBackoff = new RetryBackoff(options.retryBackoff);
    this.storage = new TaskStorage(options.storage);
    this.outbox = new Outbox(this.storage.db);
    this.stores = new SqliteStoreBackend(this.storage.db, DEFAULT_CACHE_LIMITS, this.storage);
    this.sender = new OutboxSender({
      application: options.application,
      log: options.log,
      storage: this.storage,
      outbox: this.outbox,
      onCommitStep: options.onCommitStep,
      fail: (reason, at) => this.fail(reason, at),
      onRefusedRecords: (continued, deadLettered) => this.counters.refusedRecords(continued, deadLettered),
      clock: options.clock,
      commitIntervalMs: options.commitIntervalMs,
    });
    this.restoration = new Restoration({
      application: options.application,
      log: options.log,
      storage: this.storage,
      stores: this.stores,
      counters: this.counters,
    });
    // Through the running processor's record cache: queries read what was processed, committed or not.
    this.queries = new StoreQueries(this.stores, () => this.processor?.processor.recordCache);
    // Store writes held during a transaction reach SQLite before it commits — unless they belong
    // to a deferred commit, which writes them itself; in-memory copies must not outlive a
    // rolled-back transaction or a wipe, and without them the uncommitted work is gone too.
    this.storage.onFlush(() => {
      if (!this.uncommitted) this.stores.flushWrites();
    });
    this.storage.onReset(() => {
      this.stores.forget();
      this.outbox.forget();
      this.sender.forget();
      this.dropUncommitted();
    });
  }

  /**
   * The task is under load: the last commit found at least a batch (`maxBatchRecords`) of input
   * waiting, or took the rest of a backlog while under load. Its driver then lets input gather
   * for the commit interval before the next commit, and commits take up to
   * `maxLoadedBatchRecords`: fewer, larger commits. A step that finds less than a batch waiting
   * (after one that took all there was) clears it, so a task that is not busy processes each
   * arrival at once.
   */
  get loaded(): boolean {
    return this.pace.loaded;
  }

  /**
   * When the next commit is due, as of `now`: at once, unless the task is under load — then one
   * commit interval after its last commit began, as Kafka Streams commits every
   * `commit.interval.ms` whatever each commit took (input gathers meanwhile, and a cached store's
   * updates collapse over it).
   */
  nextCommitAt(now = this.now()): number {
    return this.pace.loaded ? Math.max(now, this.commitStartedAt + this.commitInterval) : now;
  }

  private get commitInterval(): number {
    return this.options.commitIntervalMs ?? OFFSET_COMMIT_INTERVAL_MS;
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
      if (assignment.halted !== undefined && current.failure === null) {
        this.commitUncommitted();
        this.fail(assignment.halted);
        await this.sendBeforeStopping();
      }
      if (
        assignment.halted === undefined &&
        current.role === "active" &&
        current.failure !== null &&
        (assignment.resume || current.failure.startsWith(APPLICATION_SHUT_DOWN))
      )
        this.resume();
      return this.storage.meta()!;
    }
    // Work of the assignment before that was not committed is processed again under this one.
    this.dropProcessor();
    if (current && !this.outbox.isEmpty()) await this.flush();
    this.storage.transaction(() => {
      const before = this.storage.meta();
      let state: TaskState = before?.state ?? "CREATED";
      if (state === "CLOSED") state = transition(state, "CREATED");
      if (state === "RUNNING" || state === "RESTORING" || state === "UPDATING") state = transition(state, "SUSPENDED");
      if (assignment.role === "active") state = transition(state, "RESTORING");
      else if (assignment.role === "standby") state = transition(state, "UPDATING");
      this.outbox.clear();
      this.sender.forget();
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
        failedAt: assignment.halted === undefined && before?.shutdownRequested ? before.failedAt : null,
        // A shutdown not yet reported must still reach the coordinator.
        shutdownRequested: before?.shutdownRequested ?? false,
        // What an operator asked of this instance still holds under a new assignment.
        skips: before?.skips ?? [],
        lastReset: before?.lastReset ?? null,
        processedBefore: before?.processedBefore ?? 0,
      });
    });
    this.dropProcessor();
    this.backoff.reset();
    this.sendBackoff.reset();
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
  tryCompleteRestoration(): Promise<boolean> {
    return this.restoration.tryComplete();
  }

  /** Applies a restore batch at this instance's position and incarnation only (I4); see restoration.ts. */
  applyRestoreBatch(batch: RestoreBatch): RestoreReply {
    return this.restoration.apply(batch);
  }

  /** The changelogs restoration must bring up to date, with where each stands. */
  restoreRegistration(): RestoreRegistration | undefined {
    return this.restoration.registration();
  }

  /** Commits what was processed since the last commit, sends the outbox and commits the input progress it implies; see outbox-sender.ts. */
  flush(): Promise<void> {
    this.commitUncommitted();
    return this.sender.flush();
  }

  /** Commits what was processed since the last commit now, if anything was (a commit that fails is rolled back, and its input processed again). */
  private commitUncommitted(): void {
    const meta = this.storage.meta();
    if (this.uncommitted && meta) this.commit(meta, [], this.now(), "at-once");
  }

  /** Before a wipe: delivers what earlier commits left in the outbox; see outbox-sender.ts. */
  deliverBeforeWipe(): Promise<void> {
    return this.sender.deliverBeforeWipe();
  }

  /** Processed input the group does not know of yet. */
  hasUncommittedInput(): boolean {
    return this.sender.hasUncommittedInput();
  }

  /** Commits the input progress to the group now, not when due (see `OFFSET_COMMIT_INTERVAL_MS`). */
  commitInputOffsets(): Promise<void> {
    return this.sender.commitInputOffsets("now");
  }

  /**
   * One unit of work: send what is pending, then process one batch of input together with the
   * wall-clock punctuations due, commit, and send that. The first step of a RUNNING instance
   * creates its processors (their `init` may schedule punctuators: see `wakeAt`), even without
   * input. With `"when-due"`, a step while input keeps coming (input processed within a commit
   * interval of the time before) processes at once but leaves the commit to the first step once it is
   * due (`commitDueAt`), as Kafka Streams commits every `commit.interval.ms`: one storage commit
   * per interval instead of one per arrival, while queries already read what was processed.
   */
  async step(mode: CommitMode = "at-once"): Promise<StepOutcome> {
    const meta = this.storage.meta();
    if (!meta || meta.role !== "active") return "idle";
    if (meta.failure) {
      await this.noteStoppedInput(meta);
      return "blocked";
    }
    if (meta.state === "RESTORING" && !(await this.tryCompleteRestoration())) return "idle";
    if (this.storage.meta()?.state !== "RUNNING") return "idle";
    // A send that failed for a while is tried again once its back-off ends, and nothing is processed meanwhile.
    if (this.sendBackoff.waitingUntil(this.now()) !== undefined) return "waiting";
    // Before the retry's back-off: it holds back only the input it retries, not what earlier commits made.
    await this.sendIfDue(this.now(), this.owedRecord());
    if (this.storage.meta()?.failure) return "blocked";
    if (this.sendBackoff.waitingUntil(this.now()) !== undefined || this.backoff.waitingUntil(this.now()) !== undefined) return "waiting";
    const records = await this.fetchBatch(meta);
    if (this.storage.meta()?.failure) return "blocked";
    // Caught up: the group hears of the input processed once due (lag 0 means processed and
    // committed); the instance looks again for it (`progressDueAt`).
    if (records.length === 0) await this.sending(() => this.sender.caughtUp(this.uncommitted ? "with-next-commit" : "now"));
    if (this.storage.meta()?.failure) return "blocked";
    const now = this.now();
    const current = this.processor?.incarnation === meta.incarnation ? this.processor.processor : undefined;
    const punctuationDue = (current?.nextWallClockPunctuationMs() ?? Infinity) <= now;
    const commitDue = this.uncommitted !== undefined && (mode === "at-once" || (this.commitDueAt() ?? Infinity) <= now);
    if (records.length === 0 && current && !punctuationDue && !commitDue) return "idle";
    // Only commits of work pass the crash points; creating the processors is not one.
    const work = records.length > 0 || punctuationDue || commitDue;
    if (work) await this.options.onCommitStep?.("before-commit");
    if (records.length > 0) {
      this.streaming = now - this.inputProcessedAt < this.commitInterval;
      this.inputProcessedAt = now;
    }
    const defer = mode === "when-due" && records.length > 0 && this.streaming && !this.pace.loaded && !commitDue;
    const committed = this.commit(meta, records, now, defer ? "when-due" : "at-once");
    if (committed === "blocked") await this.sendBeforeStopping();
    if (committed !== "committed" && committed !== "deferred") return committed;
    if (committed === "committed" && work) await this.options.onCommitStep?.("after-commit");
    if (!this.outbox.isEmpty() || records.length > 0) await this.sendIfDue(now, this.owedRecord());
    // Under load, a commit that took all the input waiting ends a cycle (input gathers for the
    // commit interval next): its progress goes to the group with it, as Kafka commits offsets
    // with every commit, not one cycle later.
    if (committed === "committed" && records.length > 0 && this.pace.loaded && !this.pace.backlog)
      await this.sending(() => this.sender.commitInputOffsets("now", this.owedRecord()));
    if (this.storage.meta()?.failure) return "blocked";
    return records.length === 0 ? "idle" : "more";
  }

  /** When the work processed since the last commit must be committed: one commit interval after the last commit began (undefined: nothing uncommitted). */
  commitDueAt(): number | undefined {
    return this.uncommitted ? this.commitStartedAt + this.commitInterval : undefined;
  }

  /**
   * When what the log and the group acknowledge is written down: by the next commit while input
   * keeps coming — under load, or commits of input within a commit interval of each other — else
   * at once. Until then the instance knows it in memory, and looks again once the offsets are due
   * (`progressDueAt`) in case no commit comes; a crash only sends the same batches and commits the
   * same offsets again.
   */
  private owedRecord(): OwedRecord {
    return this.pace.loaded || this.streaming || this.uncommitted ? "with-next-commit" : "now";
  }

  /** When the outbox's unsent batches are due to go to the log (see `lingerMs`); undefined when there are none. */
  private sendDueAt(): number | undefined {
    return this.sender.unsentBatches() > 0 ? this.sentAt + (this.options.lingerMs ?? 0) : undefined;
  }

  /**
   * Sends the outbox if it is due as of `now` (see `lingerMs`), and then the input progress if
   * that is due; with nothing to send, only the input progress. A lingering send holds the
   * progress back too: the group hears of input only once everything it implies is sent (I5).
   * What they acknowledge is written down as `record` says (see `owedRecord`).
   */
  private async sendIfDue(now: number, record: OwedRecord): Promise<void> {
    const due = this.sendDueAt();
    if (due === undefined) return this.sending(() => this.sender.commitInputOffsets("due", record));
    if (due > now) return;
    this.sentAt = now;
    await this.sending(() => this.sender.flush("due", record));
  }

  /**
   * Sends (or commits offsets) with `send`: a failure that may pass (the log not answering) starts
   * or lengthens the send back-off instead of being retried by every wake-up; one that stopped the
   * instance (its meta says why) ends here too; anything else is thrown.
   */
  private async sending(send: () => Promise<void>): Promise<void> {
    try {
      await send();
      this.sendBackoff.reset();
    } catch (error) {
      if (error instanceof SendStopped || this.storage.meta()?.failure) return;
      if (sendErrorKind(error) !== "transient") throw error;
      this.sendBackoff.failed(this.now());
    }
  }

  /**
   * The task stopped (an uncaught error's policy, or the application was shut down): what earlier
   * commits left lingering goes now, so that their output is not held back while the task waits
   * to be resumed. A log that cannot take it leaves it in the outbox, for the resume, revocation
   * or wipe that sends it anyway.
   */
  private async sendBeforeStopping(): Promise<void> {
    if (this.sender.unsentBatches() === 0) return;
    await this.sender.flush("now").catch(() => {});
  }

  /** Fetches one batch from every input partition, merged by timestamp; notes how much was waiting. */
  private async fetchBatch(meta: TaskMeta): Promise<InputRecord[]> {
    // From where processing has reached, committed or not.
    const uncommitted = this.uncommitted;
    const positions = { ...this.storage.positions(), ...uncommitted?.reached };
    const inputs = this.app.inputPartitions(meta.taskId);
    const base = this.options.maxBatchRecords ?? 1000;
    const maxRecords = this.pace.loaded ? Math.max(base, this.options.maxLoadedBatchRecords ?? 10_000) : base;
    const results = await Promise.all(inputs.map((tp) => this.fetchInput(tp, positions[positionKey(tp)] ?? 0, maxRecords)));
    // The uncommitted work was dropped meanwhile (an input reset): these follow on from positions that are gone.
    if (uncommitted !== this.uncommitted) {
      this.pace = { loaded: this.pace.loaded, backlog: true };
      return [];
    }
    const waiting = results.reduce((n, r) => n + r.waiting, 0);
    this.pace = {
      // The step that takes the rest of a backlog belongs to the same busy spell, however little
      // was left: the task goes on gathering input for its next commit rather than committing
      // each arrival (which, under load, would leave its commits small from then on).
      loaded: waiting >= base || (this.pace.loaded && this.pace.backlog && waiting > 0),
      backlog: results.some((r) => r.waiting > r.records.length),
    };
    // Global tables' updates first, as Kafka keeps its global tables current apart from (and ahead of) stream time.
    const global = inputs.map((tp) => this.app.isGlobalInput(meta.taskId, tp.topic));
    return [...results.filter((_, i) => global[i]).flatMap((r) => r.records), ...mergeByTimestamp(results.filter((_, i) => !global[i]).map((r) => r.records))];
  }

  /**
   * Processes `records`, then the wall-clock punctuators due at `now`, and commits, in one storage
   * transaction (I2): the store writes, outbox batches and input positions of everything processed
   * since the last commit. With `"when-due"` the commit is left for later (see `uncommitted`) —
   * unless the transaction had to write store rows (a range read over many held writes), which it
   * then commits with everything they depend on, or the work has grown to a batch. On an uncaught
   * error everything since the last commit is dropped and the topology's policy applies
   * (`"retry"` backs off and does it all again later; the others stop the instance with the error).
   */
  private commit(meta: TaskMeta, records: readonly InputRecord[], now: number, mode: CommitMode): "committed" | "deferred" | StepOutcome {
    let active: ActiveProcessor | undefined;
    let work: UncommittedWork | undefined;
    let deferred = false;
    /** The record being processed, for a failure that does not name one. */
    let inHand: InputRecord | undefined;
    // What the log and the group acknowledged since the last commit is written down by this one (no storage commit of its own).
    const owed = this.sender.owed();
    const flushes = this.stores.flushes;
    try {
      this.storage.transaction(() => {
        const current = this.storage.meta();
        if (!current || current.state !== "RUNNING" || current.incarnation !== meta.incarnation) throw new SupersededDuringFetch();
        // Created in the transaction: what `init` writes or forwards commits with the rest.
        active = this.activeProcessor(meta.incarnation);
        work = this.uncommitted ??= { reached: {}, processed: {}, records: 0 };
        const skips = current.skips ?? [];
        for (const record of records) {
          const key = positionKey(record);
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
        if (mode === "when-due" && this.stores.flushes === flushes && work.records < (this.options.maxBatchRecords ?? 1000)) {
          deferred = true;
          return;
        }
        this.sender.writeOwed(owed);
        // The record cache first (Kafka's commit does too): what this commit checkpoints is what it flushed (I1).
        active.processor.flush();
        const written = active.collector.writeTo(this.outbox, current.nextCommit);
        this.stores.flushWrites();
        // The processed counts ride on the position rows (no row written for them alone).
        this.storage.writePositions(work.reached, work.processed);
        // Partition time commits with the positions, as Kafka commits it with the offsets.
        this.storage.writePartitionTimes(active.processor.partition, active.processor.partitionTimes());
        // A skip leaves with the commit that passes its record (in the meta row, written only then).
        const skipsLeft = skips.length === 0 ? skips : remainingSkips(skips, this.storage.positions());
        if (written > 0 || skipsLeft.length !== skips.length)
          this.storage.writeMeta({ ...current, nextCommit: current.nextCommit + (written > 0 ? 1 : 0), skips: skipsLeft });
      });
    } catch (error) {
      // Everything since the last commit is rolled back or dropped; the processor may hold half-done state: rebuild it.
      this.dropProcessor();
      if (error instanceof SupersededDuringFetch) return "idle";
      return this.onUncaughtError(error, recordOrigin(error) ?? inHand);
    }
    this.backoff.reset();
    if (deferred) return "deferred";
    this.uncommitted = undefined;
    this.sender.forgetOwed(owed);
    this.counters.events(active!.processor.eventMetrics, active!.reported);
    active!.reported = active!.processor.eventMetrics;
    if (work!.records > 0) this.counters.committed(sumOf(work!.processed), this.now() - now);
    this.commitStartedAt = now;
    return "committed";
  }

  /** The topology's uncaught-error policy for an error that rolled a commit back; `at`: the record it stopped at, if one caused it. */
  private onUncaughtError(error: unknown, at?: RecordOrigin): StepOutcome {
    // A record the log refuses fails the same way on every attempt: retrying cannot help.
    const chosen = this.app.topology.uncaughtErrorPolicy(error);
    const policy = chosen === "retry" && (causedBy(error, RecordTooLarge) || causedBy(error, InvalidRecord)) ? "fail" : chosen;
    this.counters.uncaughtError(policy);
    const reason = `processing failed: ${error instanceof Error ? error.message : String(error)}`;
    if (policy === "retry") {
      this.backoff.failed(this.now());
      return "waiting";
    }
    this.fail(reason, at, policy === "shutdown-application");
    return "blocked";
  }

  /**
   * When the instance must look again though nothing wakes it: the end of a retry back-off or of a
   * lingering send, its earliest wall-clock punctuation, or input progress due to go to the group.
   * Undefined when nothing is due (an idle task costs nothing). The earlier of `timersDueAt` and
   * `progressDueAt`.
   */
  wakeAt(): number | undefined {
    const at = Math.min(this.timersDueAt() ?? Infinity, this.progressDueAt() ?? Infinity);
    return at === Infinity ? undefined : at;
  }

  /** `wakeAt`'s own timers, which nothing but the instance keeps: the end of a retry back-off, else its earliest wall-clock punctuation. */
  timersDueAt(): number | undefined {
    if (!this.running()) return undefined;
    const retry = this.sendBackoff.waitingUntil(this.now()) ?? this.backoff.waitingUntil(this.now());
    if (retry !== undefined) return retry;
    const meta = this.storage.meta()!;
    return this.processor?.incarnation === meta.incarnation ? this.processor.processor.nextWallClockPunctuationMs() : undefined;
  }

  /**
   * `wakeAt`'s progress owed to the log: output lingering, and input progress due to go to the
   * group (not while a retry backs off). Until both are done the group's offset stays behind the
   * input, and the input partition wakes its readers again while they lag (after a restart too).
   */
  progressDueAt(): number | undefined {
    if (!this.running()) return undefined;
    // Nothing goes to the log before a send back-off ends (`timersDueAt` has its end).
    if (this.sendBackoff.waitingUntil(this.now()) !== undefined) return undefined;
    const send = this.sendDueAt();
    if (this.backoff.waitingUntil(this.now()) !== undefined) return send;
    const at = Math.min(send ?? Infinity, this.sender.offsetsDueAt() ?? Infinity, this.commitDueAt() ?? Infinity);
    return at === Infinity ? undefined : at;
  }

  /** An active instance that is RUNNING and not stopped by a failure: the only kind with work due. */
  private running(): boolean {
    const meta = this.storage.meta();
    return meta !== undefined && meta.role === "active" && meta.state === "RUNNING" && !meta.failure;
  }

  /** An input partition's fetch as it appended: the next fetch from there uses it instead of calling the log (kept only while the instance runs). */
  offerFetch(pushed: PushedFetch): void {
    if (this.running()) this.pushed.offer(pushed, this.now());
    // A stopped instance still learns how far its input has grown (its lag keeps counting).
    else this.inputEnds.set(positionKey(pushed.tp), Math.max(this.inputEnds.get(positionKey(pushed.tp)) ?? 0, pushed.fetch.latest));
  }

  /** Input of one partition from `offset`, and how many records were waiting there (`latest - offset`). */
  private async fetchInput(tp: TopicPartition, offset: number, maxRecords: number): Promise<{ records: InputRecord[]; waiting: number }> {
    const bounds = { maxRecords, maxBytes: this.options.maxBatchBytes ?? 1 << 20 };
    const read = async (from: number) => {
      const { records, latest } = this.pushed.take(tp, from, bounds, this.now()) ?? (await this.options.log.fetch(tp, from, bounds));
      this.noteFetched(tp, from, records, latest);
      return { records: records.map((r) => toInput(tp, r)), waiting: Math.max(records.length, latest - from) };
    };
    try {
      return await read(offset);
    } catch (error) {
      if (!(error instanceof OffsetOutOfRange)) throw error;
      // Input below the earliest kept offset is gone (retention): resume at the earliest, as
      // Kafka's auto.offset.reset=earliest does. Beyond the end means the log lost records.
      const { earliest, latest } = await this.options.log.offsets(tp);
      // The reset is written down at once: what was processed and not committed goes first.
      this.dropUncommitted();
      if (offset > latest) {
        this.fail(`input ${positionKey(tp)} ends at ${latest}, below the task's position ${offset}`);
        return { records: [], waiting: 0 };
      }
      this.storage.transaction(() => this.storage.writePositions({ [positionKey(tp)]: earliest }));
      this.options.onInputReset?.(tp, offset, earliest);
      return read(earliest);
    }
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  /**
   * What a fetch of `tp` from `from` tells of the input: its end, and, when it began at the
   * processed position, the oldest record waiting there (input-lag.ts). No log call of its own.
   */
  private noteFetched(tp: TopicPartition, from: number, records: readonly LogRecord[], latest: number): void {
    const key = positionKey(tp);
    this.inputEnds.set(key, latest);
    const first = records[0];
    if (first && from === (this.storage.positions()[key] ?? 0)) this.heads.set(key, { offset: first.offset, timestamp: first.timestamp });
  }

  /**
   * A stopped instance still tells its lag (a dashboard must not read 0 while records wait): at
   * most every STOPPED_INPUT_INTERVAL_MS, in a run that wakes it anyway, it reads one record at its
   * position in each input partition, which gives the partition's end and the waiting record's
   * timestamp. Not on the processing path; a log that cannot answer leaves what was known.
   */
  private async noteStoppedInput(meta: TaskMeta): Promise<void> {
    const now = this.now();
    if (now - this.stoppedInputSeenAt < STOPPED_INPUT_INTERVAL_MS) return;
    this.stoppedInputSeenAt = now;
    const positions = this.storage.positions();
    await Promise.all(
      this.app.inputPartitions(meta.taskId).map(async (tp) => {
        const from = positions[positionKey(tp)] ?? 0;
        const fetched = await this.options.log.fetch(tp, from, { maxRecords: 1, maxBytes: 1 }).catch(() => undefined);
        if (fetched) this.noteFetched(tp, from, fetched.records, fetched.latest);
      }),
    );
  }

  /** The timestamp of the oldest input record not yet processed, as known without calling the log (null: none known to wait). */
  oldestWaiting(): number | null {
    const meta = this.storage.meta();
    if (meta?.role !== "active") return null;
    return oldestWaiting(this.app.inputPartitions(meta.taskId), this.storage.positions(), this.inputEnds, this.heads);
  }

  /** How long the oldest input record not yet processed has waited (0 when none is known to). */
  lagMs(): number {
    return ageMs(this.oldestWaiting(), this.now());
  }

  /**
   * Closes dirty and wipes (TaskCorrupted): stores, checkpoints, input positions, outbox and
   * collector state all go, and the instance is revived as a new incarnation that restores from
   * the changelog. The new incarnation is also a new producer epoch, so nothing the old one
   * had in flight can land afterwards.
   */
  wipe(): TaskMeta {
    // What was processed since the last commit goes with the rest.
    this.dropProcessor();
    this.pushed.clear();
    this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (!meta) return;
      // The processed count lives in the rows a wipe deletes: it carries over in the meta row.
      const processedBefore = this.storage.processedTotal();
      this.storage.clearState();
      this.outbox.clear();
      this.sender.forget();
      let state = transition(meta.state, "CLOSED");
      state = transition(state, "CREATED");
      if (meta.role === "active") state = transition(state, "RESTORING");
      else if (meta.role === "standby") state = transition(state, "UPDATING");
      // A wipe cures a corrupted store, not an application someone shut down.
      const failure = meta.failure?.startsWith(APPLICATION_SHUT_DOWN) ? meta.failure : null;
      this.storage.writeMeta({ ...meta, state, incarnation: meta.incarnation + 1, failure, processedBefore });
    });
    this.heads.clear();
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

  checkpoints(): ReadonlyMap<string, number> {
    return this.storage.checkpoints();
  }

  replayed(): Map<string, number> {
    return this.storage.replayed();
  }

  /** Input partitions' ends as last fetched (by position key); none before the first fetch. */
  knownInputEnds(): ReadonlyMap<string, number> {
    return this.inputEnds;
  }

  positions(): InputPositions {
    return this.storage.positions();
  }

  committedPositions(): InputPositions {
    return this.sender.committedPositions();
  }

  /** Outbox batches not yet sent (acknowledged ones whose removal waits for the next commit are not counted). */
  pendingOutboxBatches(): number {
    return this.sender.unsentBatches();
  }

  metrics() {
    return this.processor?.processor.metrics;
  }

  /**
   * Stops processing with `reason` — the one way an instance stops. `at`: the input record it
   * stopped at, when a record caused it (kept with the failure: the record `skip` passes over).
   * With `shutdownApplication`, the coordinator must stop every task too.
   */
  private fail(reason: string, at?: RecordOrigin, shutdownApplication = false): void {
    const failedAt = at ? { topic: at.topic, partition: at.partition, offset: at.offset } : null;
    this.updateMeta((meta) => ({ failure: reason, failedAt, shutdownRequested: meta.shutdownRequested || shutdownApplication }));
    // A stopped instance processes nothing more: what it did not commit is processed again once it resumes.
    this.dropUncommitted();
    // Its lag is looked at again with the next run (see `noteStoppedInput`).
    this.stoppedInputSeenAt = -Infinity;
  }

  /** Changes fields of the instance's meta row, in a transaction of its own (nothing when it has none). */
  private updateMeta(change: (meta: TaskMeta) => Partial<TaskMeta>): void {
    this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (meta) this.storage.writeMeta({ ...meta, ...change(meta) });
    });
  }

  /** The application is shut down (see `Assignment.halted`): an instance still processing stops. */
  async halt(reason: string): Promise<TaskMeta | undefined> {
    const meta = this.storage.meta();
    if (meta && meta.failure === null) {
      this.commitUncommitted();
      this.fail(reason);
      await this.sendBeforeStopping();
    }
    return this.storage.meta();
  }

  /** The coordinator knows of the shutdown this instance asked for. */
  shutdownReported(): void {
    this.updateMeta(() => ({ shutdownRequested: false }));
  }

  /** An operator resumes the instance: its failure is cleared and processing is attempted again at once. */
  resume(): TaskMeta | undefined {
    this.backoff.reset();
    this.sendBackoff.reset();
    this.updateMeta(() => ({ failure: null }));
    return this.storage.meta();
  }

  /**
   * An operator passes over the record the instance stopped at (skips.ts): one transaction keeps
   * the skip and clears the failure, so the instance runs again — unless the application is shut
   * down (`halted`), when it stays stopped with that reason and passes over the record once the
   * shutdown is lifted. `lastSkipped`: the record skipped last here, which a repeated request may name.
   */
  skip(at: RecordOrigin, lastSkipped?: RecordOrigin, halted?: string): SkipOutcome {
    const meta = this.storage.meta();
    if (meta?.role !== "active") return { status: "refused", reason: "this instance is not the task's active one" };
    const decision = skipDecision(meta, meta.skips ?? [], lastSkipped, at);
    if (decision !== "skip") return decision;
    this.backoff.reset();
    const record = { topic: at.topic, partition: at.partition, offset: at.offset };
    this.updateMeta((m) => ({ skips: [...(m.skips ?? []), record], failure: halted ?? null, failedAt: null }));
    return { status: "skipped", already: false };
  }

  /**
   * Applies the application's input reset `reset` to this task (input-reset.ts): each input
   * partition of a topic reset moves to the target, never back; the records skipped are never
   * processed, and the stores keep what they reflect. What was processed before is committed
   * first. One transaction moves the positions and notes the reset, so a repeat of the same reset
   * (the coordinator's, after a crash) answers what was done and changes nothing. A failure whose
   * record the reset passes is cleared (while the application is shut down, `halted` stands in
   * for it), as are skips it passes. Undefined on an instance that is not active (the coordinator
   * asks the active one again).
   */
  async resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined> {
    const meta = this.storage.meta();
    if (meta?.role !== "active") return undefined;
    if (meta.lastReset?.id === reset.id) return meta.lastReset;
    const partitions = this.app.inputPartitions(meta.taskId).filter((tp) => !this.app.isGlobalInput(meta.taskId, tp.topic) && resets(reset, tp));
    const targets = await Promise.all(
      partitions.map(async (tp) => {
        const range = await this.options.log.offsets(tp);
        const found = reset.target.to === "timestamp" ? await this.options.log.offsetForTimestamp(tp, reset.target.timestamp) : undefined;
        return targetOffset(reset.target, tp, range, found);
      }),
    );
    this.commitUncommitted();
    const applied = this.storage.transaction(() => {
      const now = this.storage.meta();
      if (now?.role !== "active") return undefined;
      if (now.lastReset?.id === reset.id) return now.lastReset;
      const positions = this.storage.positions();
      const moved: PartitionReset[] = partitions.map((tp, i) => {
        const from = positions[positionKey(tp)] ?? 0;
        const to = positionAfterReset(from, targets[i]!);
        return { topic: tp.topic, partition: tp.partition, from, to, skipped: to - from };
      });
      this.storage.writePositions(Object.fromEntries(moved.filter((p) => p.to > p.from).map((p) => [positionKey(p), p.to])));
      const after = this.storage.positions();
      const passed = now.failedAt && (after[positionKey(now.failedAt)] ?? 0) > now.failedAt.offset;
      const done: AppliedReset = { id: reset.id, partitions: moved };
      this.storage.writeMeta({ ...now, lastReset: done, skips: remainingSkips(now.skips ?? [], after), failure: passed ? (halted ?? null) : now.failure });
      return done;
    });
    // Fetches and heads from before the move say nothing of where the instance is now.
    this.pushed.clear();
    for (const p of applied?.partitions ?? []) if (p.to > p.from) this.heads.delete(positionKey(p));
    if (this.storage.meta()?.failure === null) this.backoff.reset();
    return applied;
  }

  /** The counters of `GET /metrics` and the status page, with the durable total of records processed (not the in-memory one, which a restart zeroes). */
  countersSnapshot(): TaskCountersSnapshot {
    const snapshot = this.counters.snapshot();
    return { ...snapshot, processed: { total: this.storage.processedTotal(), rate: snapshot.processed.rate } };
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
      cacheMaxBytes: this.options.cacheMaxBytes,
    });
    this.processor = { incarnation, processor, collector, reported: processor.eventMetrics };
    return this.processor;
  }

  /** Drops what was processed and not committed, if anything was: the stores' held writes, and the processor with its record caches and collector. */
  private dropUncommitted(): void {
    if (this.uncommitted) this.dropProcessor();
  }

  /** Drops the processor, and with it whatever was processed and not committed (see `uncommitted`). */
  private dropProcessor(): void {
    if (this.uncommitted) {
      this.uncommitted = undefined;
      this.stores.forget();
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

class SupersededDuringFetch extends Error {}

/** How a step commits: at once, or when due (see `StreamTask.step`). */
export type CommitMode = "at-once" | "when-due";

/** What was processed since the last commit: how far into each input partition, how many records were processed in each, and how many were taken in all. */
interface UncommittedWork {
  readonly reached: InputPositions;
  readonly processed: Record<string, number>;
  records: number;
}

/** A stopped instance reads its input's ends and waiting records at most this often (see `StreamTask.noteStoppedInput`). */
const STOPPED_INPUT_INTERVAL_MS = 5_000;

function sumOf(counts: Readonly<Record<string, number>>): number {
  let sum = 0;
  for (const n of Object.values(counts)) sum += n;
  return sum;
}

/** The processor of the current incarnation, its collector, and the event counts already added to `counters`. */
interface ActiveProcessor {
  readonly incarnation: number;
  readonly processor: TaskProcessor;
  readonly collector: RecordCollector;
  reported: TaskEventMetrics;
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

/** The input record an error of the topology names (the record being processed when it failed), if any. */
/** Whether `error`, or an error it was caused by, is a `kind`. */
function causedBy(error: unknown, kind: abstract new (...args: never[]) => Error): boolean {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof kind) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
