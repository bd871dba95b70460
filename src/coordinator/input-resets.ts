/**
 * Input resets of the whole application (`POST /admin/reset`, src/task/input-reset.ts) as the
 * coordinator drives them: stored as the goal first (the alarm armed before), then pushed to the
 * active instance of every task reading a topic reset, PUSH_CHUNK per invocation, the alarm going
 * on with the rest. Each task applies a reset once (it keeps its id), so pushing again after a
 * crash changes nothing. One reset at a time.
 */
import { type CoordinatorContext, type Progress, PUSH_CHUNK, REBALANCE_CHECK_MS } from "./coordinator-context";
import { haltReason } from "./push-plan";
import type { Reconciler } from "./reconciler";
import type { Application } from "../application";
import { type InputReset, type PartitionReset, type ResetTarget, resets } from "../task/input-reset";
import { logEvent } from "../util/logging";

/** An input reset as operators see it: what was asked, what the tasks that applied it did, and how many have not yet. */
export interface InputResetView {
  readonly id: string;
  readonly target: ResetTarget;
  readonly topics: readonly string[];
  readonly startedAt: number;
  /** When the last task applied it; null while some have not (the coordinator's alarm goes on). */
  readonly finishedAt: number | null;
  readonly partitions: readonly PartitionReset[];
  /** Tasks that have not applied it yet. */
  readonly pending: number;
}

/** What asking for a reset did: started one; found this very reset (the same `id`) made already; or another one still under way. */
export type ResetAnswer = { readonly status: "started" | "same" | "busy"; readonly reset: InputResetView };

export class InputResets {
  constructor(
    private readonly context: CoordinatorContext,
    private readonly application: Pick<Application, "taskIds" | "inputPartitions" | "isGlobalInput">,
    private readonly reconciler: Reconciler,
  ) {}

  /** Starts `request` unless it is the last reset (answers its state) or another is under way. */
  async start(request: InputReset): Promise<ResetAnswer> {
    const { store } = this.context;
    const current = store.inputReset();
    if (current?.id === request.id) return { status: "same", reset: this.view()! };
    if (current && current.finishedAt === null) return { status: "busy", reset: this.view()! };
    const application = this.application;
    const tasks = application
      .taskIds()
      .filter((t) => application.inputPartitions(t).some((tp) => !application.isGlobalInput(t, tp.topic) && resets(request, tp)));
    await this.context.armAlarm(REBALANCE_CHECK_MS);
    store.transaction(() => store.startReset(request, tasks, Date.now()));
    logEvent("coordinator.input-reset", { id: request.id, to: request.target.to, topics: request.topics.join(","), tasks: tasks.length }, "warn");
    await this.context.reach("reset:after-record");
    this.reconciler.reconcile();
    await this.push();
    return { status: "started", reset: this.view()! };
  }

  /** The last input reset and how far it is (undefined when there never was one). */
  view(): InputResetView | undefined {
    const reset = this.context.store.inputReset();
    if (!reset) return undefined;
    const { applied, pending } = this.context.store.resetResults();
    return { ...reset, partitions: applied.flatMap((a) => a.partitions), pending };
  }

  /**
   * Tells the active instances of tasks that have not applied the input reset yet (a chunk), and
   * notes what each did; the reset is finished once none is left. A task whose active has not
   * taken its assignment yet, or does not answer, is told again later (the alarm).
   */
  async push(): Promise<Progress> {
    const { store } = this.context;
    const reset = store.inputReset();
    if (!reset || reset.finishedAt !== null) return { done: true, more: false };
    const pending = store.resetPending(PUSH_CHUNK);
    if (pending.length > 0) {
      await this.context.armAlarm(REBALANCE_CHECK_MS);
      const shutdown = store.shutdown();
      const halted = shutdown ? haltReason(shutdown) : undefined;
      const results = await Promise.allSettled(
        pending.map(async (taskId) => {
          const active = store.activeOf(taskId);
          return active?.acknowledged ? this.context.instance(active).resetInput(reset, halted) : undefined;
        }),
      );
      store.transaction(() =>
        results.forEach((result, i) => {
          if (result.status === "fulfilled" && result.value) store.resetApplied(pending[i]!, result.value);
        }),
      );
      const failed = results.filter((r) => r.status === "rejected" || !r.value).length;
      if (failed > 0) logEvent("coordinator.input-reset-waiting", { id: reset.id, tasks: failed }, "warn");
      if (store.resetPending(1).length > 0) return { done: false, more: failed === 0 && pending.length >= PUSH_CHUNK };
    }
    store.transaction(() => store.finishReset(Date.now()));
    logEvent("coordinator.input-reset-done", { id: reset.id }, "warn");
    return { done: true, more: false };
  }
}
