/**
 * Tells instances their unacknowledged assignments in the order of the push plan (./push-plan.ts)
 * and records each acknowledgement. The alarm is armed before any push, so a crash at any await
 * leaves the stored goal for the alarm to push again; pushing again is idempotent at an instance.
 */
import { type CoordinatorContext, PUSH_CHUNK, REBALANCE_CHECK_MS } from "./coordinator-context";
import type { InstanceAssignment } from "./coordinator-store";
import { type ApplicationState, assignmentOf, readyActives, revocationsAndStandbys } from "./push-plan";
import { instanceName } from "../names";
import type { InstanceAck } from "../task/protocol";
import { logEvent } from "../util/logging";

/** What a round of pushes did: nothing left unacknowledged; the chunk was full; some could not be told; and the answers. */
export interface PushRound {
  readonly done: boolean;
  readonly more: boolean;
  readonly failed: boolean;
  readonly acks: (InstanceAck | undefined)[];
}

export class AssignmentPusher {
  /** Why the last push failed, for the error of a migration left under way. */
  lastError: string | undefined;

  constructor(private readonly context: CoordinatorContext) {}

  /**
   * One round: at most PUSH_CHUNK instances (`focus`'s first), revocations and standbys before
   * the actives they make way for. Every instance of the round is told even when one cannot be.
   */
  async pushUnacknowledged(focus?: string): Promise<PushRound> {
    const { store } = this.context;
    if (!store.instances().some((i) => !i.acknowledged)) return { done: true, more: false, failed: false, acks: [] };
    await this.context.armAlarm(REBALANCE_CHECK_MS);
    const others = revocationsAndStandbys(store.instances(), { limit: PUSH_CHUNK, focus });
    const first = await this.pushAll(others);
    const actives = readyActives(store.instances(), { limit: PUSH_CHUNK - others.length, focus });
    const second = await this.pushAll(actives);
    const failed = first.failed + second.failed > 0;
    const left = store.instances().some((i) => !i.acknowledged);
    if (store.settings.resuming() && !store.instances().some((i) => !i.acknowledged && i.role === "active")) store.settings.setResuming(false);
    return { done: !left, more: left && !failed && others.length + actives.length >= PUSH_CHUNK, failed, acks: [...first.acks, ...second.acks] };
  }

  /** What instances are told besides their role and epoch: the shutdown, or that it was lifted. */
  applicationState(): ApplicationState {
    return { shutdown: this.context.store.shutdown(), resuming: this.context.store.settings.resuming() };
  }

  /** Pushes each instance's assignment and records each acknowledgement; answers the acknowledgements and how many failed. */
  private async pushAll(instances: readonly InstanceAssignment[]): Promise<{ acks: (InstanceAck | undefined)[]; failed: number }> {
    const { store } = this.context;
    const results = await Promise.allSettled(
      instances.map(async (instance) => {
        const ack = await this.push(instance);
        await this.context.reach("push:after-instance");
        store.transaction(() => store.acknowledge(instance.taskId, instance.placement, instance.epoch));
        return ack;
      }),
    );
    const failed = instances.filter((_, i) => results[i]!.status === "rejected");
    const reasons = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => String(r.reason));
    if (reasons.length > 0) {
      this.lastError = reasons[0];
      logEvent("coordinator.push-failed", { instances: failed.map(instanceName).join(","), error: reasons[0] }, "warn");
    }
    const acks = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    return { acks, failed: failed.length };
  }

  /**
   * Tells one instance its assignment: a revocation for an idle one, else the assignment (halted
   * while the application is shut down). Answers the state the instance took (none: an instance
   * revoked before it ever had an assignment).
   */
  private async push(instance: InstanceAssignment): Promise<InstanceAck | undefined> {
    const calls = this.context.instance(instance);
    if (instance.role === "idle") return calls.revoke();
    return calls.assign(assignmentOf(instance, this.applicationState()));
  }
}
