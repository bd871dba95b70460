/**
 * How a task instance's runs start and what they leave armed. A run is started by the object's
 * alarm, by a wake-up from an input partition, or by the in-memory timer; it brings the outside in
 * line with the instance's durable state (outside-reconciliation.ts), takes steps (step-loop.ts),
 * and arms the alarm and the timer for what comes next as the pacing policy says (pacing.ts). It
 * never fails: a failure is logged and the alarm armed again with a back-off (Cloudflare drops an
 * alarm after 6 failed retries). The Durable Object gives it its alarm and `waitUntil`.
 */
import type { PushedFetch, WakeTold } from "../log/pushed-fetches";
import { logEvent } from "../util/logging";
import type { Serial } from "../util/serial";
import { EarliestTimer } from "../util/timer";
import type { LifecycleHistory } from "./lifecycle";
import type { OutsideReconciliation } from "./outside-reconciliation";
import { STEPS_PER_ALARM, TaskPacing, type PacingInputs, type RunResult, type WakePlan } from "./pacing";
import { runSteps, type StepsRun } from "./step-loop";
import type { StreamTask } from "./stream-task";
import type { TaskCrashPoints } from "./task-crash-points";
import { WakeRuns } from "./wake-runs";

export interface RunnerDeps {
  readonly task: StreamTask;
  /** The object's lifecycle operations and runs take turns at the task. */
  readonly serial: Serial;
  readonly outside: OutsideReconciliation;
  readonly lifecycle: LifecycleHistory;
  readonly crashes: TaskCrashPoints;
  /** The log sends no wake-ups (a remote one): the instance polls its input. */
  readonly polls: boolean;
  /** The object's one alarm (`EarliestAlarm`): armed at the earliest time asked for. */
  readonly alarm: { armBy(at: number): Promise<void> };
  /** Keeps work going after the call that started it (`ctx.waitUntil`). */
  readonly background: (work: Promise<unknown>) => void;
  /** Sends the instance's report when one is due. */
  readonly report: () => void;
  /** Asks the coordinator to shut the application down (an uncaught error chose `"shutdown-application"`). */
  readonly shutdownApplication: (request: { taskId: string; placement: string; reason: string }) => Promise<unknown>;
}

export class TaskRunner {
  readonly pacing: TaskPacing;
  /** How wake-ups meet runs in progress. */
  private readonly wakeRuns = new WakeRuns();
  /** Looks again, in memory, at what the log also brings the instance back for (see `BACKSTOP_MS`). */
  private readonly timer = new EarliestTimer(() => this.lookNow());

  constructor(private readonly deps: RunnerDeps) {
    this.pacing = new TaskPacing(deps.polls);
  }

  /**
   * Input arrived (or may have). An instance that would look at once runs now, in the background
   * of the answer, as its alarm would (no durable alarm write, no alarm to wait for); under load it
   * looks at its next commit, which the answer names: the partition need not wake it again before
   * then. A run that dies here is made up for as a lost wake-up is: the partition wakes its readers
   * again while they lag. `pushed`, after an append, is the fetch a caught-up instance makes next.
   * `echo`: the partition wakes its readers again because the group's offset there is behind its
   * end; the progress owed to the group goes with this run instead of waiting for its time.
   * `told`: the partition and its end as the wake-up left (a step that only commits need not fetch
   * a partition known to end at its position: src/task/quiet-inputs.ts).
   */
  async wake(pushed?: PushedFetch, echo = false, told?: WakeTold): Promise<number | null> {
    const { task } = this.deps;
    if (task.meta()?.role !== "active") return null;
    task.toldOfInput(pushed, told);
    if (echo) task.owedDueNow();
    const at = task.nextCommitAt();
    const action = this.wakeRuns.wake(at, Date.now());
    if (action === "run") this.runInBackground(true);
    else if (action === "arm") await this.arm(this.pacing.lookBy(at, Date.now(), "commit"));
    if (!task.loaded) return null;
    task.toldOfInput(undefined, told, at);
    return at;
  }

  /**
   * A run: the alarm's (`fromAlarm`), a wake-up's or the timer's (see the file's comment). The
   * alarm's stands behind lost wake-ups, so it fetches every input partition (quiet-inputs.ts).
   */
  async run(fromAlarm = false): Promise<void> {
    this.wakeRuns.started();
    return this.runStarted(fromAlarm);
  }

