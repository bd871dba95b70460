/**
 * `TaskObject`: one instance of one stream task at one placement (named `<task>@<placement>`).
 * The class wires storage, alarms and RPC to `StreamTask`; lifecycle operations run one at a
 * time. Processing is driven by the object itself: an alarm runs steps while there is input and
 * is not re-armed when there is none, so an idle task costs nothing; appends to its input wake it.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig } from "../src/config";
import { LogUnavailable } from "../src/log/errors";
import { StreamTask, type Assignment, type CommitStep, type RestoreBatch, type RestoreReply, type StepOutcome } from "../src/task/stream-task";
import { withTimeout } from "../src/util/timeout";
import { restoreWorkerName } from "./restore-worker";
import { describeTask, type TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { application } from "../workers/application";
import { openLog } from "../workers/api/log";
import type { Env } from "../workers/env";

/** Registering and unregistering with the restore worker wait at most this long (KAFKA-10199). */
const RESTORE_CALL_TIMEOUT_MS = 5_000;
/** Work per alarm before yielding (the next alarm continues): keeps one invocation short. */
const STEPS_PER_ALARM = 50;
const RETRY_DELAY_MS = 1_000;

export type QueryAnswer =
  | { readonly status: "ok"; readonly value: string | undefined; readonly stale: boolean }
  | { readonly status: "restoring"; readonly progress: { restored: number; total: number } }
  | { readonly status: "not-owner" };

