/**
 * One stream task instance: its lifecycle, and the one entry its Durable Object drives. It owns
 * the instance's storage (stores, checkpoints, input positions, outbox) and hands each piece to
 * the part that works on it: `step()` runs one unit of work (task-executor.ts), which fetches
 * input (partition-group.ts) and commits it in one storage transaction (task-commit.ts, I2); the
 * outbox then goes through the log's idempotent, fenced producer (send-schedule.ts says when,
 * outbox-sender.ts how), so a crash at any point repeats no record and loses none. Lifecycle
 * operations change the meta row as meta-transitions.ts says; restore batches are applied by
 * restoration.ts, input resets by reset-positions.ts, store reads answered by store-queries.ts;
 * the types that cross RPC are in protocol.ts.
 */
import type { Application } from "../application";
import { LogUnavailable } from "../log/errors";
import type { PushedFetch, WakeTold } from "../log/pushed-fetches";
import type { TopicPartition } from "../log/types";
import type { RecordOrigin } from "../streams/errors";
import { ageMs } from "./input-lag";
import type { AppliedReset, InputReset } from "./input-reset";
import { OutboxSender } from "./outbox-sender";
import { CHANGELOG_PHASE, Outbox } from "./outbox";
import { committedOffset } from "./committed-read";
import { assignedMeta, assignmentChange, isRevoked, resumesOnRepush, revivedMeta, suspendedMeta } from "./meta-transitions";
import { PartitionGroup } from "./partition-group";
import type { Assignment, RestoreBatch, RestoreReply, StepOutcome } from "./protocol";
import type { InputPositions } from "./record-collector";
import { moveInputPositions, resetPlan } from "./reset-positions";
import { Restoration, type RestoreRegistration } from "./restoration";
import { SendSchedule } from "./send-schedule";
import { skipDecision, type SkipOutcome } from "./skips";
import { DEFAULT_CACHE_LIMITS, SqliteStoreBackend, type SqliteKeyValueStore } from "./sqlite-stores";
import { StoreQueries } from "./store-queries";
import { TaskCommit, type CommitMode } from "./task-commit";
import { TaskExecutor } from "./task-executor";
import { TaskCounters, type TaskCountersSnapshot } from "./task-metrics";
import type { TaskOptions } from "./task-options";
import { TaskStorage, type TaskMeta } from "./task-storage";
import { topicPartition } from "../names";
import type { PacingInputs } from "./pacing";

export type { CommitMode } from "./task-commit";
export type { TaskOptions } from "./task-options";
export { StaleAssignment } from "./meta-transitions";

export class StreamTask {
  private readonly storage: TaskStorage;
  private readonly outbox: Outbox;
  private readonly stores: SqliteStoreBackend;
  private readonly sender: OutboxSender;
  private readonly restoration: Restoration;
  /** Processing, the work processed since the last commit, and the commit (task-commit.ts). */
  private readonly work: TaskCommit;
  /** The input partitions: fetches, and what they saw of ends and waiting records (partition-group.ts). */
  private readonly input: PartitionGroup;
  /** When the outbox goes to the log: lingering, and the back-off after sends that failed for a while (send-schedule.ts). */
  private readonly sends: SendSchedule;
  /** Reads of the instance's stores for interactive queries. */
  readonly queries: StoreQueries;
  /** Records processed, restored and applied as a standby, and commit latency (in memory). */
  readonly counters: TaskCounters;
  /** Steps: fetching, processing and committing input, the uncaught-error policy, and when work is due (task-executor.ts). */
  private readonly executor: TaskExecutor;

