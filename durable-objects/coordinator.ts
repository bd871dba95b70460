/**
 * `Coordinator`: one per application. It owns the assignment of task instances to placements and
 * hands every assignment a fresh epoch (I3). Instances learn their assignment from it by RPC and
 * acknowledge; assignments not yet acknowledged are pushed again on the next call.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig } from "../src/config";
import { assignActives } from "../src/coordinator/assignor";
import { CoordinatorStore, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { Serial } from "../src/util/serial";
import { application } from "../workers/application";
import type { Env } from "../workers/env";

export class Coordinator extends DurableObject<Env> {
  private readonly store: CoordinatorStore;
  private readonly serial = new Serial();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new CoordinatorStore(ctx.storage);
  }

  private get placements(): string[] {
    return readConfig(this.env as unknown as Record<string, unknown>).PLACEMENTS;
  }

  /** The assignment, made on first use; every instance of it has been told. */
  async ensureAssigned(): Promise<InstanceAssignment[]> {
    return this.serial.run(async () => {
      const instances = this.store.instances();
      const actives = instances.filter((i) => i.role === "active");
      const taskIds = application.taskIds();
      if (actives.length < taskIds.length) {
        const wanted = assignActives(taskIds, this.placements, actives);
        this.store.transaction(() => {
          for (const { taskId, placement } of wanted) {
            if (actives.some((a) => a.taskId === taskId)) continue;
            this.store.put({ taskId, placement, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
          }
        });
      }
      await this.pushUnacknowledged();
      return this.store.instances();
    });
  }

  /** The current assignment, without changing it. */
  async assignments(): Promise<InstanceAssignment[]> {
    return this.store.instances();
  }

  /**
   * Corruption reported by the restore worker (or a task): every instance named is closed dirty,
   * wiped and revived as a new incarnation, all of one report together.
   */
  async reportCorruption(corrupted: readonly { instance: string; incarnation: number }[]): Promise<void> {
    await Promise.all(corrupted.map(({ instance, incarnation }) => this.env.TASK_OBJECT.getByName(instance).corrupt(incarnation)));
  }

  private async pushUnacknowledged(): Promise<void> {
    const pending = this.store.instances().filter((i) => !i.acknowledged);
    await Promise.all(
      pending.map(async (instance) => {
        await this.env.TASK_OBJECT.getByName(`${instance.taskId}@${instance.placement}`).assign({
          taskId: instance.taskId,
          placement: instance.placement,
          role: instance.role,
          epoch: instance.epoch,
        });
        this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
      }),
    );
  }
}
