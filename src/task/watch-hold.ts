/**
 * Whether live subscribers wait on a partition a task instance sends to: an append's answer says
 * `watched` when a subscription hub is among the partition's subscribers (`AppendResult`). While
 * it holds, the instance neither lingers its sends (send-schedule.ts) nor defers its commits
 * (task-executor.ts): a subscriber sees only what is committed and sent, and would wait out both.
 * In memory: a restarted instance paces as usual until an append says again.
 */
import type { AppendResult } from "../log/types";

/**
 * How long a `watched` answer holds: each one renews it, and once the subscribers are gone the
 * instance paces as usual again after this long.
 */
export const WATCHED_HOLD_MS = 5_000;

export class WatchHold {
  private until = -Infinity;

  /** Takes note of an append's answer at `now`. */
  heard(result: AppendResult, now: number): void {
    if (result.watched) this.until = now + WATCHED_HOLD_MS;
  }

  watched(now: number): boolean {
    return now < this.until;
  }
}
