/**
 * Runs an active task instance's work (Kafka Streams' `TaskExecutor`): each step sends what is
 * pending, fetches a batch of input (partition-group.ts), processes it with the punctuations due
 * and commits it (task-commit.ts) — at once, or once a commit interval while input keeps coming —
 * and sends that (send-schedule.ts). It applies the topology's uncaught-error policy to a commit
 * that failed (`"retry"` backs off here), and says when the instance must look again though
 * nothing wakes it. Lifecycle and operators' requests are the task's (stream-task.ts).
 */
import type { Application } from "../application";
import type { RecordOrigin } from "../streams/errors";
import type { InputRecord } from "../streams/runtime/types";
import type { Outbox } from "./outbox";
import { OFFSET_COMMIT_INTERVAL_MS, type OutboxSender, type OwedRecord } from "./outbox-sender";
import type { PartitionGroup } from "./partition-group";
import type { StepOutcome } from "./protocol";
import type { Restoration } from "./restoration";
import { RetryBackoff } from "./retry-backoff";
import type { SendSchedule } from "./send-schedule";
import type { CommitMode, TaskCommit } from "./task-commit";
import type { TaskCounters } from "./task-metrics";
import type { TaskOptions } from "./task-options";
import type { TaskMeta, TaskStorage } from "./task-storage";
import { processingFailure, uncaughtErrorPolicy } from "./uncaught-errors";

export interface TaskExecutorDeps {
  readonly options: TaskOptions;
  readonly storage: TaskStorage;
  readonly outbox: Outbox;
  readonly sender: OutboxSender;
  readonly restoration: Restoration;
  readonly work: TaskCommit;
  readonly input: PartitionGroup;
  readonly sends: SendSchedule;
  readonly counters: TaskCounters;
  readonly now: () => number;
  /** Stops the instance with `reason` (see `StreamTask.fail`). */
  readonly fail: (reason: string, at?: RecordOrigin, shutdownApplication?: boolean) => void;
}

export class TaskExecutor {
  private readonly options: TaskOptions;
  private readonly storage: TaskStorage;
  private readonly outbox: Outbox;
  private readonly sender: OutboxSender;
  private readonly restoration: Restoration;
  private readonly work: TaskCommit;
  private readonly input: PartitionGroup;
  private readonly sends: SendSchedule;
  private readonly counters: TaskCounters;
  /** Between the attempts of the `"retry"` uncaught-error policy. */
  private readonly backoff: RetryBackoff;
  /** When input was last processed, and whether that came within a commit interval of the time before (input keeps coming). */
  private inputProcessedAt = -Infinity;
  private streaming = false;

  constructor(private readonly deps: TaskExecutorDeps) {
    this.options = deps.options;
    this.storage = deps.storage;
    this.outbox = deps.outbox;
    this.sender = deps.sender;
    this.restoration = deps.restoration;
    this.work = deps.work;
    this.input = deps.input;
    this.sends = deps.sends;
    this.counters = deps.counters;
    this.backoff = new RetryBackoff(deps.options.retryBackoff);
  }

  /** Processing is attempted again at once: the retry back-off starts over (a new assignment, an operator's resume or skip). */
  retryAtOnce(): void {
    this.backoff.reset();
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
    return this.input.pace.loaded;
  }

  /**
   * When the next commit is due, as of `now`: at once, unless the task is under load — then one
   * commit interval after its last commit began, as Kafka Streams commits every
   * `commit.interval.ms` whatever each commit took (input gathers meanwhile, and a cached store's
   * updates collapse over it).
   */
  nextCommitAt(now = this.now()): number {
    return this.input.pace.loaded ? Math.max(now, this.work.startedAt + this.commitInterval) : now;
  }

  private get commitInterval(): number {
    return this.options.commitIntervalMs ?? OFFSET_COMMIT_INTERVAL_MS;
  }

  /** The last commit left input behind (its bounds were reached): the next step has work now. */
  get backlog(): boolean {
    return this.input.pace.backlog;
  }

