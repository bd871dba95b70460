/**
 * Moves of a task's active instance to another placement: asked by an operator (`migrate`), or
 * automatic, off a placement no longer configured once its warm-up standby has caught up. A move
 * is stored as the goal first — the active becomes idle (to revoke: flush, commit, checkpoint,
 * close clean), the instance at the target the new active — and pushed in the push plan's order,
 * so the new active starts only once the old one acknowledged. Once begun, a crash or a failed
 * revocation only delays a move: the alarm completes it.
 */
import type { AssignmentPusher } from "./assignment-pusher";
import { type CoordinatorContext, type Progress, REBALANCE_CHECK_MS } from "./coordinator-context";
import type { InstanceAssignment } from "./coordinator-store";
import { MigrationRefused, MigrationUnderWay } from "./migration";
import type { Reconciler } from "./reconciler";
import { warmUpTargets } from "./standbys";

/** Warm-up instances described per invocation to decide automatic moves. */
const MOVE_CHECK_CHUNK = 50;

export type MigrationResult = { readonly changed: boolean; readonly from: string; readonly to: string; readonly epoch: number };

/** What moves need of the application and its configuration. */
export interface MovesConfig {
  /** Whether the application has this task. */
  hasTask(taskId: string): boolean;
  /** The configured placements. */
  readonly placements: readonly string[];
  /** ACCEPTABLE_RECOVERY_LAG (Kafka's acceptable.recovery.lag): how close a warm-up standby must be to take over. */
  readonly acceptableRecoveryLag: number;
}

export class TaskMoves {
  constructor(
    private readonly context: CoordinatorContext,
    private readonly config: MovesConfig,
    private readonly reconciler: Reconciler,
    private readonly pusher: AssignmentPusher,
  ) {}

  /**
   * Moves a task's active instance to `to`; the instance left behind stays as an idle (or
   * standby) instance with its store and checkpoint. Fails with MigrationUnderWay when the move
   * has begun but the new active has not taken its assignment yet.
   */
  async migrate(taskId: string, to: string): Promise<MigrationResult> {
    const { store } = this.context;
    if (!this.config.hasTask(taskId)) throw new MigrationRefused(`unknown task ${JSON.stringify(taskId)}`);
    if (!this.config.placements.includes(to)) throw new MigrationRefused(`unknown placement ${JSON.stringify(to)}`);
    this.reconciler.reconcile();
    const active = store.activeOf(taskId)!;
    if (active.placement !== to) {
      await this.context.armAlarm(REBALANCE_CHECK_MS);
      store.transaction(() => this.storeMove(active, to));
      await this.context.reach("migrate:after-intent");
      this.reconciler.reconcile();
    }
    await this.pusher.pushUnacknowledged(taskId);
    const now = store.activeOf(taskId)!;
    if (!now.acknowledged)
      throw new MigrationUnderWay(
        `the move of task ${taskId} to ${to} is under way and completes on its own: ${this.pusher.lastError ?? "an instance has not answered yet"}`,
      );
    return { changed: active.placement !== to, from: active.placement, to, epoch: now.epoch };
  }

  /**
   * Actives on placements no longer configured move once their warm-up standby (see ./reconcile.ts)
   * is within the acceptable recovery lag: MOVE_CHECK_CHUNK warm-up instances described per call,
   * the moves found stored together and pushed. Not done while one is still catching up or left
   * unchecked (the alarm checks again).
   */
  async offRemovedPlacements(): Promise<Progress> {
    const { store } = this.context;
    const targets = warmUpTargets(store.instances(), this.config.placements);
    if (targets.length === 0) return { done: true, more: false };
    let waiting = false;
    const checks: InstanceAssignment[] = [];
    for (const { taskId, placement: to } of targets) {
      const warm = store.get(taskId, to);
      if (!warm?.acknowledged || checks.length >= MOVE_CHECK_CHUNK) waiting = true;
      else checks.push(warm);
    }
    const described = await Promise.allSettled(checks.map((warm) => this.context.instance(warm).describe()));
    const ready = checks.filter((_, i) => {
      const d = described[i]!;
      const caughtUp = d.status === "fulfilled" && d.value.lag <= this.config.acceptableRecoveryLag;
      if (!caughtUp) waiting = true;
      return caughtUp;
    });
    if (ready.length > 0) {
      await this.context.armAlarm(REBALANCE_CHECK_MS);
      store.transaction(() => {
        for (const warm of ready) this.storeMove(store.activeOf(warm.taskId)!, warm.placement);
      });
      this.reconciler.reconcile();
      const pushed = await this.pusher.pushUnacknowledged();
      if (!pushed.done) waiting = true;
    }
    if (waiting) await this.context.armAlarm(REBALANCE_CHECK_MS);
    return { done: !waiting, more: false };
  }

  /** The goal of a move: the active becomes idle (to revoke), the instance at `to` the new active. */
  private storeMove(active: InstanceAssignment, to: string): void {
    const { store } = this.context;
    store.put({ ...active, role: "idle", acknowledged: false });
    store.put({ taskId: active.taskId, placement: to, role: "active", epoch: store.nextEpoch(), acknowledged: false });
  }
}
