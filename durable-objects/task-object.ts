/**
 * `TaskObject`: one instance of one stream task at one placement (named `<task>@<placement>`).
 * The class wires storage, alarms and RPC to `StreamTask`; lifecycle operations run one at a
 * time. Processing is driven by the object itself: an alarm runs steps while there is input and
 * is not re-armed when there is none, so an idle task costs nothing; appends to its input wake it.
 * An idle task processes what arrives at once; a task under load (see `StreamTask.loaded`) lets
 * input gather for `LINGER_MS` before its next commit, so that it commits less often, with more.
 * The same one alarm serves every wall-clock punctuator of the task and the back-off of the
 * `"retry"` uncaught-error policy (`StreamTask.wakeAt`).
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig } from "../src/config";
import { LogUnavailable } from "../src/log/errors";
import { StreamTask, type Assignment, type CommitStep, type RestoreBatch, type RestoreReply, type ScanBounds, type StepOutcome } from "../src/task/stream-task";
import { LifecycleHistory, type LifecycleSnapshot } from "../src/task/lifecycle";
import type { TaskCountersSnapshot } from "../src/task/task-metrics";
import type { TaskMeta } from "../src/task/task-storage";
import { withTimeout } from "../src/util/timeout";
import { restoreWorkerName } from "./restore-worker";
import type { RegistrationEnd } from "../src/restore/suspensions";
import { positionKey } from "../src/task/record-collector";
import { describeTask, describeWithoutLog, type PartialTaskDescription, type TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { application } from "#application";
import { openLog } from "../workers/api/log";
import type { Env } from "../workers/env";
import { logEvent } from "../src/util/log";
import { COORDINATOR_NAME } from "../src/coordinator/coordinator-store";

/** Registering and unregistering with the restore worker wait at most this long (KAFKA-10199). */
const RESTORE_CALL_TIMEOUT_MS = 5_000;
/** Work per alarm before yielding (the next alarm continues): keeps one invocation short. */
const STEPS_PER_ALARM = 50;
const RETRY_DELAY_MS = 1_000;
/**
 * Under load, how long input may gather before the next commit (as Kafka's linger.ms or Kafka
 * Streams' commit interval): the latency a busy task adds for larger, cheaper commits.
 */
const LINGER_MS = 20;
/** The longest back-off between attempts of the `"retry"` policy (it doubles from RETRY_BACKOFF_MS). */
const MAX_RETRY_BACKOFF_MS = 60_000;

export type WindowsAnswer =
  | { readonly status: "ok"; readonly windows: { window: { start: number; end: number }; value: string }[] }
  | { readonly status: "restoring"; readonly progress: { restored: number; total: number } }
  | { readonly status: "not-owner" };

/**
 * `ok` with `stale: true` comes from an instance holding part of the store's changelog, up to
 * `restored`; `not-owner`: this instance cannot answer (it is not the active one, or for a stale
 * read it holds none of the store's changelog).
 */
export type QueryAnswer =
  | { readonly status: "ok"; readonly value: string | undefined; readonly stale: boolean; readonly restored?: number }
  | { readonly status: "restoring"; readonly progress: { restored: number; total: number } }
  | { readonly status: "not-owner" };

/** A page of a store from one task: like `QueryAnswer`, with entries in key order. */
export type ScanAnswer =
  | { readonly status: "ok"; readonly items: { key: string; value: string }[]; readonly stale?: boolean; readonly restored?: number }
  | { readonly status: "restoring"; readonly progress: { restored: number; total: number } }
  | { readonly status: "not-owner" };

/** What `GET /metrics` and the status page show of one instance. */
export interface InstanceMetrics extends TaskDescription {
  readonly counters: TaskCountersSnapshot;
  readonly lifecycle: LifecycleSnapshot;
}