  /**
   * One unit of work: send what is pending, then process one batch of input together with the
   * wall-clock punctuations due, commit, and send that. The first step of a RUNNING instance
   * creates its processors (their `init` may schedule punctuators: see `wakeAt`), even without
   * input. With `"when-due"`, a step while input keeps coming (input processed within a commit
   * interval of the time before) processes at once but leaves the commit to the first step once it is
   * due (`commitDueAt`), as Kafka Streams commits every `commit.interval.ms`: one storage commit
   * per interval instead of one per arrival, while queries already read what was processed; not
   * while a partition it sends to is watched (live subscribers see only what is committed).
   */
  async step(mode: CommitMode = "at-once"): Promise<StepOutcome> {
    const meta = this.storage.meta();
    if (!meta || meta.role !== "active") return "idle";
    if (meta.failure) {
      await this.input.noteStoppedInput(meta.taskId);
      return "blocked";
    }
    if (meta.state === "RESTORING" && !(await this.restoration.tryComplete())) return "idle";
    if (this.storage.meta()?.state !== "RUNNING") return "idle";
    // A send that failed for a while is tried again once its back-off ends, and nothing is processed meanwhile.
    if (this.sends.backingOffUntil(this.now()) !== undefined) return "waiting";
    // Before the retry's back-off: it holds back only the input it retries, not what earlier commits made.
    await this.sends.sendIfDue(this.now(), this.owedRecord());
    if (this.storage.meta()?.failure) return "blocked";
    if (this.sends.backingOffUntil(this.now()) !== undefined || this.backoff.waitingUntil(this.now()) !== undefined) return "waiting";
    // Only a run's steps leave out partitions known to end at the position (quiet-inputs.ts); a drain's fetch every one.
    const records = await this.fetchBatch(meta, mode === "when-due");
    if (this.storage.meta()?.failure) return "blocked";
    // Caught up: the group hears of the input processed once due (lag 0 means processed and
    // committed); the instance looks again for it (`progressDueAt`).
    if (records.length === 0) await this.sends.sending(() => this.sender.caughtUp(this.work.uncommitted ? "with-next-commit" : "now"));
    if (this.storage.meta()?.failure) return "blocked";
    const now = this.now();
    const current = this.work.processorOf(meta.incarnation);
    const punctuationDue = (current?.nextWallClockPunctuationMs() ?? Infinity) <= now;
    const commitDue = this.work.uncommitted !== undefined && (mode === "at-once" || (this.commitDueAt() ?? Infinity) <= now);
    if (records.length === 0 && current && !punctuationDue && !commitDue) return "idle";
    // Only commits of work pass the crash points; creating the processors is not one.
    const work = records.length > 0 || punctuationDue || commitDue;
    if (work) await this.options.onCommitStep?.("before-commit");
    if (records.length > 0) {
      this.streaming = now - this.inputProcessedAt < this.commitInterval;
      this.inputProcessedAt = now;
    }
    // Not while a partition it sends to is watched: a live subscriber sees only what is committed
    // (and sent), so it would wait out the commit interval that queries of the store do not.
    const defer = mode === "when-due" && records.length > 0 && this.streaming && !this.input.pace.loaded && !commitDue && !this.sender.watched(now);
    const committed = this.commit(meta, records, now, defer ? "when-due" : "at-once");
    if (committed === "blocked") await this.sends.beforeStopping();
    if (committed !== "committed" && committed !== "deferred") return committed;
    if (committed === "committed" && work) await this.options.onCommitStep?.("after-commit");
    if (!this.outbox.isEmpty() || records.length > 0) await this.sends.sendIfDue(now, this.owedRecord());
    if (this.storage.meta()?.failure) return "blocked";
    return records.length === 0 ? "idle" : "more";
  }

  /** When the work processed since the last commit must be committed: one commit interval after the last commit began (undefined: nothing uncommitted). */
  commitDueAt(): number | undefined {
    return this.work.uncommitted ? this.work.startedAt + this.commitInterval : undefined;
  }

