/**
 * Converging on the goal: every step from the stored goal toward instances that hold it — the
 * assignment reconciled with the configuration, pushed, automatic moves completed, the input
 * reset pushed — each of which may be cut short (the alarm comes back to it), and when the alarm
 * comes back: at once while there is more, with a back-off while something fails or waits, else
 * when the next sweep is due.
 */
import type { AssignmentPusher } from "./assignment-pusher";
import { type Progress, REBALANCE_CHECK_MS } from "./coordinator-context";
import type { InputResets } from "./input-resets";
import type { Reconciler } from "./reconciler";
import type { TaskMoves } from "./task-moves";
import { backoffDelay } from "../util/backoff";
import { logEvent } from "../util/logging";

/** Failed rounds back off from REBALANCE_CHECK_MS, doubling per failed round in a row, up to this. */
const MAX_RETRY_MS = 30_000;

export class Convergence {
  /** Rounds in a row that left something unpushed (for the back-off); in memory only. */
  private failures = 0;

  constructor(
    private readonly reconciler: Reconciler,
    private readonly pusher: AssignmentPusher,
    private readonly moves: TaskMoves,
    private readonly resets: InputResets,
  ) {}

  async converge(): Promise<Progress> {
    this.reconciler.reconcile();
    const pushed = await this.pusher.pushUnacknowledged();
    const moved = await this.moves.offRemovedPlacements().catch((error: unknown) => {
      logEvent("coordinator.move-failed", { error: String(error) }, "warn");
      return { done: false, more: false };
    });
    const reset = await this.resets.push();
    return { done: pushed.done && moved.done && reset.done, more: (pushed.more || moved.more || reset.more) && !pushed.failed };
  }

  /** How long after an alarm's round (`sweeping`: a sweep is under way) the alarm comes back. */
  nextAlarmIn(progress: Progress, sweeping: boolean, sweepDueIn: number): number {
    this.failures = progress.done || progress.more ? 0 : this.failures + 1;
    if (progress.more) return 0;
    if (!progress.done) return backoffDelay(REBALANCE_CHECK_MS, MAX_RETRY_MS, this.failures - 1);
    if (sweeping) return REBALANCE_CHECK_MS;
    return Math.max(0, sweepDueIn);
  }
}
