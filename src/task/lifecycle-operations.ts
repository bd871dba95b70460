/**
 * The lifecycle operations of a task instance, as its coordinator, restore worker and operators
 * call them: assign, repair, revoke, halt, resume, skip, reset, drain, corrupt, restore batches.
 * Each may die at any await and still converge: it arms the recovery alarm before its first
 * await, writes its new state durably in one step, and leaves the rest (the outside brought in
 * line, processing) to what that state makes the alarm do. The Durable Object runs them one at a
 * time; each names its crash points (`LifecycleStep`) so tests can kill it at every one.
 */
import { LogUnavailable } from "../log/errors";
import type { TopicPartition } from "../log/types";
import type { RecordOrigin } from "../streams/errors";
import { logEvent } from "../util/logging";
import { describeWithoutLog, type PartialTaskDescription, type TaskDescription } from "./describe";
import type { AppliedReset, InputReset } from "./input-reset";
import type { LifecycleHistory } from "./lifecycle";
import type { OutsideReconciliation } from "./outside-reconciliation";
import { instanceAck, type Assignment, type InstanceAck, type RestoreBatch, type RestoreReply, type SkipAnswer, type StepOutcome } from "./protocol";
import { describeRecord } from "./skips";
import type { StreamTask } from "./stream-task";
import type { TaskCrashPoints } from "./task-crash-points";
import type { TaskRunner } from "./task-runner";
import type { Application } from "../application";

export interface OperationsDeps {
  readonly task: StreamTask;
  readonly application: Application;
  readonly runner: TaskRunner;
  readonly outside: OutsideReconciliation;
  readonly lifecycle: LifecycleHistory;
  readonly crashes: TaskCrashPoints;
  /** The instance's reports to the summary (src/summary/instance-reporter.ts). */
  readonly reports: { sawChangelogEnd(tp: TopicPartition, end: number): void };
  readonly report: () => void;
  /** Describes the instance, calling the log for its ends. */
  readonly describe: () => Promise<TaskDescription>;
}

export class LifecycleOperations {
  constructor(private readonly deps: OperationsDeps) {}

  /**
   * Takes an assignment from the coordinator, subscribes to its input, registers for restoration
   * when restoring or standing by, and starts working. The coordinator repeats assignments (after
   * a crash, and in its sweep): the same one again repairs subscriptions and registration.
   */
  async assign(assignment: Assignment): Promise<InstanceAck> {
    const { task, runner, lifecycle } = this.deps;
    await runner.armRecovery();
    const before = task.meta();
    const meta = await task.assign(assignment);
    lifecycle.noteAssigned(before, meta);
    lifecycle.noteRunning(before, task.meta());
    await this.deps.crashes.reachAfterWrites("assign:after-meta");
    await this.deps.outside.reconcile(true);
    await runner.armAtOnce();
    this.deps.report();
    return instanceAck(task.meta()!);
  }

  /**
   * The coordinator's sweep found this instance holding its assignment (src/coordinator/holds.ts):
   * repairs what the outside knows of it and applies the shutdown state, as a repeated assignment
   * would (an idle one is only brought in line).
   */
  async repair(assignment: Assignment): Promise<InstanceAck> {
    const { task } = this.deps;
    if (assignment.role !== "idle") await task.assign(assignment);
    await this.deps.outside.reconcile(true);
    await this.deps.runner.armAtOnce();
    return instanceAck(task.meta()!);
  }

  /** Revocation: flush, suspend (idle), stop listening. Acknowledged once idle durably; the rest follows. */
  async revoke(): Promise<InstanceAck | undefined> {
    const { task } = this.deps;
    await this.deps.runner.armRecovery();
    const before = task.meta();
    const meta = await task.suspend();
    this.deps.lifecycle.noteRevoked(before, meta);
    await this.deps.crashes.reachAfterWrites("revoke:after-suspend");
    await this.deps.outside.reconcile();
    this.deps.report();
    return meta && instanceAck(meta);
  }

  /** The application was shut down: an instance still processing stops, with `reason`. */
  async halt(reason: string): Promise<TaskDescription> {
    const before = this.deps.task.meta();
    const meta = await this.deps.task.halt(reason);
    if (meta && before?.failure === null) this.deps.lifecycle.record("failed", meta, reason);
    this.deps.report();
    return this.deps.describe();
  }

  /** An operator clears the instance's failure: it processes again at once. */
  async resume(): Promise<TaskDescription> {
    const before = this.deps.task.meta();
    const meta = this.deps.task.resume();
    if (meta && before?.failure) this.deps.lifecycle.record("resumed", meta, `was stopped: ${before.failure}`);
    await this.deps.runner.armAtOnce();
    this.deps.report();
    return this.deps.describe();
  }

