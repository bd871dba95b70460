/**
 * `TaskObject`: one instance of one stream task at one placement (named `<task>@<placement>`).
 * The class wires storage, alarms and RPC to `StreamTask`; lifecycle operations run one at a
 * time. Processing is driven by the object itself: appends to its input wake it (a wake-up runs
 * steps while there is input), an in-memory timer with the alarm behind it looks again at what is
 * due, and once nothing is due nothing is armed again, so an idle task costs nothing.
 * A task processes what arrives at once, and while input keeps coming commits once per commit
 * interval (`COMMIT_INTERVAL_MS`, Kafka's `commit.interval.ms`; see `StreamTask.step`); a task
 * under load (see `StreamTask.loaded`) lets input gather for the commit interval before its next
 * commit, so that it commits less often, with more (and its record cache collapses more).
 * The same one alarm serves every wall-clock punctuator of the task and the back-off of the
 * `"retry"` uncaught-error policy (`StreamTask.timersDueAt`).
 */
import { DurableObject } from "cloudflare:workers";
import { WakeRuns } from "../src/task/wake-runs";
import { EarliestTimer } from "../src/util/timer";
import type { PushedFetch } from "../src/log/pushed-fetches";
import { EarliestAlarm } from "../src/util/alarm";
import { LogUnavailable } from "../src/log/errors";
import {
  COMMIT_STEPS,
  type Assignment,
  type CommitStep,
  type InstanceAck,
  type LifecycleStep,
  type QueryAnswer,
  type RestoreBatch,
  type RestoreProgress,
  type RestoreReply,
  type ScanAnswer,
  type ScanBounds,
  type SkipAnswer,
  type StepOutcome,
  type WindowsAnswer,
} from "../src/task/protocol";
import { StreamTask } from "../src/task/stream-task";
import { LifecycleHistory, type LifecycleSnapshot } from "../src/task/lifecycle";
import type { TaskCountersSnapshot } from "../src/task/task-metrics";
import type { TaskMeta } from "../src/task/task-storage";
import { CrashPoints } from "../src/util/crash-points";
import { holds } from "../src/coordinator/holds";
import { withTimeout } from "../src/util/timeout";
import { instanceName } from "../src/names";
import type { RegistrationEnd } from "../src/restore/suspensions";
import { positionKey } from "../src/task/record-collector";
import { describeTask, describeWithoutLog, type PartialTaskDescription, type TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { logEvent } from "../src/util/log";
import { backoffDelay } from "../src/util/backoff";
import { instanceReport, reportDue, type InstanceReport } from "../src/summary/summary";
import type { RecordOrigin } from "../src/streams/errors";
import type { AppliedReset, InputReset } from "../src/task/input-reset";
import { describeRecord } from "../src/task/skips";
import type { ObjectHost, TaskObjectCalls } from "./calls";

/** Registering and unregistering with the restore worker wait at most this long (KAFKA-10199). */
const RESTORE_CALL_TIMEOUT_MS = 5_000;
/** Work per alarm before yielding (the next alarm continues): keeps one invocation short. */
const STEPS_PER_ALARM = 50;
/** After a failed attempt (the log or another object not answering), the next waits this long, doubling up to MAX_RETRY_DELAY_MS. */
const RETRY_DELAY_MS = 1_000;
const MAX_RETRY_DELAY_MS = 30_000;
/**
 * Armed before every lifecycle operation: if the object dies at any await of it, this alarm
 * reconciles what the outside knows (subscriptions, restore registration) with its durable state.
 */
const RECOVERY_DELAY_MS = 1_000;
/** A RESTORING instance makes sure its restore worker knows it, this often at first (doubling up to MAX_RETRY_DELAY_MS). */
const RESTORING_CHECK_MS = 2_000;
/** Polling a remote log that sends no wake-ups: the first wait after finding nothing, doubling up to MAX_POLL_MS. */
const POLL_MS = 500;
const MAX_POLL_MS = 15_000;
/**
 * What the log also brings an instance back for (input waiting under load, output lingering, input
 * progress due: its input partitions wake readers that lag) is looked at by an in-memory timer;
 * the alarm stands behind it this much later, in case the object dies first: one durable alarm
 * per few seconds of a busy instance, not one per commit interval.
 */
const BACKSTOP_MS = 5_000;
/** Key in the object's KV storage: the state of the instance that the outside was last brought in line with. */
const SYNCED_KEY = "synced";
/** The longest back-off between attempts of the `"retry"` policy (it doubles from RETRY_BACKOFF_MS). */
const MAX_RETRY_BACKOFF_MS = 60_000;

/** What `GET /metrics` and the status page show of one instance. */
export interface InstanceMetrics extends TaskDescription {
  readonly counters: TaskCountersSnapshot;
  readonly lifecycle: LifecycleSnapshot;
}

/**
 * The task object. A Worker does not export this class itself but the one `defineEdgeStreams`
 * makes of it, which passes the host (the application, its log and configuration, the other
 * objects) to this constructor.
 */
export class TaskObject extends DurableObject implements TaskObjectCalls {
  /** The object's one alarm (see EarliestAlarm). */
  private readonly alarms = new EarliestAlarm(this.ctx.storage);
  /** Looks again, in memory, at what the log also brings the instance back for (see BACKSTOP_MS). */
  private readonly timer = new EarliestTimer(() => this.lookNow());
  private readonly task: StreamTask;
  private readonly serial = new Serial();
  /** Crashes planned by the fault route and tests: at a commit step of the next commit `drain` runs, or at a lifecycle step. */
  private readonly crashes: CrashPoints<CommitStep | LifecycleStep>;
  private draining = false;
  private readonly lifecycle: LifecycleHistory;
  /** Failed attempts in a row (alarm rounds that threw, or could not bring the outside in line). */
  private failures = 0;
  /** Checks made in a row while restoring, for the fallback alarm's back-off. */
  private restoringChecks = 0;
  /** The log sends no wake-ups (a remote one): the task polls its input (see `schedulePoll`). */
  private readonly polls: boolean;
  /** Polls in a row that found no input, for the back-off. */
  private idlePolls = 0;
  /** The last report sent to the restore worker shard, and when (see `report`). */
  private lastReport: { report: InstanceReport; at: number } | undefined;
  /** Orders this object's reports, across its restarts too (it starts from the clock). */
  private reportSeq = Date.now() * 1_000;
  /** Each changelog's end as the last restore batch saw it (in memory, for reports). */
  private readonly changelogEnds = new Map<string, number>();
  /** How wake-ups meet runs in progress (src/task/wake-runs.ts). */
  private readonly wakeRuns = new WakeRuns();

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    this.lifecycle = new LifecycleHistory(ctx.storage.kv);
    this.crashes = new CrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    const { application, config, log } = host;
    this.polls = !log.capabilities.wakesReaders;
    this.task = new StreamTask({
      application,
      log,
      storage: ctx.storage,
      cacheMaxBytes: config.STATESTORE_CACHE_MAX_BYTES,
      commitIntervalMs: config.COMMIT_INTERVAL_MS,
      lingerMs: config.LINGER_MS,
      retryBackoff: { initialMs: config.RETRY_BACKOFF_MS, maxMs: Math.max(config.RETRY_BACKOFF_MS, MAX_RETRY_BACKOFF_MS) },
      onInputReset: (tp, from, to) => {
        const meta = this.task.meta();
        if (meta) this.lifecycle.record("input-reset", meta, `${tp.topic}/${tp.partition}: records ${from}…${to - 1} were gone (retention); resumed at ${to}`);
      },
      onCommitStep: async (step) => {
        if (this.draining) await this.crashes.reachAfterWrites(step);
      },
    });
  }

  /**
   * Takes an assignment from the coordinator, subscribes to its input, registers for restoration
   * when restoring or standing by, and starts working. The coordinator repeats assignments (after
   * a crash, and in its sweep): the same one again repairs subscriptions and registration.
   */
  async assign(assignment: Assignment): Promise<InstanceAck> {
    return this.serial.run(async () => {
      await this.schedule(RECOVERY_DELAY_MS);
      const before = this.task.meta();
      const meta = await this.task.assign(assignment);
      if (!before || before.epoch !== meta.epoch || before.role !== meta.role) {
        this.lifecycle.record("assign", meta, before ? `was ${before.role} at epoch ${before.epoch}` : undefined);
      }
      // The same assignment again may halt the instance (application shut down) or resume it (lifted).
      const now = this.task.meta()!;
      if (before?.failure === null && now.failure !== null) this.lifecycle.record("failed", now, now.failure);
      if (before?.failure && now.failure === null) this.lifecycle.record("resumed", now, `was stopped: ${before.failure}`);
      this.noteRunning(before);
      await this.crashes.reachAfterWrites("assign:after-meta");
      await this.reconcileOutside(true);
      await this.schedule(0);
      this.report();
      return ack(this.task.meta()!);
    });
  }

  /**
   * The coordinator's sweep: when this instance holds `assignment` (its role; for an active or
   * standby also its epoch), repairs what the outside knows of it and applies the shutdown state,
   * as a repeated assignment would. It never takes an assignment it does not hold: one that lost
   * its storage must get a new epoch (its producer sequences start over), so it answers what it
   * holds, if anything, and the coordinator assigns again.
   */
  async check(assignment: Assignment): Promise<InstanceAck | undefined> {
    return this.serial.run(async () => {
      const meta = this.task.meta();
      if (!meta || !holds(meta, assignment)) return meta && ack(meta);
      if (assignment.role !== "idle") await this.task.assign(assignment);
      await this.reconcileOutside(true);
      await this.schedule(0);
      return ack(this.task.meta()!);
    });
  }

  /** Revocation: flush, suspend (idle), stop listening. Acknowledged once idle durably; the rest follows. */
  async revoke(): Promise<InstanceAck | undefined> {
    return this.serial.run(async () => {
      await this.schedule(RECOVERY_DELAY_MS);
      const before = this.task.meta();
      const meta = await this.task.suspend();
      // Only a migration revokes an active instance; other revocations retire standbys.
      if (meta && before && before.role !== "idle") this.lifecycle.record(before.role === "active" ? "migrated-away" : "revoke", meta, `was ${before.role}`);
      await this.crashes.reachAfterWrites("revoke:after-suspend");
      await this.reconcileOutside();
      this.report();
      return meta && ack(meta);
    });
  }

  /**
   * Input arrived (or may have). An instance that would look at once runs now, in the
   * background of the answer, as its alarm would (no durable alarm write, no alarm to wait for);
   * under load it looks at its next commit, which the answer names: the partition need not wake
   * it again before then. A run that dies here is made up for as a lost wake-up is: the partition
   * wakes its readers again while they lag. `pushed`, after an append, is the fetch a caught-up
   * instance makes next: its run takes the input from it without calling the partition.
   */
  async wake(pushed?: PushedFetch): Promise<number | null> {
    const meta = this.task.meta();
    if (meta?.role !== "active") return null;
    if (pushed) this.task.offerFetch(pushed);
    const at = this.task.nextCommitAt();
    const action = this.wakeRuns.wake(at, Date.now());
    if (action === "run") this.runInBackground();
    else if (action === "arm") await this.lookBy(at);
    return this.task.loaded ? at : null;
  }

  /** The object's one alarm: a run (see `run`). */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.run();
  }

  /**
   * Brings the outside in line with the instance's durable state (see `reconcileOutside`), then
   * processes, and arms the alarm (or the timer) for what comes next. It never fails: a failure is logged and the
   * alarm armed again with a back-off (Cloudflare drops an alarm after 6 failed retries).
   */
  private async run(): Promise<void> {
    // While a commit crash is planned, only `drain` runs commits, so the test chooses where it
    // dies; the alarm comes back for whatever work the crash leaves.
    if (isCommitStep(this.crashes.pending)) {
      await this.schedule(RECOVERY_DELAY_MS);
      return;
    }
    this.wakeRuns.started();
    try {
      const { outcome, lingering, synced } = await this.serial.run(async () => {
        const synced = await this.reconcileOutside();
        return { ...(await this.steps(STEPS_PER_ALARM, true)), synced };
      });
      this.failures = synced ? 0 : this.failures + 1;
      if (!synced) await this.schedule(this.retryDelay());
      if (lingering) await this.lookBy(this.task.nextCommitAt());
      else if (outcome === "more") await this.schedule(0);
      await this.scheduleRestoringCheck();
      await this.schedulePoll(outcome);
      this.report();
    } catch (error) {
      this.failures++;
      logEvent("task.alarm-failed", { ...this.identity(), error: String(error) }, "warn");
      await this.schedule(this.retryDelay());
    } finally {
      // A wake-up no step took: input is waiting, which the log also brings the instance back for.
      if (this.wakeRuns.ended()) await this.lookBy(this.task.nextCommitAt());
      await this.scheduleWake();
    }
    await this.reportShutdown();
  }

  /**
   * Tells the restore worker shard of this instance what it is now, for the application summary
   * (src/summary/summary.ts) — from what the instance knows without calling the log: its meta row,
   * its checkpoints and positions, and the ends its last fetches and restore batches saw. Sent at
   * once when its role, state, epoch, incarnation or failure changed or when it caught up, else at
   * most every REPORT_INTERVAL_MS; never awaited (not on the processing path), and a report that
   * fails is sent again with the next one.
   */
  private report(): void {
    const report = this.currentReport();
    const now = Date.now();
    if (!report || !reportDue(this.lastReport, report, now)) return;
    const sent = { report, at: now };
    this.lastReport = sent;
    const worker = this.host.objects.restoreWorker(this.host.restoreWorkerNameOf(report));
    this.ctx.waitUntil(
      worker.report(report).catch((error: unknown) => {
        if (this.lastReport === sent) this.lastReport = undefined;
        logEvent("task.report-failed", { task: report.taskId, placement: report.placement, error: String(error) }, "debug");
      }),
    );
  }

  private currentReport(): InstanceReport | undefined {
    const meta = this.task.meta();
    if (!meta) return undefined;
    return instanceReport({
      meta,
      changelogs: this.host.application.changelogPartitions(meta.taskId),
      checkpoints: this.task.checkpoints(),
      changelogEnds: this.changelogEnds,
      input: () => ({
        partitions: this.host.application.inputPartitions(meta.taskId),
        positions: this.task.positions(),
        ends: this.task.knownInputEnds(),
        oldestWaiting: this.task.oldestWaiting(),
      }),
      seq: ++this.reportSeq,
    });
  }

  private retryDelay(): number {
    return backoffDelay(RETRY_DELAY_MS, MAX_RETRY_DELAY_MS, Math.max(this.failures - 1, 0));
  }

  private identity(): { task?: string; placement?: string; epoch?: number; incarnation?: number } {
    const meta = this.task.meta();
    return meta ? { task: meta.taskId, placement: meta.placement, epoch: meta.epoch, incarnation: meta.incarnation } : {};
  }

  /**
   * A restoring active instance looks again now and then (backing off while it stays so): it makes
   * sure its restore worker still knows it, and completes when the changelogs turn out restored.
   */
  private async scheduleRestoringCheck(): Promise<void> {
    const meta = this.task.meta();
    if (meta?.role !== "active" || meta.state !== "RESTORING") {
      this.restoringChecks = 0;
      return;
    }
    this.restoringChecks++;
    // The next check repeats the registration: idempotent at the restore worker, cheap here.
    if (this.restoringChecks > 1) this.ctx.storage.kv.delete(SYNCED_KEY);
    await this.schedule(backoffDelay(RESTORING_CHECK_MS, MAX_RETRY_DELAY_MS, this.restoringChecks - 1));
  }

  /**
   * A remote log (LOG_BACKEND=upstash) wakes no one: a running active instance polls its input,
   * backing off while none comes (POLL_MS doubling to MAX_POLL_MS), at once again when some did.
   */
  private async schedulePoll(outcome: StepOutcome): Promise<void> {
    const meta = this.task.meta();
    if (!this.polls || meta?.role !== "active" || meta.state !== "RUNNING") return;
    this.idlePolls = outcome === "idle" ? this.idlePolls + 1 : 0;
    if (outcome === "idle") await this.schedule(backoffDelay(POLL_MS, MAX_POLL_MS, this.idlePolls - 1));
  }

  /**
   * Arms the alarm for the task's next punctuation or retry, if it has one (and nothing sooner is
   * set); progress owed to the log is looked at with `lookBy`.
   */
  private async scheduleWake(): Promise<void> {
    const timers = this.task.timersDueAt();
    if (timers !== undefined) await this.schedule(Math.max(0, timers - Date.now()));
    const progress = this.task.progressDueAt();
    if (progress !== undefined) await this.lookBy(progress);
  }

  /**
   * Looks again by `at` at what the log also brings the instance back for: with the in-memory
   * timer, the alarm behind it (BACKSTOP_MS). A remote log wakes no one: there the alarm does it.
   */
  private async lookBy(at: number): Promise<void> {
    if (this.polls) return this.schedule(Math.max(0, at - Date.now()));
    await this.schedule(Math.max(0, at + BACKSTOP_MS - Date.now()));
    this.timer.armBy(at);
  }

  /** The timer fired: as a wake-up that looks now (a run in progress takes it, see WakeRuns). */
  private lookNow(): void {
    const now = Date.now();
    if (this.wakeRuns.wake(now, now) === "run") this.runInBackground();
  }

  /** A run in the background of the current call (a wake-up's or the timer's); one that dies is made up for as a lost wake-up is. */
  private runInBackground(): void {
    this.ctx.waitUntil(this.run().catch((error: unknown) => logEvent("task.background-run-failed", { ...this.identity(), error: String(error) }, "warn")));
  }

  /**
   * Makes what other objects know of this instance match its durable state: it is subscribed to
   * its input partitions exactly when active, and registered with its placement's restore worker
   * exactly when restoring or standing by (for its current incarnation, epoch and role), with the
   * restore worker shard its task hashes to. Done once per state and shard (what was last brought
   * in line is kept in storage), or again with `force`.
   * False when it could not be done now (the alarm tries again).
   */
  private async reconcileOutside(force = false): Promise<boolean> {
    const meta = this.task.meta();
    if (!meta) return true;
    const goal = `${outsideGoal(meta)}/${this.host.restoreWorkerNameOf(meta)}`;
    if (!force && this.ctx.storage.kv.get<string>(SYNCED_KEY) === goal) return true;
    try {
      const name = instanceName(meta);
      await Promise.all(
        this.host.application
          .inputPartitions(meta.taskId)
          .map(async (tp) => (meta.role === "active" ? this.host.objects.partition(tp).subscribe(name) : this.host.objects.partition(tp).unsubscribe(name))),
      );
      await this.crashes.reachAfterWrites("sync:after-subscriptions");
      if (!(await this.syncRestoreRegistration(meta))) return false;
    } catch (error) {
      logEvent("task.reconcile-failed", { ...this.identity(), error: String(error) }, "warn");
      return false;
    }
    this.ctx.storage.kv.put(SYNCED_KEY, goal);
    return true;
  }

  /**
   * An uncaught error chose `"shutdown-application"`: the coordinator stops every task. Called
   * outside `serial`, because the coordinator calls back (`halt`) while it answers. Until it has
   * answered, the request stays in storage and a later alarm asks again.
   */
  private async reportShutdown(): Promise<void> {
    const meta = this.task.meta();
    if (!meta?.shutdownRequested) return;
    try {
      await this.host.objects
        .coordinator()
        .shutdownApplication({ taskId: meta.taskId, placement: meta.placement, reason: meta.failure ?? "an uncaught error" });
      this.task.shutdownReported();
    } catch (error) {
      logEvent("task.shutdown-report-failed", { task: meta.taskId, placement: meta.placement, error: String(error) }, "warn");
      await this.schedule(RETRY_DELAY_MS);
    }
  }

  /** The application was shut down: an instance still processing stops, with `reason`. */
  async halt(reason: string): Promise<TaskDescription> {
    return this.serial.run(async () => {
      const before = this.task.meta();
      const meta = await this.task.halt(reason);
      if (meta && before?.failure === null) this.lifecycle.record("failed", meta, reason);
      this.report();
      return this.describeNow();
    });
  }

  /** An operator clears the instance's failure: it processes again at once. */
  async resume(): Promise<TaskDescription> {
    return this.serial.run(async () => {
      const before = this.task.meta();
      const meta = this.task.resume();
      if (meta && before?.failure) this.lifecycle.record("resumed", meta, `was stopped: ${before.failure}`);
      await this.schedule(0);
      this.report();
      return this.describeNow();
    });
  }

  /**
   * An operator passes over the record the instance stopped at (src/task/skips.ts), and it runs
   * again (stays stopped with `halted` while the application is shut down). The alarm is armed
   * first; the skip, the cleared failure and the history entry are one write; so a crash after it
   * leaves an instance that processes on its own, and the request repeated answers that it was
   * done. Refused when the instance is not stopped at that record.
   */
  async skip(at: RecordOrigin, halted?: string): Promise<SkipAnswer> {
    return this.serial.run(async () => {
      await this.schedule(0);
      const before = this.task.meta();
      const outcome = this.task.skip(at, this.lifecycle.snapshot().lastSkipped, halted);
      if (outcome.status === "refused") return outcome;
      const meta = this.task.meta()!;
      if (!outcome.already) this.lifecycle.record("skipped", meta, `${describeRecord(at)} passed over (was stopped: ${before?.failure})`, { skipped: at });
      await this.crashes.reachAfterWrites("skip:after-write");
      this.report();
      return { status: "skipped" as const, already: outcome.already, task: await this.describeNow() };
    });
  }

  /**
   * Applies an input reset of the application to this task (src/task/input-reset.ts) and has the
   * group hear of the new positions. The coordinator repeats it until it is answered; a reset
   * already applied answers what it did. Undefined when this instance is not the active one.
   */
  async resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined> {
    return this.serial.run(async () => {
      await this.schedule(RECOVERY_DELAY_MS);
      const before = this.task.meta();
      const applied = await this.task.resetInput(reset, halted);
      const meta = this.task.meta();
      if (!applied || !meta) return applied;
      if (before?.lastReset?.id !== reset.id) {
        const skipped = applied.partitions.reduce((n, p) => n + p.skipped, 0);
        const moved = applied.partitions.filter((p) => p.skipped > 0).map((p) => `${p.topic}/${p.partition} ${p.from}→${p.to}`);
        this.lifecycle.record("offsets-reset", meta, `input reset ${reset.id}: ${moved.join(", ") || "nothing to skip"}`, { resetSkipped: skipped });
        if (before?.failure && meta.failure === null) this.lifecycle.record("resumed", meta, `was stopped: ${before.failure}`);
      }
      // The group hears of the new positions now (else with the instance's next offset commit).
      await this.task
        .commitInputOffsets()
        .catch((error: unknown) => logEvent("task.reset-commit-failed", { ...this.identity(), error: String(error) }, "warn"));
      await this.schedule(0);
      this.report();
      return applied;
    });
  }

  /** Runs steps now until there is no work (or `maxSteps`), and commits the input processed; says how many did work. Never lingers. */
  async drain(maxSteps = 1_000): Promise<{ worked: number; outcome: StepOutcome }> {
    const result = await this.serial.run(async () => {
      this.draining = true;
      try {
        // A drain that dies (a planned crash) leaves an alarm to finish its work without the caller.
        if (this.task.meta()?.role === "active") await this.schedule(RECOVERY_DELAY_MS);
        await this.reconcileOutside();
        const { worked, outcome } = await this.steps(maxSteps, false);
        // A drain leaves nothing for later: lingering output goes to the log, and the input it processed to the group, now.
        if (outcome === "idle") await this.task.flush();
        await this.scheduleWake();
        this.report();
        return { worked, outcome };
      } finally {
        this.draining = false;
      }
    });
    await this.reportShutdown();
    return result;
  }
  /**
   * Runs steps while there is work, at most `maxSteps`. With `linger` (a run: the alarm's or a
   * wake-up's), stops after a commit that took all the input there was: under load (`lingering`) the caller resumes a
   * little later; otherwise, unless a wake-up came meanwhile, another fetch now would only find
   * nothing, and what is appended next wakes the instance. (A log that wakes no one is polled:
   * there the steps go on until one finds nothing.)
   */
  private async steps(maxSteps: number, linger: boolean): Promise<{ worked: number; outcome: StepOutcome; lingering: boolean }> {
    const before = this.task.meta();
    let worked = 0;
    let outcome: StepOutcome = "idle";
    try {
      while (worked < maxSteps) {
        // A run commits when due (Kafka's commit interval), a drain at once.
        outcome = await this.task.step(linger ? "when-due" : "at-once");
        if (outcome !== "more") break;
        worked++;
        if (linger && !this.task.backlog) {
          if (this.task.loaded) return { worked, outcome, lingering: true };
          // Input came meanwhile (or may have, with a polled log): the next step takes it now.
          const woken = this.wakeRuns.takeWoken();
          if (!this.polls && !woken) return { worked, outcome: "idle", lingering: false };
        }
      }
    } finally {
      this.noteRunning(before);
      this.noteFailure(before);
    }
    return { worked, outcome, lingering: false };
  }

  /** Logs (and keeps) a failure that stopped the instance since `before`. */
  private noteFailure(before: TaskMeta | undefined): void {
    const now = this.task.meta();
    if (now?.failure && !before?.failure) this.lifecycle.record("failed", now, now.failure);
  }

  /** Logs (and keeps) the turn to RUNNING when the instance made it since `before`. */
  private noteRunning(before: TaskMeta | undefined): void {
    const now = this.task.meta();
    if (now?.state !== "RUNNING") return;
    if (before?.state === "RUNNING" && before.incarnation === now.incarnation && before.epoch === now.epoch) return;
    this.lifecycle.record("running", now);
  }

  async describe(): Promise<TaskDescription> {
    return this.serial.run(() => this.describeNow());
  }

  private async describeNow(): Promise<TaskDescription> {
    const description = await describeTask(this.task, this.host.application, this.host.log);
    // The ends it read are news for the reports too.
    for (const c of description.changelogs) this.changelogEnds.set(positionKey(c), Math.max(c.end, this.changelogEnds.get(positionKey(c)) ?? 0));
    return description;
  }

  /**
   * A point read of a store; only the RUNNING active instance answers with authority. With
   * `allowStale`, a standby or the restoring active answers from what it holds — only if it has
   * restored some of the store's changelog: one that restored nothing would call every key absent.
   */
  async query(store: string, key: string, allowStale = false): Promise<QueryAnswer> {
    const meta = this.task.meta();
    if (!meta) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", value: this.task.queries.get(store, key), stale: false };
    if (allowStale) {
      const restored = this.restoredOf(store, meta);
      return restored === null ? { status: "not-owner" } : { status: "ok", value: this.task.queries.get(store, key), stale: true, restored };
    }
    if (meta.role !== "active") return { status: "not-owner" };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** How far a standby or active instance holds `store`'s changelog; null when it restored none of it (or is idle). */
  private restoredOf(store: string, meta: TaskMeta): number | null {
    if (meta.role === "idle") return null;
    const changelog = this.host.application.changelogPartitions(meta.taskId).find((c) => c.store === store);
    return changelog ? (this.task.checkpoints().get(positionKey(changelog)) ?? null) : null;
  }

  /** The windows (or sessions) of a key in a window or session store; only the RUNNING active instance answers, or stale as `query`. */
  async windows(store: string, key: string, from: number, to: number, kind: "window" | "session", allowStale = false): Promise<WindowsAnswer> {
    const meta = this.task.meta();
    if (!meta) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", windows: this.task.queries.windows(store, key, from, to, kind) };
    if (allowStale) {
      const restored = this.restoredOf(store, meta);
      return restored === null
        ? { status: "not-owner" }
        : { status: "ok", windows: this.task.queries.windows(store, key, from, to, kind), stale: true, restored };
    }
    if (meta.role !== "active") return { status: "not-owner" };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** A bounded page of a store in key order; only the RUNNING active instance answers, or stale as `query`. */
  async scan(store: string, bounds: ScanBounds, allowStale = false): Promise<ScanAnswer> {
    const meta = this.task.meta();
    if (!meta) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", items: this.task.queries.scan(store, bounds) };
    if (allowStale) {
      const restored = this.restoredOf(store, meta);
      return restored === null ? { status: "not-owner" } : { status: "ok", items: this.task.queries.scan(store, bounds), stale: true, restored };
    }
    if (meta.role !== "active") return { status: "not-owner" };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** The description with counters and lifecycle history, for metrics and the status page. */
  async metrics(): Promise<InstanceMetrics> {
    return this.serial.run(async () => ({ ...(await this.describeNow()), counters: this.task.countersSnapshot(), lifecycle: this.lifecycle.snapshot() }));
  }

  private async restoreProgress(): Promise<RestoreProgress> {
    const description = await this.describe();
    const restored = description.changelogs.reduce((n, c) => n + c.restored, 0);
    const total = description.changelogs.reduce((n, c) => n + c.end, 0);
    return { restored, total };
  }

  /**
   * A TaskCorrupted condition (fault route, or reported): close dirty, wipe, revive, restore. A
   * report about an incarnation already wiped changes nothing. The wipe is one transaction; after
   * it, the instance is RESTORING as a new incarnation, and whatever of the rest a crash cuts
   * short (telling the restore worker) the alarm armed first completes.
   */
  async corrupt(incarnation?: number): Promise<TaskDescription | PartialTaskDescription> {
    return this.serial.run(async () => {
      const before = this.task.meta();
      if (incarnation !== undefined && before && before.incarnation !== incarnation) return this.describeEvenWithoutLog();
      await this.schedule(RECOVERY_DELAY_MS);
      await this.task.deliverBeforeWipe();
      await this.crashes.reachAfterWrites("corrupt:after-deliver");
      this.task.wipe();
      const wiped = this.task.meta();
      if (before && wiped) this.lifecycle.record("wipe", wiped, `corrupted: incarnation ${before.incarnation} closed dirty and wiped`);
      await this.crashes.reachAfterWrites("corrupt:after-wipe");
      // The log may be what failed (fetches beyond the restore worker's retry budget): if it cannot
      // say yet whether there is anything to restore, the wiped instance registers anyway, and
      // completion is checked again as batches arrive.
      await this.task.tryCompleteRestoration().catch((error: unknown) => {
        if (!(error instanceof LogUnavailable)) throw error;
      });
      this.noteRunning(wiped);
      await this.reconcileOutside();
      await this.schedule(0);
      this.report();
      // The wipe is done: a log that cannot say its end offsets now must not make it look failed.
      return this.describeEvenWithoutLog();
    });
  }

  private describeEvenWithoutLog(): Promise<TaskDescription | PartialTaskDescription> {
    return this.describeNow().catch((error: unknown) => {
      if (error instanceof LogUnavailable) return describeWithoutLog(this.task, this.host.application);
      throw error;
    });
  }

  /**
   * A batch from the restore worker. Applied only at this instance's position and incarnation; an
   * active instance whose changelogs are all restored turns RUNNING and starts processing.
   */
  async applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply> {
    return this.serial.run(async () => {
      const reply = this.task.applyRestoreBatch(batch);
      this.changelogEnds.set(positionKey(batch), batch.end);
      this.report();
      if (reply.caughtUp && reply.role === "active" && reply.state === "RESTORING") {
        await this.schedule(RECOVERY_DELAY_MS);
        if (await this.task.tryCompleteRestoration()) {
          this.noteRunning(undefined);
          await this.crashes.reachAfterWrites("restore:after-running");
          await this.reconcileOutside();
          await this.schedule(0);
          this.report();
          return { ...reply, state: "RUNNING" as const };
        }
        // Caught up with an end that has moved on since: still work for the restore worker.
        return { ...reply, caughtUp: false };
      }
      return reply;
    });
  }

  /**
   * Registers with the placement's restore worker while restoring or standing by, else
   * unregisters (the restore worker takes rows of older incarnations as ended by a wipe). True
   * once the restore worker has taken it.
   */
  private async syncRestoreRegistration(meta: TaskMeta): Promise<boolean> {
    const registration = this.task.restoreRegistration();
    const workerName = this.host.restoreWorkerNameOf(meta);
    const worker = this.host.objects.restoreWorker(workerName);
    const instance = instanceName(meta);
    if (registration) {
      return withTimeout(
        worker.register({ ...registration, instance, taskId: meta.taskId, placement: meta.placement, worker: workerName }),
        RESTORE_CALL_TIMEOUT_MS,
        false,
      );
    }
    // Running now (restored), or revoked: only a revocation cuts a restoration or an update short.
    const end: RegistrationEnd = meta.state === "RUNNING" ? "finished" : "revoked";
    return withTimeout(
      worker.unregister(instance, meta.incarnation, end, meta.epoch).then(() => true),
      RESTORE_CALL_TIMEOUT_MS,
      false,
    );
  }

  /**
   * Fault route: the object's process dies at once; or at the given step of the next commit that
   * `drain` runs (so tests choose where; commits run by alarms are not interrupted); or the next
   * time one of its lifecycle operations reaches the given step.
   */
  async crash(at?: CommitStep | LifecycleStep): Promise<void> {
    if (!at) this.ctx.abort("injected crash");
    // After any operation already running, so the plan applies to the next one.
    await this.serial.run(() => this.crashes.plan(at));
  }

  private async schedule(delayMs: number): Promise<void> {
    await this.alarms.armBy(Date.now() + delayMs);
  }
}

function isCommitStep(step: CommitStep | LifecycleStep | undefined): step is CommitStep {
  return (COMMIT_STEPS as readonly string[]).includes(step ?? "");
}

/** The durable state the outside must know of: subscriptions follow the role, registration the restoring states. */
function outsideGoal(meta: TaskMeta): string {
  const restoring = meta.state === "RESTORING" || meta.state === "UPDATING";
  return `${meta.epoch}/${meta.incarnation}/${meta.role}/${restoring ? "restoring" : meta.state}`;
}

function ack(meta: TaskMeta): InstanceAck {
  const { taskId, placement, role, state, epoch, incarnation } = meta;
  return { taskId, placement, role, state, epoch, incarnation };
}
