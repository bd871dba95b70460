/**
 * `TaskObject`: one instance of one stream task at one placement (named `<task>@<placement>`).
 * The class wires storage, alarms and RPC to `StreamTask`; lifecycle operations run one at a
 * time. Processing is driven by the object itself: appends to its input wake it (a wake-up runs
 * steps while there is input), an in-memory timer with the alarm behind it looks again at what is
 * due, and once nothing is due nothing is armed again, so an idle task costs nothing. The logic is
 * in plain modules: runs and what they leave armed in src/task/task-runner.ts, when the instance
 * looks again in the pure pacing policy (src/task/pacing.ts), what other objects know of it in
 * src/task/outside-reconciliation.ts, its reports in src/summary/instance-reporter.ts, its history
 * in src/task/lifecycle.ts, its crash points in src/task/task-crash-points.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { PushedFetch } from "../src/log/pushed-fetches";
import { EarliestAlarm } from "../src/util/alarm";
import { LogUnavailable } from "../src/log/errors";
import { instanceAck, type Assignment, type CommitStep, type InstanceAck, type LifecycleStep, type QueryAnswer } from "../src/task/protocol";
import type { RestoreBatch, RestoreReply, ScanAnswer, ScanBounds, SkipAnswer, StepOutcome, WindowsAnswer } from "../src/task/protocol";
import { StreamTask } from "../src/task/stream-task";
import { LifecycleHistory, type LifecycleSnapshot } from "../src/task/lifecycle";
import type { TaskCountersSnapshot } from "../src/task/task-metrics";
import { TaskCrashPoints } from "../src/task/task-crash-points";
import { holds } from "../src/coordinator/holds";
import { describeTask, describeWithoutLog, restoreProgressOf, type PartialTaskDescription, type TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { logEvent } from "../src/util/log";
import type { RecordOrigin } from "../src/streams/errors";
import type { AppliedReset, InputReset } from "../src/task/input-reset";
import { describeRecord } from "../src/task/skips";
import { MAX_RETRY_BACKOFF_MS } from "../src/task/pacing";
import { TaskRunner } from "../src/task/task-runner";
import { OutsideReconciliation } from "../src/task/outside-reconciliation";
import { answerRead, readStanding, restoredOf, type NoRead } from "../src/task/read-standing";
import { InstanceReporter } from "../src/summary/instance-reporter";
import type { ObjectHost, TaskObjectCalls } from "./calls";

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
  private readonly task: StreamTask;
  private readonly serial = new Serial();
  /** Crashes planned by the fault route and tests: at a commit step of the next commit `drain` runs, or at a lifecycle step. */
  private readonly crashes: TaskCrashPoints;
  private readonly lifecycle: LifecycleHistory;
  private readonly runner: TaskRunner;
  private readonly outside: OutsideReconciliation;
  private readonly reports: InstanceReporter;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    this.lifecycle = new LifecycleHistory(ctx.storage.kv);
    this.crashes = new TaskCrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    const { application, config, log, objects } = host;
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
      onCommitStep: (step) => this.crashes.reachCommitStep(step),
    });
    this.outside = new OutsideReconciliation({
      task: this.task,
      inputPartitions: (taskId) => application.inputPartitions(taskId),
      partition: (tp) => objects.partition(tp),
      restoreWorkerNameOf: (meta) => host.restoreWorkerNameOf(meta),
      restoreWorker: (name) => objects.restoreWorker(name),
      kv: ctx.storage.kv,
      reachAfterWrites: (step) => this.crashes.reachAfterWrites(step),
    });
    this.reports = new InstanceReporter({
      instance: this.task,
      application,
      deliver: (report) => objects.restoreWorker(host.restoreWorkerNameOf(report)).report(report),
      background: (work) => ctx.waitUntil(work),
      now: Date.now(),
    });
    this.runner = new TaskRunner({
      task: this.task,
      serial: this.serial,
      outside: this.outside,
      lifecycle: this.lifecycle,
      crashes: this.crashes,
      // A log that sends no wake-ups (a remote one) is polled.
      polls: config.LOG_BACKEND === "upstash",
      alarm: this.alarms,
      background: (work) => ctx.waitUntil(work),
      report: () => this.report(),
      shutdownApplication: (request) => objects.coordinator().shutdownApplication(request),
    });
  }

  /**
   * Takes an assignment from the coordinator, subscribes to its input, registers for restoration
   * when restoring or standing by, and starts working. The coordinator repeats assignments (after
   * a crash, and in its sweep): the same one again repairs subscriptions and registration.
   */
  async assign(assignment: Assignment): Promise<InstanceAck> {
    return this.serial.run(async () => {
      await this.runner.armRecovery();
      const before = this.task.meta();
      const meta = await this.task.assign(assignment);
      this.lifecycle.noteAssigned(before, meta);
      this.lifecycle.noteRunning(before, this.task.meta());
      await this.crashes.reachAfterWrites("assign:after-meta");
      await this.outside.reconcile(true);
      await this.runner.armAtOnce();
      this.report();
      return instanceAck(this.task.meta()!);
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
      if (!meta || !holds(meta, assignment)) return meta && instanceAck(meta);
      if (assignment.role !== "idle") await this.task.assign(assignment);
      await this.outside.reconcile(true);
      await this.runner.armAtOnce();
      return instanceAck(this.task.meta()!);
    });
  }

  /** Revocation: flush, suspend (idle), stop listening. Acknowledged once idle durably; the rest follows. */
  async revoke(): Promise<InstanceAck | undefined> {
    return this.serial.run(async () => {
      await this.runner.armRecovery();
      const before = this.task.meta();
      const meta = await this.task.suspend();
      this.lifecycle.noteRevoked(before, meta);
      await this.crashes.reachAfterWrites("revoke:after-suspend");
      await this.outside.reconcile();
      this.report();
      return meta && instanceAck(meta);
    });
  }

  /** Input arrived (or may have): see `TaskRunner.wake`. */
  async wake(pushed?: PushedFetch): Promise<number | null> {
    return this.runner.wake(pushed);
  }

  /** The object's one alarm: a run (see `TaskRunner.run`). */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.runner.run();
  }

  private report(): void {
    this.reports.report(Date.now());
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
      await this.runner.armAtOnce();
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
      await this.runner.armAtOnce();
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
      await this.runner.armRecovery();
      const before = this.task.meta();
      const applied = await this.task.resetInput(reset, halted);
      const meta = this.task.meta();
      if (!applied || !meta) return applied;
      this.lifecycle.noteReset(reset, applied, before, meta);
      // The group hears of the new positions now (else with the instance's next offset commit).
      await this.task
        .commitInputOffsets()
        .catch((error: unknown) => logEvent("task.reset-commit-failed", { ...this.runner.identity(), error: String(error) }, "warn"));
      await this.runner.armAtOnce();
      this.report();
      return applied;
    });
  }

  /** Runs steps now until there is no work (or `maxSteps`), and commits the input processed; says how many did work. Never lingers. */
  async drain(maxSteps = 1_000): Promise<{ worked: number; outcome: StepOutcome }> {
    const result = await this.serial.run(() =>
      this.crashes.drain(async () => {
        // A drain that dies (a planned crash) leaves an alarm to finish its work without the caller.
        if (this.task.meta()?.role === "active") await this.runner.armRecovery();
        await this.outside.reconcile();
        const { worked, outcome } = await this.runner.steps(maxSteps, false);
        // A drain leaves nothing for later: lingering output goes to the log, and the input it processed to the group, now.
        if (outcome === "idle") await this.task.flush();
        await this.runner.armAfterDrain();
        this.report();
        return { worked, outcome };
      }),
    );
    await this.runner.reportShutdown();
    return result;
  }

  async describe(): Promise<TaskDescription> {
    return this.serial.run(() => this.describeNow());
  }

  private async describeNow(): Promise<TaskDescription> {
    const description = await describeTask(this.task, this.host.application, this.host.log);
    // The ends it read are news for the reports too.
    for (const c of description.changelogs) this.reports.sawChangelogEnd(c, c.end, true);
    return description;
  }

  private describeEvenWithoutLog(): Promise<TaskDescription | PartialTaskDescription> {
    return this.describeNow().catch((error: unknown) => {
      if (error instanceof LogUnavailable) return describeWithoutLog(this.task, this.host.application);
      throw error;
    });
  }

  /** A point read of a store; see `readStanding` for who answers. */
  async query(store: string, key: string, allowStale = false): Promise<QueryAnswer> {
    return this.read(store, allowStale, (stale) => ({ status: "ok", value: this.task.queries.get(store, key), stale: stale !== undefined, ...stale }));
  }

  /** The windows (or sessions) of a key in a window or session store, answered as `query`. */
  async windows(store: string, key: string, from: number, to: number, kind: "window" | "session", allowStale = false): Promise<WindowsAnswer> {
    return this.read(store, allowStale, (stale) => ({
      status: "ok",
      windows: this.task.queries.windows(store, key, from, to, kind),
      ...(stale && { stale: true, ...stale }),
    }));
  }

  /** A bounded page of a store in key order, answered as `query`. */
  async scan(store: string, bounds: ScanBounds, allowStale = false): Promise<ScanAnswer> {
    return this.read(store, allowStale, (stale) => ({ status: "ok", items: this.task.queries.scan(store, bounds), ...(stale && { stale: true, ...stale }) }));
  }

  /** A read of `store` by whoever may answer it (src/task/read-standing.ts). */
  private read<Ok>(store: string, allowStale: boolean, ok: (stale?: { restored: number }) => Ok): Promise<Ok | NoRead> {
    const changelogs = (taskId: string) => this.host.application.changelogPartitions(taskId);
    const standing = readStanding(this.task.meta(), allowStale, (meta) => restoredOf(store, meta, changelogs(meta.taskId), this.task.checkpoints()));
    return answerRead(standing, ok, async () => restoreProgressOf(await this.describe()));
  }

  /** The description with counters and lifecycle history, for metrics and the status page. */
  async metrics(): Promise<InstanceMetrics> {
    return this.serial.run(async () => ({ ...(await this.describeNow()), counters: this.task.countersSnapshot(), lifecycle: this.lifecycle.snapshot() }));
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
      await this.runner.armRecovery();
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
      this.lifecycle.noteRunning(wiped, this.task.meta());
      await this.outside.reconcile();
      await this.runner.armAtOnce();
      this.report();
      // The wipe is done: a log that cannot say its end offsets now must not make it look failed.
      return this.describeEvenWithoutLog();
    });
  }

  /**
   * A batch from the restore worker. Applied only at this instance's position and incarnation; an
   * active instance whose changelogs are all restored turns RUNNING and starts processing.
   */
  async applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply> {
    return this.serial.run(async () => {
      const reply = this.task.applyRestoreBatch(batch);
      this.reports.sawChangelogEnd(batch, batch.end);
      this.report();
      if (reply.caughtUp && reply.role === "active" && reply.state === "RESTORING") {
        await this.runner.armRecovery();
        if (await this.task.tryCompleteRestoration()) {
          this.lifecycle.noteRunning(undefined, this.task.meta());
          await this.crashes.reachAfterWrites("restore:after-running");
          await this.outside.reconcile();
          await this.runner.armAtOnce();
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
   * Fault route: the object's process dies at once; or at the given step of the next commit that
   * `drain` runs (so tests choose where; commits run by alarms are not interrupted); or the next
   * time one of its lifecycle operations reaches the given step.
   */
  async crash(at?: CommitStep | LifecycleStep): Promise<void> {
    if (!at) this.ctx.abort("injected crash");
    // After any operation already running, so the plan applies to the next one.
    await this.serial.run(() => this.crashes.plan(at));
  }
}