  /**
   * An operator passes over the record the instance stopped at (skips.ts), and it runs again
   * (stays stopped with `halted` while the application is shut down). The alarm is armed first;
   * the skip, the cleared failure and the history entry are one write; so a crash after it leaves
   * an instance that processes on its own, and the request repeated answers that it was done.
   * Refused when the instance is not stopped at that record.
   */
  async skip(at: RecordOrigin, halted?: string): Promise<SkipAnswer> {
    const { task, lifecycle } = this.deps;
    await this.deps.runner.armAtOnce();
    const before = task.meta();
    const outcome = task.skip(at, lifecycle.snapshot().lastSkipped, halted);
    if (outcome.status === "refused") return outcome;
    const meta = task.meta()!;
    if (!outcome.already) lifecycle.record("skipped", meta, `${describeRecord(at)} passed over (was stopped: ${before?.failure})`, { skipped: at });
    await this.deps.crashes.reachAfterWrites("skip:after-write");
    this.deps.report();
    return { status: "skipped" as const, already: outcome.already, task: await this.deps.describe() };
  }

  /**
   * Applies an input reset of the application to this task (input-reset.ts) and has the group
   * hear of the new positions. The coordinator repeats it until it is answered; a reset already
   * applied answers what it did. Undefined when this instance is not the active one.
   */
  async resetInput(reset: InputReset, halted?: string): Promise<AppliedReset | undefined> {
    const { task, runner } = this.deps;
    await runner.armRecovery();
    const before = task.meta();
    const applied = await task.resetInput(reset, halted);
    const meta = task.meta();
    if (!applied || !meta) return applied;
    this.deps.lifecycle.noteReset(reset, applied, before, meta);
    // The group hears of the new positions now (else with the instance's next offset commit).
    await task.commitInputOffsets().catch((error: unknown) => logEvent("task.reset-commit-failed", { ...runner.identity(), error: String(error) }, "warn"));
    await runner.armAtOnce();
    this.deps.report();
    return applied;
  }

  /** Runs steps now until there is no work (or `maxSteps`), and commits the input processed; says how many did work. Never lingers. */
  drain(maxSteps: number): Promise<{ worked: number; outcome: StepOutcome }> {
    const { task, runner } = this.deps;
    return this.deps.crashes.drain(async () => {
      // A drain that dies (a planned crash) leaves an alarm to finish its work without the caller.
      if (task.meta()?.role === "active") await runner.armRecovery();
      await this.deps.outside.reconcile();
      const { worked, outcome } = await runner.steps(maxSteps, false);
      // A drain leaves nothing for later: lingering output goes to the log, and the input it processed to the group, now.
      if (outcome === "idle") await task.flush();
      await runner.armAfterDrain();
      this.deps.report();
      return { worked, outcome };
    });
  }

  /**
   * A TaskCorrupted condition (fault route, or reported): close dirty, wipe, revive, restore. A
   * report about an incarnation already wiped changes nothing. The wipe is one transaction; after
   * it, the instance is RESTORING as a new incarnation, and whatever of the rest a crash cuts
   * short (telling the restore worker) the alarm armed first completes.
   */
  async corrupt(incarnation?: number): Promise<TaskDescription | PartialTaskDescription> {
    const { task, crashes } = this.deps;
    const before = task.meta();
    if (incarnation !== undefined && before && before.incarnation !== incarnation) return this.describeEvenWithoutLog();
    await this.deps.runner.armRecovery();
    await task.deliverBeforeWipe();
    await crashes.reachAfterWrites("corrupt:after-deliver");
    task.wipe();
    const wiped = task.meta();
    if (before && wiped) this.deps.lifecycle.record("wipe", wiped, `corrupted: incarnation ${before.incarnation} closed dirty and wiped`);
    await crashes.reachAfterWrites("corrupt:after-wipe");
    // The log may be what failed (fetches beyond the restore worker's retry budget): if it cannot
    // say yet whether there is anything to restore, the wiped instance registers anyway, and
    // completion is checked again as batches arrive.
    await task.tryCompleteRestoration().catch((error: unknown) => {
      if (!(error instanceof LogUnavailable)) throw error;
    });
    this.deps.lifecycle.noteRunning(wiped, task.meta());
    await this.deps.outside.reconcile();
    await this.deps.runner.armAtOnce();
    this.deps.report();
    // The wipe is done: a log that cannot say its end offsets now must not make it look failed.
    return this.describeEvenWithoutLog();
  }

  /**
   * A batch from the restore worker. Applied only at this instance's position and incarnation; an
   * active instance whose changelogs are all restored turns RUNNING and starts processing.
   */
  async applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply> {
    const { task, runner } = this.deps;
    const reply = task.applyRestoreBatch(batch);
    this.deps.reports.sawChangelogEnd(batch, batch.end);
    this.deps.report();
    if (!reply.caughtUp || reply.role !== "active" || reply.state !== "RESTORING") return reply;
    await runner.armRecovery();
    if (await task.tryCompleteRestoration()) {
      this.deps.lifecycle.noteRunning(undefined, task.meta());
      await this.deps.crashes.reachAfterWrites("restore:after-running");
      await this.deps.outside.reconcile();
      await runner.armAtOnce();
      this.deps.report();
      return { ...reply, state: "RUNNING" as const };
    }
    // Caught up with an end that has moved on since: still work for the restore worker.
    return { ...reply, caughtUp: false };
  }

  private describeEvenWithoutLog(): Promise<TaskDescription | PartialTaskDescription> {
    return this.deps.describe().catch((error: unknown) => {
      if (error instanceof LogUnavailable) return describeWithoutLog(this.deps.task, this.deps.application);
      throw error;
    });
  }
}