  constructor(private readonly options: TaskOptions) {
    const now = () => this.now();
    this.counters = new TaskCounters(options.clock);
    this.storage = new TaskStorage(options.storage);
    this.outbox = new Outbox(this.storage);
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
      owedMs: options.owedMs,
    });
    this.restoration = new Restoration({
      application: options.application,
      log: options.log,
      storage: this.storage,
      stores: this.stores,
      counters: this.counters,
    });
    const { storage, stores, outbox, sender, counters } = this;
    const application = options.application;
    this.work = new TaskCommit({ application, storage, stores, outbox, sender, counters, options, now });
    this.input = new PartitionGroup({
      application,
      storage,
      options,
      now,
      dropUncommitted: () => this.work.dropUncommitted(),
      fail: (reason) => this.fail(reason),
    });
    this.sends = new SendSchedule({ sender, storage, options, now });
    const { restoration, work, input, sends } = this;
    const fail = (reason: string, at?: RecordOrigin, shutdownApplication?: boolean) => this.fail(reason, at, shutdownApplication);
    this.executor = new TaskExecutor({ options, storage, outbox, sender, restoration, work, input, sends, counters, now, fail });
    // Through the running processor's record cache: queries read what was processed, committed or not.
    this.queries = new StoreQueries(this.stores, () => this.work.recordCache());
    // Store writes held during a transaction reach SQLite before it commits — unless they belong
    // to a deferred commit, which writes them itself; in-memory copies must not outlive a
    // rolled-back transaction or a wipe, and without them the uncommitted work is gone too.
    this.storage.onFlush(() => {
      if (!this.work.uncommitted) this.stores.flushWrites();
    });
    this.storage.onReset(() => {
      this.stores.forget();
      this.outbox.forget();
      this.sender.forget();
      this.work.dropUncommitted();
    });
  }

  /** The task is under load: fewer, larger commits (see task-executor.ts). */
  get loaded(): boolean {
    return this.executor.loaded;
  }

  /** When the next commit is due, as of `now` (see task-executor.ts). */
  nextCommitAt(now = this.now()): number {
    return this.executor.nextCommitAt(now);
  }

  /** The last commit left input behind (its bounds were reached): the next step has work now. */
  get backlog(): boolean {
    return this.executor.backlog;
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
    if (current && assignmentChange(current, assignment) === "same") {
      // The same assignment changes nothing, but it carries whether the application is shut down.
      if (assignment.halted !== undefined && current.failure === null) {
        this.executor.commitUncommitted();
        this.fail(assignment.halted);
        await this.sends.beforeStopping();
      }
      if (resumesOnRepush(current, assignment)) this.resume();
      return this.storage.meta()!;
    }
    // Work of the assignment before that was not committed is processed again under this one.
    this.work.dropProcessor();
    if (current && !this.outbox.isEmpty()) await this.flush();
    this.storage.transaction(() => {
      const before = this.storage.meta();
      this.outbox.clear();
      this.sender.forget();
      // A new assignment starts a new restoration (or none): `replayed` counts from here.
      this.storage.resetReplayed();
      this.storage.writeMeta(assignedMeta(before, assignment));
    });
    this.work.dropProcessor();
    this.executor.retryAtOnce();
    this.sends.reset();
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
    this.executor.commitUncommitted();
    return this.sender.flush();
  }

  /** Before a wipe: delivers what earlier commits left in the outbox; see outbox-sender.ts. */
  deliverBeforeWipe(): Promise<void> {
    return this.sender.deliverBeforeWipe();
  }

  /** Processed input the group does not know of yet. */
  hasUncommittedInput(): boolean {
    return this.sender.hasUncommittedInput();
  }

  /** The progress owed to the group and the book is due at the next look (a partition's echo asks for it). */
  owedDueNow(): void {
    this.sender.owedDueNow();
  }

  /** Commits the input progress to the group now, not when due (see `RECORD_OWED_MS`). */
  commitInputOffsets(): Promise<void> {
    return this.sender.commitInputOffsets("now");
  }

  /** One unit of work: send what is pending, process a batch of input, commit and send that (task-executor.ts). */
  step(mode: CommitMode = "at-once"): Promise<StepOutcome> {
    return this.executor.step(mode);
  }

  /** When the work processed since the last commit must be committed (undefined: nothing uncommitted). */
  commitDueAt(): number | undefined {
    return this.executor.commitDueAt();
  }

  /** When the instance must look again though nothing wakes it (undefined: nothing is due); the earlier of the two below. */
  wakeAt(): number | undefined {
    return this.executor.wakeAt();
  }

  /**
   * What `wakeAt` is made of, for the pacing policy (pacing.ts): its own timers (a retry back-off's
   * end, the earliest wall-clock punctuation), progress owed to the log and the group, and whether
   * the log wakes the instance again for that progress (`TaskExecutor.progressEchoed`).
   */
  pendingWork(): Pick<PacingInputs, "timersDueAt" | "progressDueAt" | "progressEchoed"> {
    const { executor } = this;
    return { timersDueAt: executor.timersDueAt(), progressDueAt: executor.progressDueAt(), progressEchoed: executor.progressEchoed() };
  }

  /** A wake-up told of input: its push, where its partition ended, or nothing; `lookingAt`: the answer under load (partition-group.ts). */
  toldOfInput(pushed: PushedFetch | undefined, told: WakeTold | undefined, lookingAt?: number): void {
    this.input.told(pushed, told, this.executor.running(), lookingAt);
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  /** The timestamp of the oldest input record not yet processed, as known without calling the log (null: none known to wait). */
  oldestWaiting(): number | null {
    const meta = this.storage.meta();
    if (meta?.role !== "active") return null;
    return this.input.oldestWaiting(meta.taskId);
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
    this.work.dropProcessor();
    this.input.forgetPushed();
    this.storage.transaction(() => {
      const meta = this.storage.meta();
      if (!meta) return;
      // The processed count lives in the rows a wipe deletes: it carries over in the meta row.
      const processedBefore = this.storage.processedTotal();
      this.storage.clearState();
      this.outbox.clear();
      this.sender.forget();
      this.storage.writeMeta(revivedMeta(meta, processedBefore));
    });
    this.input.forgetHeads();
    return this.storage.meta()!;
  }

  /** Revocation: flush, then suspend. The checkpoint needs no writing: it is always current (I1). */
  async suspend(): Promise<TaskMeta | undefined> {
    const meta = this.storage.meta();
    if (!meta) return undefined;
    if (isRevoked(meta)) return meta;
    if (meta.state === "RUNNING") await this.flush();
    this.work.dropProcessor();
    this.storage.transaction(() => this.storage.writeMeta(suspendedMeta(this.storage.meta()!)));
    return this.storage.meta();
  }

  checkpoints(): ReadonlyMap<string, number> {
    return this.storage.checkpoints();
  }

  /**
   * A store's committed entries (`read` of SQLite, see committed-read.ts) with the offset of its
   * changelog partition `changelog` they reflect; `"waiting"` while a changelog batch of it waits
   * for the log. Synchronous: no commit can come between the two reads.
   */
  committedRead<T>(store: string, changelog: TopicPartition, read: (committed: SqliteKeyValueStore) => T): { value: T; offset: number | null } | "waiting" {
    const meta = this.storage.meta();
    const acked = meta ? this.sender.ackedChangelog(changelog, meta) : { ids: new Set<number>(), ends: [] };
    const waiting = this.storage
      .book()
      .batches.filter((b) => b.phase === CHANGELOG_PHASE && b.topic === changelog.topic && b.partition === changelog.partition && !acked.ids.has(b.id)).length;
    const offset = committedOffset({ checkpoint: this.storage.checkpoint(changelog), ackedEnds: acked.ends, waiting });
    return offset === "waiting" ? offset : { value: read(this.stores.keyValue(store)), offset };
  }

  replayed(): Map<string, number> {
    return this.storage.replayed();
  }

  /** Input partitions' ends as last fetched (by position key); none before the first fetch. */
  knownInputEnds(): ReadonlyMap<string, number> {
    return this.input.knownEnds();
  }

  positions(): InputPositions {
    return this.storage.positions();
  }

  committedPositions(): InputPositions {
    return this.sender.committedPositions();
  }

  /**
   * Per input partition, how far input is processed, committed and everything it implies sent:
   * the instance's own positions (its book is the truth, I2) once nothing is left to send, else
   * the offsets the group holds (committed only once everything before them was sent).
   */
  deliveredPositions(): InputPositions {
    return this.sender.unsentBatches() === 0 ? this.storage.positions() : this.sender.committedPositions();
  }

  /** Outbox batches not yet sent (acknowledged ones whose removal waits for the next commit are not counted). */
  pendingOutboxBatches(): number {
    return this.sender.unsentBatches();
  }

  metrics() {
    return this.work.metrics();
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
    this.work.dropUncommitted();
    // Its lag is looked at again with the next run (see `PartitionGroup.noteStoppedInput`).
    this.input.lookAgainWhenStopped();
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
      this.executor.commitUncommitted();
      this.fail(reason);
      await this.sends.beforeStopping();
    }
    return this.storage.meta();
  }

  /** The coordinator knows of the shutdown this instance asked for. */
  shutdownReported(): void {
    this.updateMeta(() => ({ shutdownRequested: false }));
  }

  /** An operator resumes the instance: its failure is cleared and processing is attempted again at once. */
  resume(): TaskMeta | undefined {
    this.executor.retryAtOnce();
    this.sends.reset();
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
    this.executor.retryAtOnce();
    const record = { topic: at.topic, partition: at.partition, offset: at.offset };
    this.updateMeta((m) => ({ skips: [...(m.skips ?? []), record], failure: halted ?? null, failedAt: null }));
    return { status: "skipped", already: false };
  }

  /**
   * Applies the application's input reset `reset` to this task (reset-positions.ts): each input
   * partition of a topic reset moves to the target, never back; the records skipped are never
   * processed, and the stores keep what they reflect. What was processed before is committed
   * first; a repeat of the same reset answers what was done and changes nothing. Undefined on an
   * instance that is not active (the coordinator asks the active one again).
   */
  async resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined> {
    const meta = this.storage.meta();
    if (meta?.role !== "active") return undefined;
    if (meta.lastReset?.id === reset.id) return meta.lastReset;
    const plan = await resetPlan(this.app, this.options.log, meta.taskId, reset);
    this.executor.commitUncommitted();
    const applied = moveInputPositions(this.storage, reset, plan, halted);
    // Fetches and heads from before the move say nothing of where the instance is now.
    this.input.forgetPushed();
    this.input.forgetHeads((applied?.partitions ?? []).filter((p) => p.to > p.from).map((p) => topicPartition(p)));
    if (this.storage.meta()?.failure === null) this.executor.retryAtOnce();
    return applied;
  }

  /** The counters of `GET /metrics` and the status page, with the durable total of records processed (not the in-memory one, which a restart zeroes). */
  countersSnapshot(): TaskCountersSnapshot {
    const snapshot = this.counters.snapshot();
    return { ...snapshot, processed: { total: this.storage.processedTotal(), rate: snapshot.processed.rate } };
  }
}