export class TaskObject extends DurableObject<Env> {
  private readonly task: StreamTask;
  private readonly serial = new Serial();
  /** A crash planned by the fault route for a step of the next commit run by `drain`. */
  private crashAt: CommitStep | undefined;
  private draining = false;
  private readonly lifecycle: LifecycleHistory;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.lifecycle = new LifecycleHistory(ctx.storage.kv);
    const config = readConfig(env as unknown as Record<string, unknown>);
    this.task = new StreamTask({
      application,
      log: openLog(env, config),
      storage: ctx.storage,
      retryBackoff: { initialMs: config.RETRY_BACKOFF_MS, maxMs: Math.max(config.RETRY_BACKOFF_MS, MAX_RETRY_BACKOFF_MS) },
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
      const before = this.task.meta();
      const meta = await this.task.assign(assignment);
      if (!before || before.epoch !== meta.epoch || before.role !== meta.role) {
        this.lifecycle.record("assign", meta, before ? `was ${before.role} at epoch ${before.epoch}` : undefined);
      }
      this.noteRunning(before);
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
      const before = this.task.meta();
      const meta = await this.task.suspend();
      // Only a migration revokes an active instance; other revocations retire standbys.
      if (meta && before && before.role !== "idle") this.lifecycle.record(before.role === "active" ? "migrated-away" : "revoke", meta, `was ${before.role}`);
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
    if (meta?.role === "active") await this.schedule(this.task.loaded ? LINGER_MS : 0);
  }

  override async alarm(): Promise<void> {
    // While a crash is planned, only `drain` runs commits, so the test chooses where it dies.
    if (this.crashAt) return;
    try {
      const { outcome, lingering } = await this.serial.run(() => this.steps(STEPS_PER_ALARM, true));
      if (lingering) await this.schedule(LINGER_MS);
      else if (outcome === "more") await this.schedule(0);
    } catch (error) {
      // A log that cannot be reached is retried later; the outbox keeps what was not sent.
      if (error instanceof LogUnavailable) await this.schedule(RETRY_DELAY_MS);
      else throw error;
    } finally {
      await this.scheduleWake();
    }
    await this.reportShutdown();
  }

  /** Arms the alarm for the task's next punctuation or retry, if it has one (and nothing sooner is set). */
  private async scheduleWake(): Promise<void> {
    const at = this.task.wakeAt();
    if (at !== undefined) await this.schedule(Math.max(0, at - Date.now()));
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
      await this.env.COORDINATOR.getByName(COORDINATOR_NAME).shutdownApplication({ taskId: meta.taskId, placement: meta.placement, reason: meta.failure ?? "an uncaught error" });
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
      const meta = this.task.halt(reason);
      if (meta && before?.failure === null) this.lifecycle.record("failed", meta, reason);
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
      return this.describeNow();
    });
  }

  /** Runs steps now until there is no work (or `maxSteps`); says how many did work. Never lingers. */
  async drain(maxSteps = 1_000): Promise<{ worked: number; outcome: StepOutcome }> {
    const result = await this.serial.run(async () => {
      this.draining = true;
      try {
        const { worked, outcome } = await this.steps(maxSteps, false);
        await this.scheduleWake();
        return { worked, outcome };
      } finally {
        this.draining = false;
      }
    });
    await this.reportShutdown();
    return result;
  }

  /**
   * Runs steps while there is work, at most `maxSteps`. With `linger`, stops after a commit that
   * took all the input there was while under load (`lingering`): the caller resumes a little later.
   */
  private async steps(maxSteps: number, linger: boolean): Promise<{ worked: number; outcome: StepOutcome; lingering: boolean }> {
    const before = this.task.meta();
    let worked = 0;
    let outcome: StepOutcome = "idle";
    try {
      while (worked < maxSteps) {
        outcome = await this.task.step();
        if (outcome !== "more") break;
        worked++;
        if (linger && this.task.loaded && !this.task.backlog) return { worked, outcome, lingering: true };
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

  private describeNow(): Promise<TaskDescription> {
    return describeTask(this.task, application, openLog(this.env, readConfig(this.env as unknown as Record<string, unknown>)));
  }

  /**
   * A point read of a store; only the RUNNING active instance answers with authority. With
   * `allowStale`, a standby or the restoring active answers from what it holds — only if it has
   * restored some of the store's changelog: one that restored nothing would call every key absent.
   */
  async query(store: string, key: string, allowStale = false): Promise<QueryAnswer> {
    const meta = this.task.meta();
    if (!meta) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", value: this.task.get(store, key), stale: false };
    if (allowStale) {
      const restored = this.restoredOf(store, meta);
      return restored === null ? { status: "not-owner" } : { status: "ok", value: this.task.get(store, key), stale: true, restored };
    }
    if (meta.role !== "active") return { status: "not-owner" };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** How far a standby or active instance holds `store`'s changelog; null when it restored none of it (or is idle). */
  private restoredOf(store: string, meta: TaskMeta): number | null {
    if (meta.role === "idle") return null;
    const changelog = application.changelogPartitions(meta.taskId).find((c) => c.store === store);
    return changelog ? (this.task.checkpoints().get(positionKey(changelog)) ?? null) : null;
  }

  /** The windows (or sessions) of a key in a window or session store; only the RUNNING active instance answers. */
  async windows(store: string, key: string, from: number, to: number, kind: "window" | "session"): Promise<WindowsAnswer> {
    const meta = this.task.meta();
    if (!meta || meta.role !== "active") return { status: "not-owner" };
    if (meta.state === "RUNNING") return { status: "ok", windows: this.task.windows(store, key, from, to, kind) };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** A bounded page of a store in key order; only the RUNNING active instance answers, or stale as `query`. */
  async scan(store: string, bounds: ScanBounds, allowStale = false): Promise<ScanAnswer> {
    const meta = this.task.meta();
    if (!meta) return { status: "not-owner" };
    if (meta.state === "RUNNING" && meta.role === "active") return { status: "ok", items: this.task.scan(store, bounds) };
    if (allowStale) {
      const restored = this.restoredOf(store, meta);
      return restored === null ? { status: "not-owner" } : { status: "ok", items: this.task.scan(store, bounds), stale: true, restored };
    }
    if (meta.role !== "active") return { status: "not-owner" };
    return { status: "restoring", progress: await this.restoreProgress() };
  }

  /** The description with counters and lifecycle history, for metrics and the status page. */
  async metrics(): Promise<InstanceMetrics> {
    return this.serial.run(async () => ({ ...(await this.describeNow()), counters: this.task.counters.snapshot(), lifecycle: this.lifecycle.snapshot() }));
  }

  private async restoreProgress(): Promise<{ restored: number; total: number }> {
    const description = await this.describe();
    const restored = description.changelogs.reduce((n, c) => n + c.restored, 0);
    const total = description.changelogs.reduce((n, c) => n + c.end, 0);
    return { restored, total };
  }

  /**
   * A TaskCorrupted condition (fault route, or reported): close dirty, wipe, revive, restore. A
   * report about an incarnation already wiped changes nothing.
   */
  async corrupt(incarnation?: number): Promise<TaskDescription | PartialTaskDescription> {
    return this.serial.run(async () => {
      const before = this.task.meta();
      if (incarnation !== undefined && before && before.incarnation !== incarnation) return this.describeEvenWithoutLog();
      await this.task.deliverBeforeWipe();
      this.task.wipe();
      const wiped = this.task.meta();
      if (before && wiped) this.lifecycle.record("wipe", wiped, `corrupted: incarnation ${before.incarnation} closed dirty and wiped`);
      if (before) await this.unregisterRestore(before.incarnation, "wiped");
      // The log may be what failed (fetches beyond the restore worker's retry budget): if it cannot
      // say yet whether there is anything to restore, the wiped instance must still register below,
      // or nothing would ever restore it. Completion is checked again as batches arrive.
      await this.task.tryCompleteRestoration().catch((error: unknown) => {
        if (!(error instanceof LogUnavailable)) throw error;
      });
      this.noteRunning(wiped);
      await this.syncRestoreRegistration();
      await this.schedule(0);
      // The wipe is done: a log that cannot say its end offsets now must not make it look failed.
      return this.describeEvenWithoutLog();
    });
  }

  private describeEvenWithoutLog(): Promise<TaskDescription | PartialTaskDescription> {
    return this.describeNow().catch((error: unknown) => {
      if (error instanceof LogUnavailable) return describeWithoutLog(this.task, application);
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
      if (reply.caughtUp && reply.role === "active" && reply.state === "RESTORING") {
        if (await this.task.tryCompleteRestoration()) {
          this.noteRunning(undefined);
          await this.unregisterRestore(reply.incarnation, "finished");
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
      // Running now (restored), or revoked: only a revocation cuts a restoration or an update short.
      await this.unregisterRestore(meta.incarnation, meta.state === "RUNNING" ? "finished" : "revoked");
      return;
    }
    const instance = `${meta.taskId}@${meta.placement}`;
    await withTimeout(this.restoreWorker(meta.placement).register({ ...registration, instance, taskId: meta.taskId, placement: meta.placement }), RESTORE_CALL_TIMEOUT_MS, false);
  }

  /** `end`: restoration reached the end (the instance runs now), or was cut short by a revocation or a wipe. */
  private async unregisterRestore(incarnation: number, end: RegistrationEnd): Promise<void> {
    const meta = this.task.meta();
    if (!meta) return;
    await withTimeout(this.restoreWorker(meta.placement).unregister(`${meta.taskId}@${meta.placement}`, incarnation, end), RESTORE_CALL_TIMEOUT_MS, undefined);
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
