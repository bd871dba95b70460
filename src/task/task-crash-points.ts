/**
 * The crash points of a task instance (src/util/crash-points.ts): at a step of its lifecycle
 * operations, or at a step of a commit. A commit dies only inside a drain, so that a test chooses
 * which commit dies; while a commit crash is planned, runs leave commits to the drain.
 */
import { CrashPoints } from "../util/crash-points";
import { COMMIT_STEPS, type CommitStep, type LifecycleStep } from "./protocol";

export class TaskCrashPoints extends CrashPoints<CommitStep | LifecycleStep> {
  private draining = false;

  /** A commit reached `step` (`StreamTask`'s `onCommitStep`): dies there when planned and a drain runs it. */
  async reachCommitStep(step: CommitStep): Promise<void> {
    if (this.draining) await this.reachAfterWrites(step);
  }

  /** Runs a drain: its commits may die at a planned step. */
  async drain<T>(work: () => Promise<T>): Promise<T> {
    this.draining = true;
    try {
      return await work();
    } finally {
      this.draining = false;
    }
  }

  /** A commit crash is planned: only a drain may run commits until it happens. */
  get commitCrashPlanned(): boolean {
    return (COMMIT_STEPS as readonly string[]).includes(this.pending ?? "");
  }
}
