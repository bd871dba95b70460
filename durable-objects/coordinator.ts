/**
 * `Coordinator`: one per application. It owns the assignment of task instances to placements —
 * actives, standbys, and idle instances that keep state where a task used to run — and hands every
 * assignment a fresh epoch (I3). Revocation is acknowledged before the task is assigned elsewhere;
 * corruption reports wipe and revive the instances named, all of a report together. Its state is
 * durable: after a restart, assignments and epochs continue.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig, type Config } from "../src/config";
import { assignActives } from "../src/coordinator/assignor";
import { CoordinatorStore, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { placeStandbys } from "../src/coordinator/standbys";
import type { TaskDescription } from "../src/task/describe";
import { Serial } from "../src/util/serial";
import { application } from "#application";
import type { Env } from "../workers/env";

/** How often pending automatic moves are re-checked while a warm-up catches up. */
const REBALANCE_CHECK_MS = 1_000;

export type MigrationResult = { readonly changed: boolean; readonly from: string; readonly to: string; readonly epoch: number };

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

  /** The assignment, made or repaired as needed; every instance of it has been told. */
  async ensureAssigned(): Promise<InstanceAssignment[]> {
    return this.serial.run(async () => {
      this.reconcile();
      await this.pushUnacknowledged();
      await this.moveOffRemovedPlacements();
      return this.store.instances();
    });
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
    return this.serial.run(() => this.migrateNow(taskId, to));
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
    await Promise.all(
      pending
        .filter((i) => i.role !== "idle")
        .map(async (instance) => {
          await this.instance(instance).assign({ taskId: instance.taskId, placement: instance.placement, role: instance.role, epoch: instance.epoch });
          this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
        }),
    );
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
