/**
 * `Coordinator`: one per application. It owns the assignment of task instances to placements —
 * actives, standbys, and idle instances that keep state where a task used to run — and hands every
 * assignment a fresh epoch (I3). Revocation is acknowledged before the task is assigned elsewhere;
 * corruption reports wipe and revive the instances named, all of a report together. An uncaught
 * error under `"shutdown-application"` stops every active instance until an operator resumes the
 * application. Its state is durable: after a restart, assignments, epochs and a shutdown continue.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig, type Config } from "../src/config";
import { assignActives } from "../src/coordinator/assignor";
import { CoordinatorStore, type ApplicationShutdown, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { APPLICATION_SHUT_DOWN } from "../src/task/stream-task";
import { placeStandbys } from "../src/coordinator/standbys";
import type { TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { application } from "#application";
import type { Env } from "../workers/env";

/** How often pending automatic moves are re-checked while a warm-up catches up. */
const REBALANCE_CHECK_MS = 1_000;

export type MigrationResult = { readonly changed: boolean; readonly from: string; readonly to: string; readonly epoch: number };

/** What resuming one task found: resumed, or refused because the whole application is shut down. */
export type TaskResumeResult =
  | { readonly status: "resumed"; readonly task: TaskDescription }
  | { readonly status: "application-shut-down"; readonly shutdown: ApplicationShutdown };

export class MigrationRefused extends Error {
  override name = "MigrationRefused";
}