export class TaskObject extends DurableObject<Env> {
  private readonly task: StreamTask;
  private readonly serial = new Serial();
  /** A crash planned by the fault route for a step of the next commit run by `drain`. */
  private crashAt: CommitStep | undefined;
  private draining = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.task = new StreamTask({
      application,
      log: openLog(env, readConfig(env as unknown as Record<string, unknown>)),
      storage: ctx.storage,
      onCommitStep: (step) => {
        if (this.draining && step === this.crashAt) {
          this.crashAt = undefined;
          this.ctx.abort(`injected crash at ${step}`);
        }
      },
    });
  }

  /** Takes an assignment from the coordinator, subscribes to its input and starts working. */
  async assign(assignment: Assignment): Promise<TaskDescription> {
    return this.serial.run(async () => {
      const meta = await this.task.assign(assignment);
      const name = `${meta.taskId}@${meta.placement}`;
      await Promise.all(
        application.inputPartitions(meta.taskId).map((tp) =>
          meta.role === "active" ? this.partition(tp).subscribe(name) : this.partition(tp).unsubscribe(name),
        ),
      );
      await this.syncRestoreRegistration();
      await this.schedule(0);
      return this.describeNow();
    });
  }

  /** Revocation: flush, suspend, stop listening. */
  async revoke(): Promise<TaskDescription> {
    return this.serial.run(async () => {
      const meta = await this.task.suspend();
      if (meta) {
        const name = `${meta.taskId}@${meta.placement}`;
        await Promise.all(application.inputPartitions(meta.taskId).map((tp) => this.partition(tp).unsubscribe(name)));
        await this.syncRestoreRegistration();
      }
      return this.describeNow();
    });
  }

  /** Input arrived (or may have): make sure an alarm will look soon. */
  async wake(): Promise<void> {
    const meta = this.task.meta();
    if (meta?.role === "active") await this.schedule(0);
  }

  override async alarm(): Promise<void> {
    // While a crash is planned, only `drain` runs commits, so the test chooses where it dies.
    if (this.crashAt) return;
    try {
      const outcome = await this.run(STEPS_PER_ALARM);
      if (outcome === "more") await this.schedule(0);
    } catch (error) {
      // A log that cannot be reached is retried later; the outbox keeps what was not sent.
      if (error instanceof LogUnavailable) await this.schedule(RETRY_DELAY_MS);
      else throw error;
    }
  }

  /** Runs steps now until there is no work (or `maxSteps`); says how many did work. */
  async drain(maxSteps = 1_000): Promise<{ worked: number; outcome: StepOutcome }> {
    return this.serial.run(async () => {
      this.draining = true;
      try {
        return await this.steps(maxSteps);
      } finally {
        this.draining = false;
      }
    });
  }

  private async run(maxSteps: number): Promise<StepOutcome> {
    return (await this.serial.run(() => this.steps(maxSteps))).outcome;
  }

  private async steps(maxSteps: number): Promise<{ worked: number; outcome: StepOutcome }> {
    let worked = 0;
    let outcome: StepOutcome = "idle";
    while (worked < maxSteps) {
      outcome = await this.task.step();
      if (outcome !== "more") break;
      worked++;
    }
    return { worked, outcome };
  }

  async describe(): Promise<TaskDescription> {
    return this.serial.run(() => this.describeNow());
  }

  private describeNow(): Promise<TaskDescription> {
    return describeTask(this.task, application, openLog(this.env, readConfig(this.env as unknown as Record<string, unknown>)));
  }

  /** A point read of a store; only the RUNNING active instance answers with authority. */
  async query(store: string, key: string, allowStale = false): Promise<QueryAnswer> {
    const meta = this.task.meta();
    if (!meta || (meta.role !== "active" && !allowStale)) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", value: this.task.get(store, key), stale: false };
    if (allowStale) return { status: "ok", value: this.task.get(store, key), stale: true };
    const description = await this.describe();
    const restored = description.changelogs.reduce((n, c) => n + c.restored, 0);
    const total = description.changelogs.reduce((n, c) => n + c.end, 0);
    return { status: "restoring", progress: { restored, total } };
  }

  /**
   * A TaskCorrupted condition (fault route, or reported): close dirty, wipe, revive, restore. A
   * report about an incarnation already wiped changes nothing.
   */
  async corrupt(incarnation?: number): Promise<TaskDescription> {
    return this.serial.run(async () => {
      const before = this.task.meta();
      if (incarnation !== undefined && before && before.incarnation !== incarnation) return this.describeNow();
      this.task.wipe();
      if (before) await this.unregisterRestore(before.incarnation);
      await this.task.tryCompleteRestoration();
      await this.syncRestoreRegistration();
      await this.schedule(0);
      return this.describeNow();
    });
  }

  /**
   * A batch from the restore worker. Applied only at this instance's position and incarnation; an
   * active instance whose changelogs are all restored turns RUNNING and starts processing.
   */
  async applyRestoreBatch(batch: RestoreBatch): Promise<RestoreReply> {
    return this.serial.run(async () => {
      const reply = this.task.applyRestoreBatch(batch);
      if (reply.caughtUp && reply.role === "active" && reply.state === "RESTORING") {
        if (await this.task.tryCompleteRestoration()) {
          await this.unregisterRestore(reply.incarnation);
          await this.schedule(0);
          return { ...reply, state: "RUNNING" as const };
        }
        // Caught up with an end that has moved on since: still work for the restore worker.
        await this.syncRestoreRegistration();
        return { ...reply, caughtUp: false };
      }
      return reply;
    });
  }

  /** Registers with the placement's restore worker while restoring or standing by; else unregisters. */
  private async syncRestoreRegistration(): Promise<void> {
    const meta = this.task.meta();
    if (!meta) return;
    const registration = this.task.restoreRegistration();
    if (!registration) {
      await this.unregisterRestore(meta.incarnation);
      return;
    }
    const instance = `${meta.taskId}@${meta.placement}`;
    await withTimeout(this.restoreWorker(meta.placement).register({ ...registration, instance, taskId: meta.taskId, placement: meta.placement }), RESTORE_CALL_TIMEOUT_MS, false);
  }

  private async unregisterRestore(incarnation: number): Promise<void> {
    const meta = this.task.meta();
    if (!meta) return;
    await withTimeout(this.restoreWorker(meta.placement).unregister(`${meta.taskId}@${meta.placement}`, incarnation), RESTORE_CALL_TIMEOUT_MS, undefined);
  }

  private restoreWorker(placement: string) {
    return this.env.RESTORE_WORKER.getByName(restoreWorkerName(placement));
  }

  /**
   * Fault route: the object's process dies at once, or at the given step of the next commit that
   * `drain` runs (so tests choose where; commits run by alarms are not interrupted).
   */
  async crash(at?: CommitStep): Promise<void> {
    if (!at) this.ctx.abort("injected crash");
    // After any commit already running, so the plan applies to the next one.
    await this.serial.run(() => {
      this.crashAt = at;
    });
  }

  private partition(tp: { topic: string; partition: number }) {
    return this.env.LOG_PARTITION.getByName(`${tp.topic}/${tp.partition}`);
  }

  private async schedule(delayMs: number): Promise<void> {
    const at = Date.now() + delayMs;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }
}