  /** `run`, counted as in progress already (`WakeRuns.started`). */
  private async runStarted(fromAlarm: boolean): Promise<void> {
    if (fromAlarm) this.deps.task.toldOfInput(undefined, undefined);
    // While a commit crash is planned, only `drain` runs commits, so the test chooses where it
    // dies; the alarm comes back for whatever work the crash leaves.
    if (this.deps.crashes.commitCrashPlanned) {
      this.wakeRuns.ended();
      return this.armRecovery();
    }
    let result: RunResult = { status: "failed" };
    try {
      result = await this.deps.serial.run(async () => {
        const synced = await this.deps.outside.reconcile();
        return { status: "ran" as const, synced, ...(await this.steps(STEPS_PER_ALARM, true)) };
      });
    } catch (error) {
      logEvent("task.alarm-failed", { ...this.identity(), error: String(error) }, "warn");
    }
    // A wake-up no step took: input is waiting, which the log also brings the instance back for.
    const woken = this.wakeRuns.ended();
    await this.arm(this.pacing.afterRun(result, this.pending(woken)));
    if (result.status === "ran") this.deps.report();
    await this.reportShutdown();
  }

  /** Steps while there is work (see step-loop.ts): lingering for a run, committing each at once for a drain (which fetches every input partition). */
  steps(maxSteps: number, linger: boolean): Promise<StepsRun> {
    const { task, lifecycle } = this.deps;
    return runSteps({ task, wakeRuns: this.wakeRuns, lifecycle, polls: this.pacing.polls }, maxSteps, linger);
  }

  /** Armed before a lifecycle operation: if the object dies at any await of it, the alarm completes it. */
  armRecovery(): Promise<void> {
    return this.arm(this.pacing.beforeOperation(Date.now()));
  }

  /** Runs again at once (an operation changed what there is to do). */
  armAtOnce(): Promise<void> {
    return this.arm(this.pacing.atOnce(Date.now()));
  }

  /** After a drain: the task's timers and the progress it owes. */
  armAfterDrain(): Promise<void> {
    return this.arm(this.pacing.afterDrain(this.pending()));
  }

  /**
   * An uncaught error chose `"shutdown-application"`: the coordinator stops every task. Called
   * outside `serial`, because the coordinator calls back (`halt`) while it answers. Until it has
   * answered, the request stays in storage and a later alarm asks again.
   */
  async reportShutdown(): Promise<void> {
    const { task } = this.deps;
    const meta = task.meta();
    if (!meta?.shutdownRequested) return;
    try {
      await this.deps.shutdownApplication({ taskId: meta.taskId, placement: meta.placement, reason: meta.failure ?? "an uncaught error" });
      task.shutdownReported();
    } catch (error) {
      logEvent("task.shutdown-report-failed", { task: meta.taskId, placement: meta.placement, error: String(error) }, "warn");
      await this.arm(this.pacing.shutdownReportFailed(Date.now()));
    }
  }

  /** The instance's names, for log lines. */
  identity(): { task?: string; placement?: string; epoch?: number; incarnation?: number } {
    const meta = this.deps.task.meta();
    return meta ? { task: meta.taskId, placement: meta.placement, epoch: meta.epoch, incarnation: meta.incarnation } : {};
  }

  /** What the pacing policy looks at now. */
  private pending(woken = false): PacingInputs {
    const { task } = this.deps;
    return {
      now: Date.now(),
      instance: task.meta(),
      nextCommitAt: task.nextCommitAt(),
      ...task.pendingWork(),
      woken,
    };
  }

  /** Arms what the pacing policy planned (each only when sooner than what is armed). */
  private async arm(plan: WakePlan): Promise<void> {
    if (plan.resync) this.deps.outside.forget();
    if (plan.alarm) await this.deps.alarm.armBy(plan.alarm.at);
    if (plan.timer) this.timer.armBy(plan.timer.at);
  }

  /** The timer fired: as a wake-up that looks now (a run in progress takes it, see WakeRuns). */
  private lookNow(): void {
    const now = Date.now();
    if (this.wakeRuns.wake(now, now) === "run") this.runInBackground();
  }

  /**
   * A run in the background of the current call (a wake-up's or the timer's); one that dies is
   * made up for as a lost wake-up is. A wake-up's run starts a turn of the event loop later
   * (`afterTurn`), counted as in progress from now (a wake-up meanwhile is noted for it): the
   * append that woke the instance answers its producer at the same moment as the wake-up leaves,
   * and where the objects share a thread (`wrangler dev`, one isolate) a run started inside the
   * wake-up's call put its processing, its storage commit (an fsync there) and its sends before
   * that answer — before the ingest's HTTP answer, which waits only for the input's append
   * (acks=all). Queries read what it processed either way once it ran (docs/performance.md).
   */
  private runInBackground(afterWake = false): void {
    this.wakeRuns.started();
    const run = afterWake ? afterTurn().then(() => this.runStarted(false)) : this.runStarted(false);
    this.deps.background(run.catch((error: unknown) => logEvent("task.background-run-failed", { ...this.identity(), error: String(error) }, "warn")));
  }
}

/** Resolves in a later turn of the event loop (a timer of 0 ms), after what is queued now: other objects' answers and calls. */
function afterTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(() => resolve(), 0));
}
