/**
 * How a task instance runs steps: while there is work, at most `maxSteps`. With `linger` (a run:
 * the alarm's or a wake-up's, which commits when due), it stops after a commit that took all the
 * input there was: under load (`lingering`) its driver resumes at the next commit; otherwise,
 * unless a wake-up came meanwhile, another fetch now would only find nothing, and what is appended
 * next wakes the instance. A log that wakes no one (`polls`) is polled: there the steps go on
 * until one finds nothing. Without `linger` (a drain) every step commits at once.
 */
import type { LifecycleHistory } from "./lifecycle";
import type { StepOutcome } from "./protocol";
import type { StreamTask } from "./stream-task";
import type { WakeRuns } from "./wake-runs";

export interface StepsRun {
  readonly worked: number;
  readonly outcome: StepOutcome;
  readonly lingering: boolean;
}

export interface StepLoop {
  readonly task: StreamTask;
  readonly wakeRuns: WakeRuns;
  /** Where the turn to RUNNING and a failure that stopped the instance are kept. */
  readonly lifecycle: LifecycleHistory;
  readonly polls: boolean;
}

export async function runSteps({ task, wakeRuns, lifecycle, polls }: StepLoop, maxSteps: number, linger: boolean): Promise<StepsRun> {
  const before = task.meta();
  let worked = 0;
  let outcome: StepOutcome = "idle";
  try {
    while (worked < maxSteps) {
      outcome = await task.step(linger ? "when-due" : "at-once");
      if (outcome !== "more") break;
      worked++;
      if (linger && !task.backlog) {
        if (task.loaded) return { worked, outcome, lingering: true };
        // Input came meanwhile (or may have, with a polled log): the next step takes it now.
        const woken = wakeRuns.takeWoken();
        if (!polls && !woken) return { worked, outcome: "idle", lingering: false };
      }
    }
  } finally {
    lifecycle.noteRunning(before, task.meta());
    lifecycle.noteFailure(before, task.meta());
  }
  return { worked, outcome, lingering: false };
}
