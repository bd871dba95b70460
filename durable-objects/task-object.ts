/**
 * `TaskObject`: one instance of one stream task at one placement (named `<task>@<placement>`).
 * The class wires storage, alarms and RPC to `StreamTask`; lifecycle operations run one at a
 * time. Processing is driven by the object itself: appends to its input wake it (a wake-up runs
 * steps while there is input), an in-memory timer with the alarm behind it looks again at what is
 * due, and once nothing is due nothing is armed again, so an idle task costs nothing. The logic is
 * in plain modules: the lifecycle operations in src/task/lifecycle-operations.ts, runs and what
 * they leave armed in src/task/task-runner.ts, when the instance looks again in the pure pacing
 * policy (src/task/pacing.ts), what other objects know of it in src/task/outside-reconciliation.ts,
 * its reports in src/summary/instance-reporter.ts, its history in src/task/lifecycle.ts, its
 * crash points in src/task/task-crash-points.ts, who answers a store read in src/task/read-standing.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { PushedFetch, WakeTold } from "../src/log/pushed-fetches";
import { EarliestAlarm } from "../src/util/alarm";
import { instanceAck, type Assignment, type CommitStep, type InstanceAck, type LifecycleStep, type QueryAnswer } from "../src/task/protocol";
import type {
  RestoreBatch,
  RestoreReply,
  ScanAnswer,
  ScanBounds,
  SkipAnswer,
  SnapshotAnswer,
  SnapshotSelection,
  StepOutcome,
  WindowsAnswer,
} from "../src/task/protocol";
import { StreamTask } from "../src/task/stream-task";
import { LifecycleHistory, type LifecycleSnapshot } from "../src/task/lifecycle";
import type { TaskCountersSnapshot } from "../src/task/task-metrics";
import { TaskCrashPoints } from "../src/task/task-crash-points";
import { holds } from "../src/coordinator/holds";
import { describeTask, restoreProgressOf, type PartialTaskDescription, type TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import type { RecordOrigin } from "../src/streams/errors";
import type { AppliedReset, InputReset } from "../src/task/input-reset";
import { MAX_RETRY_BACKOFF_MS } from "../src/task/pacing";
import { TaskRunner } from "../src/task/task-runner";
import { LifecycleOperations } from "../src/task/lifecycle-operations";
import { OutsideReconciliation } from "../src/task/outside-reconciliation";
import { answerRead, readStanding, restoredOf, type NoRead } from "../src/task/read-standing";
import { InstanceReporter } from "../src/summary/instance-reporter";
import type { ObjectHost, TaskObjectCalls } from "./calls";
import { topicPartition } from "../src/names";

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
  private readonly operations: LifecycleOperations;

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
        if (meta) this.lifecycle.record("input-reset", meta, `${topicPartition(tp)}: records ${from}…${to - 1} were gone (retention); resumed at ${to}`);
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
      polls: !log.capabilities.wakesReaders,
      alarm: this.alarms,
      background: (work) => ctx.waitUntil(work),
      report: () => this.report(),
      shutdownApplication: (request) => objects.coordinator().shutdownApplication(request),
    });
    this.operations = new LifecycleOperations({
      task: this.task,
      application,
      runner: this.runner,
      outside: this.outside,
      lifecycle: this.lifecycle,
      crashes: this.crashes,
      reports: this.reports,
      report: () => this.report(),
      describe: () => this.describeNow(),
    });
  }

  /** Takes an assignment from the coordinator (see `LifecycleOperations.assign`). */
  async assign(assignment: Assignment): Promise<InstanceAck> {
    return this.serial.run(() => this.operations.assign(assignment));
  }

  /**
   * The coordinator's sweep: when this instance holds `assignment` (its role; for an active or
   * standby also its epoch), repairs what the outside knows of it as a repeated assignment would.
   * It never takes an assignment it does not hold: one that lost its storage must get a new epoch
   * (its producer sequences start over), so it answers what it holds, and the coordinator assigns again.
   */
  async check(assignment: Assignment): Promise<InstanceAck | undefined> {
    return this.serial.run(async () => {
      const meta = this.task.meta();
      if (!meta || !holds(meta, assignment)) return meta && instanceAck(meta);
      return this.operations.repair(assignment);
    });
  }

  async revoke(): Promise<InstanceAck | undefined> {
    return this.serial.run(() => this.operations.revoke());
  }

  /** Input arrived (or may have): see `TaskRunner.wake`. */
  async wake(pushed?: PushedFetch, echo?: boolean, told?: WakeTold): Promise<number | null> {
    return this.runner.wake(pushed, echo, told);
  }

  /** The object's one alarm: a run (see `TaskRunner.run`). */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    await this.runner.run(true);
  }

  private report(): void {
    this.reports.report(Date.now());
  }

  async halt(reason: string): Promise<TaskDescription> {
    return this.serial.run(() => this.operations.halt(reason));
  }

  async resume(): Promise<TaskDescription> {
    return this.serial.run(() => this.operations.resume());
  }

  async skip(at: RecordOrigin, halted?: string): Promise<SkipAnswer> {
    return this.serial.run(() => this.operations.skip(at, halted));
  }

  async resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined> {
    return this.serial.run(() => this.operations.resetInput(reset, halted));
  }

  /** Runs steps now until there is no work (see `LifecycleOperations.drain`); then reports a shutdown the steps asked for. */
  async drain(maxSteps = 1_000): Promise<{ worked: number; outcome: StepOutcome }> {
    const result = await this.serial.run(() => this.operations.drain(maxSteps));
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

  /** A subscription's snapshot: committed entries with the changelog offset they reflect (src/task/committed-read.ts); RUNNING active only. */
  async snapshot(store: string, selection: SnapshotSelection): Promise<SnapshotAnswer> {
    const meta = this.task.meta();
    const changelog = meta && this.host.application.changelogPartitions(meta.taskId).find((c) => c.store === store);
    if (!changelog) return { status: "not-owner" };
    return this.read(store, false, () => {
      const read = this.task.committedRead(store, changelog, (committed) =>
        "key" in selection
          ? Object.entries({ [selection.key]: committed.committedGet(selection.key) }).flatMap(([key, value]) => (value === undefined ? [] : [{ key, value }]))
          : committed.committedPrefix(selection.prefix, selection.limit),
      );
      return read === "waiting" ? { status: "waiting" as const } : { status: "ok" as const, entries: read.value, offset: read.offset };
    });
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

  /** A TaskCorrupted condition (fault route, or reported): close dirty, wipe, revive, restore. */
  async corrupt(incarnation?: number): Promise<TaskDescription | PartialTaskDescription> {
    return this.serial.run(() => this.operations.corrupt(incarnation));
  }

  async applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply> {
    return this.serial.run(() => this.operations.applyRestoreBatch(batch));
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
