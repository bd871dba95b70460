/**
 * Operators' requests about one task (`POST /admin/tasks/:id/resume`, `.../skip`), which the
 * coordinator passes to the task's active instance once that has taken its assignment (pushed
 * first, the task's instances before others').
 */
import type { AssignmentPusher } from "./assignment-pusher";
import type { CoordinatorContext } from "./coordinator-context";
import type { ApplicationShutdown } from "./coordinator-store";
import { haltReason } from "./push-plan";
import type { Reconciler } from "./reconciler";
import type { RecordOrigin } from "../streams/errors";
import type { TaskDescription } from "../task/describe";
import type { SkipAnswer } from "../task/protocol";

/** What resuming one task found: resumed, or refused because the whole application is shut down. */
export type TaskResumeResult =
  | { readonly status: "resumed"; readonly task: TaskDescription }
  | { readonly status: "application-shut-down"; readonly shutdown: ApplicationShutdown };

export class TaskRequests {
  constructor(
    private readonly context: CoordinatorContext,
    private readonly reconciler: Reconciler,
    private readonly pusher: AssignmentPusher,
  ) {}

  /** Resumes a task stopped by its own uncaught error; refused while the application is shut down. */
  async resume(taskId: string): Promise<TaskResumeResult> {
    const shutdown = this.context.store.shutdown();
    if (shutdown) return { status: "application-shut-down", shutdown };
    return { status: "resumed", task: await (await this.activeOf(taskId)).resume() };
  }

  /**
   * Passes over the record a task stopped at: its active instance keeps the skip and runs again —
   * or, while the application is shut down, stays stopped with the shutdown and passes over the
   * record once it is lifted.
   */
  async skip(taskId: string, at: RecordOrigin): Promise<SkipAnswer> {
    const active = await this.activeOf(taskId);
    const shutdown = this.context.store.shutdown();
    return active.skip(at, shutdown ? haltReason(shutdown) : undefined);
  }

  /** The task's active instance, its assignment pushed first. */
  private async activeOf(taskId: string) {
    this.reconciler.reconcile();
    await this.pusher.pushUnacknowledged(taskId);
    return this.context.instance(this.context.store.activeOf(taskId)!);
  }
}