  /**
   * When what the log and the group acknowledge is written down: by the next commit while input
   * keeps coming — under load, or commits of input within a commit interval of each other — else
   * at once. Until then the instance knows it in memory, and looks again once the offsets are due
   * (`progressDueAt`) in case no commit comes; a crash only sends the same batches and commits the
   * same offsets again.
   */
  private owedRecord(): OwedRecord {
    return this.input.pace.loaded || this.streaming || this.work.uncommitted ? "with-next-commit" : "now";
  }

  /** Fetches one batch from every input partition, from where processing has reached, committed or not (partition-group.ts). */
  private fetchBatch(meta: TaskMeta, skipQuiet: boolean): Promise<InputRecord[]> {
    const uncommitted = this.work.uncommitted;
    const positions = { ...this.storage.positions(), ...uncommitted?.reached };
    return this.input.fetchBatch(meta.taskId, positions, () => uncommitted === this.work.uncommitted, skipQuiet);
  }

  /**
   * Processes `records` with the punctuators due at `now` and commits them in one transaction
   * (task-commit.ts), or leaves the commit for later with `"when-due"`. On an uncaught error
   * everything since the last commit is dropped and the topology's policy applies (`"retry"`
   * backs off and does it all again later; the others stop the instance with the error).
   */
  private commit(meta: TaskMeta, records: readonly InputRecord[], now: number, mode: CommitMode): "committed" | "deferred" | StepOutcome {
    const result = this.work.commit(meta, records, now, mode);
    if (result === "superseded") return "idle";
    if (typeof result === "object") return this.onUncaughtError(result.failed, result.at);
    this.backoff.reset();
    return result;
  }

  /** The topology's uncaught-error policy for an error that rolled a commit back; `at`: the record it stopped at, if one caused it. */
  private onUncaughtError(error: unknown, at?: RecordOrigin): StepOutcome {
    const policy = uncaughtErrorPolicy(this.app.topology, error);
    this.counters.uncaughtError(policy);
    if (policy === "retry") {
      this.backoff.failed(this.now());
      return "waiting";
    }
    this.fail(processingFailure(error), at, policy === "shutdown-application");
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
    const retry = this.sends.backingOffUntil(this.now()) ?? this.backoff.waitingUntil(this.now());
    if (retry !== undefined) return retry;
    const meta = this.storage.meta()!;
    return this.work.processorOf(meta.incarnation)?.nextWallClockPunctuationMs();
  }

  /**
   * `wakeAt`'s progress owed to the log: output lingering, and input progress due to go to the
   * group (not while a retry backs off). Until both are done the group's offset stays behind the
   * input, and the input partition wakes its readers again while they lag (after a restart too).
   */
  progressDueAt(): number | undefined {
    if (!this.running()) return undefined;
    // Nothing goes to the log before a send back-off ends (`timersDueAt` has its end).
    if (this.sends.backingOffUntil(this.now()) !== undefined) return undefined;
    const send = this.sends.dueAt();
    if (this.backoff.waitingUntil(this.now()) !== undefined) return send;
    const at = Math.min(send ?? Infinity, this.sender.offsetsDueAt() ?? Infinity, this.commitDueAt() ?? Infinity);
    return at === Infinity ? undefined : at;
  }

  /** Whether the input partitions wake the instance again for the progress it owes (see `OutboxSender.echoedWhileOwed`). */
  progressEchoed(): boolean {
    return this.running() && this.sender.echoedWhileOwed();
  }

  /** An active instance that is RUNNING and not stopped by a failure: the only kind with work due. */
  running(): boolean {
    const meta = this.storage.meta();
    return meta !== undefined && meta.role === "active" && meta.state === "RUNNING" && !meta.failure;
  }

  /** Commits what was processed since the last commit now, if anything was (a commit that fails is rolled back, and its input processed again). */
  commitUncommitted(): void {
    const meta = this.storage.meta();
    if (this.work.uncommitted && meta) this.commit(meta, [], this.now(), "at-once");
  }

  private get app(): Application {
    return this.options.application;
  }

  private now(): number {
    return this.deps.now();
  }

  private fail(reason: string, at?: RecordOrigin, shutdownApplication = false): void {
    this.deps.fail(reason, at, shutdownApplication);
  }
}