export class Coordinator extends DurableObject<Env> {
  private readonly store: CoordinatorStore;
  private readonly serial = new Serial();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new CoordinatorStore(ctx.storage);
  }

  private get config(): Config {
    return readConfig(this.env as unknown as Record<string, unknown>);
  }

  /**
   * The assignment, made or repaired as needed; every instance of it has been told. When an
   * instance could not be told, the caller gets the error and the coordinator tries again shortly
   * on its own (its alarm), so an application without traffic still gets assigned.
   */
  async ensureAssigned(): Promise<InstanceAssignment[]> {
    return this.serial.run(() =>
      this.orRetryLater(async () => {
        this.reconcile();
        await this.pushUnacknowledged();
        await this.moveOffRemovedPlacements();
        await this.haltActives();
        return this.store.instances();
      }),
    );
  }

  /** Runs `work`; when it fails, the alarm completes the assignment shortly (and the caller gets the error). */
  private async orRetryLater<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      await this.ctx.storage.setAlarm(Date.now() + REBALANCE_CHECK_MS);
      throw error;
    }
  }

  /** Whether (and why) the application is shut down. */
  async shutdownState(): Promise<ApplicationShutdown | null> {
    return this.store.shutdown() ?? null;
  }

  /**
   * A task's uncaught error chose `"shutdown-application"` (Kafka's SHUTDOWN_APPLICATION): every
   * active instance stops, and instances assigned later start stopped, until `resumeApplication`.
   * The first request's reason stays; the shutdown survives restarts of the coordinator.
   */
  async shutdownApplication(request: { taskId: string; placement: string; reason: string }): Promise<ApplicationShutdown> {
    return this.serial.run(async () => {
      const shutdown = this.store.transaction(() => this.store.shutDown({ ...request, at: Date.now() }));
      await this.haltActives();
      return shutdown;
    });
  }

  /** An operator lifts the shutdown: every active instance's failure is cleared and it processes again. */
  async resumeApplication(): Promise<TaskDescription[]> {
    return this.serial.run(async () => {
      this.store.transaction(() => this.store.clearShutdown());
      const actives = this.store.instances().filter((i) => i.role === "active");
      return Promise.all(actives.map((active) => this.instance(active).resume() as Promise<TaskDescription>));
    });
  }

  /** An operator resumes one task stopped by its own uncaught error; refused while the application is shut down. */
  async resumeTask(taskId: string): Promise<TaskResumeResult> {
    return this.serial.run(async () => {
      const shutdown = this.store.shutdown();
      if (shutdown) return { status: "application-shut-down" as const, shutdown };
      this.reconcile();
      await this.pushUnacknowledged();
      const active = this.store.instances().find((i) => i.taskId === taskId && i.role === "active")!;
      return { status: "resumed" as const, task: (await this.instance(active).resume()) as TaskDescription };
    });
  }

  /** While the application is shut down, stops every active instance still processing; retried until all have. */
  private async haltActives(): Promise<void> {
    const shutdown = this.store.shutdown();
    if (!shutdown) return;
    const actives = this.store.instances().filter((i) => i.role === "active");
    const results = await Promise.allSettled(actives.map((active) => this.instance(active).halt(haltReason(shutdown))));
    if (results.some((r) => r.status === "rejected")) await this.ctx.storage.setAlarm(Date.now() + REBALANCE_CHECK_MS);
  }

  /** The current assignment, without changing it. */
  async assignments(): Promise<InstanceAssignment[]> {
    return this.store.instances();
  }

  /**
   * Moves a task's active instance: revoke at the current placement (flush, commit, checkpoint,
   * close clean) and only once that is acknowledged, assign at `to` with a new epoch. The instance
   * left behind stays as an idle (or standby) instance with its store and checkpoint.
   */
  async migrate(taskId: string, to: string): Promise<MigrationResult> {
    return this.serial.run(() => this.orRetryLater(() => this.migrateNow(taskId, to)));
  }

  private async migrateNow(taskId: string, to: string): Promise<MigrationResult> {
    if (!application.task(taskId)) throw new MigrationRefused(`unknown task ${JSON.stringify(taskId)}`);
    if (!this.config.PLACEMENTS.includes(to)) throw new MigrationRefused(`unknown placement ${JSON.stringify(to)}`);
    this.reconcile();
    await this.pushUnacknowledged();
    const active = this.store.instances().find((i) => i.taskId === taskId && i.role === "active")!;
    if (active.placement === to) return { changed: false, from: to, to, epoch: active.epoch };
    try {
      await this.instance(active).revoke();
    } catch (error) {
      // The instance may have suspended before the call failed (its description, a later step, the
      // reply): it must not stay the acknowledged active while it no longer acts as one. It is
      // assigned again, under a new epoch, and pushed like any other assignment — shortly, at latest.
      this.store.transaction(() => this.store.put({ ...active, epoch: this.store.nextEpoch(), acknowledged: false }));
      await this.ctx.storage.setAlarm(Date.now() + REBALANCE_CHECK_MS);
      throw error;
    }
    this.store.transaction(() => {
      this.store.put({ ...active, role: "idle", acknowledged: true });
      this.store.put({ taskId, placement: to, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
    });
    this.reconcile();
    await this.pushUnacknowledged();
    const now = this.store.instances().find((i) => i.taskId === taskId && i.role === "active")!;
    return { changed: true, from: active.placement, to, epoch: now.epoch };
  }

  /**
   * Corruption reported by the restore worker (or a task): every instance named is closed dirty,
   * wiped and revived as a new incarnation, all of one report together. A report about an
   * incarnation already wiped changes nothing.
   */
  async reportCorruption(corrupted: readonly { instance: string; incarnation: number }[]): Promise<void> {
    await Promise.all(corrupted.map(({ instance, incarnation }) => this.env.TASK_OBJECT.getByName(instance).corrupt(incarnation)));
  }

  override async alarm(): Promise<void> {
    await this.ensureAssigned();
  }

  /**
   * Brings the stored assignment in line with the configuration: an active per task (sticky,
   * balanced) and NUM_STANDBYS standbys at other placements. Only writes; pushing comes after.
   */
  private reconcile(): void {
    const { PLACEMENTS: placements, NUM_STANDBYS: standbys } = this.config;
    this.store.transaction(() => {
      const instances = this.store.instances();
      const actives = instances.filter((i) => i.role === "active");
      const taskIds = application.taskIds();
      const missing = taskIds.filter((t) => !actives.some((a) => a.taskId === t));
      if (missing.length > 0) {
        const wanted = assignActives(taskIds, placements, actives.filter((a) => placements.includes(a.placement)));
        for (const { taskId, placement } of wanted) {
          if (!missing.includes(taskId)) continue;
          this.store.put({ taskId, placement, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
        }
      }
      const current = this.store.instances();
      const activePlacements = current.filter((i) => i.role === "active");
      const desired = placeStandbys(activePlacements, placements, current, standbys);
      for (const instance of current) {
        if (instance.role === "active") continue;
        const wanted = desired.some((d) => d.taskId === instance.taskId && d.placement === instance.placement);
        if (wanted && instance.role !== "standby") this.store.put({ ...instance, role: "standby", epoch: this.store.nextEpoch(), acknowledged: false });
        if (!wanted && instance.role === "standby") this.store.put({ ...instance, role: "idle", epoch: this.store.nextEpoch(), acknowledged: false });
      }
      for (const d of desired) {
        if (!current.some((i) => i.taskId === d.taskId && i.placement === d.placement)) {
          this.store.put({ ...d, role: "standby", epoch: this.store.nextEpoch(), acknowledged: false });
        }
      }
    });
  }

  /** Tells instances their new assignment: revocations first, each acknowledged before the rest. */
  private async pushUnacknowledged(): Promise<void> {
    const pending = this.store.instances().filter((i) => !i.acknowledged);
    for (const instance of pending.filter((i) => i.role === "idle")) {
      await this.instance(instance).revoke();
      this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
    }
    // Every instance is told even when one cannot be (it stays unacknowledged, for the next push).
    const pushed = await Promise.allSettled(
      pending
        .filter((i) => i.role !== "idle")
        .map(async (instance) => {
          const shutdown = this.store.shutdown();
          await this.instance(instance).assign({
            taskId: instance.taskId,
            placement: instance.placement,
            role: instance.role,
            epoch: instance.epoch,
            ...(shutdown && instance.role === "active" ? { halted: haltReason(shutdown) } : {}),
          });
          this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
        }),
    );
    const failed = pushed.find((p): p is PromiseRejectedResult => p.status === "rejected");
    if (failed) throw failed.reason;
  }

  /**
   * Actives on placements no longer configured move once a warm instance at their new placement is
   * within ACCEPTABLE_RECOVERY_LAG (Kafka's acceptable.recovery.lag); until then a warm-up standby
   * catches up there and this is checked again shortly.
   */
  private async moveOffRemovedPlacements(): Promise<void> {
    const placements = this.config.PLACEMENTS;
    const stranded = this.store.instances().filter((i) => i.role === "active" && !placements.includes(i.placement));
    if (stranded.length === 0) return;
    let waiting = false;
    for (const active of stranded) {
      const instances = this.store.instances();
      const [target] = assignActives([active.taskId], placements, []).map((t) => t.placement);
      const load = (p: string) => instances.filter((i) => i.role === "active" && i.placement === p).length;
      const to = placements.reduce((best, p) => (load(p) < load(best) ? p : best), target!);
      const warm = instances.find((i) => i.taskId === active.taskId && i.placement === to);
      if (!warm || warm.role === "idle") {
        this.store.transaction(() => this.store.put({ taskId: active.taskId, placement: to, role: "standby", epoch: this.store.nextEpoch(), acknowledged: false }));
        await this.pushUnacknowledged();
      }
      const description = (await this.instance({ taskId: active.taskId, placement: to }).describe()) as TaskDescription;
      if (description.lag <= this.config.ACCEPTABLE_RECOVERY_LAG) await this.migrateNow(active.taskId, to);
      else waiting = true;
    }
    if (waiting) await this.ctx.storage.setAlarm(Date.now() + REBALANCE_CHECK_MS);
  }

  private instance(instance: { taskId: string; placement: string }) {
    return this.env.TASK_OBJECT.getByName(`${instance.taskId}@${instance.placement}`);
  }
}

function haltReason(shutdown: ApplicationShutdown): string {
  return `${APPLICATION_SHUT_DOWN}: task ${shutdown.taskId} at ${shutdown.placement} failed: ${shutdown.reason}`;
}
