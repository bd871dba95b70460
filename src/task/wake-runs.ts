/**
 * How a task instance's wake-ups meet its runs (the alarm's, or one a wake-up starts). A wake-up
 * with no run in progress starts one when the instance would look at once, else has it look when
 * it would (the in-memory timer, with the alarm behind it); one that comes while a run is in
 * progress is only noted: the run takes another step for it, or looks again as it ends. So a busy
 * instance writes no alarm per wake-up. In memory: a run that dies loses the note, and the partition wakes its readers again
 * while they lag (an alarm's run is also retried by the runtime).
 */

/** What a wake-up does: start a run now, look when the instance would (`"arm"`: its timer), or leave a note for the run in progress. */
export type WakeAction = "run" | "arm" | "noted";

export class WakeRuns {
  /** Runs in progress: an alarm's and a wake-up's may overlap (they take turns at the task). */
  private running = 0;
  /** A wake-up came while a run was in progress, and no run has taken it yet. */
  private woken = false;

  /** A wake-up at `now` of an instance that looks at its input next at `lookAt`. */
  wake(lookAt: number, now: number): WakeAction {
    if (this.running > 0) {
      this.woken = true;
      return "noted";
    }
    return lookAt <= now ? "run" : "arm";
  }

  started(): void {
    this.running++;
  }

  /** A step took all the input waiting: whether a wake-up came meanwhile (then the run goes on, and the note is taken). */
  takeWoken(): boolean {
    const woken = this.woken;
    this.woken = false;
    return woken;
  }

  /** A run ended: whether it must look again for a wake-up no run took (the last run to end answers). */
  ended(): boolean {
    this.running--;
    return this.running === 0 && this.takeWoken();
  }
}
