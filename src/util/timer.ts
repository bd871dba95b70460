/**
 * An in-memory timer armed at the earliest time anyone asked for: `EarliestAlarm` without the
 * storage write, and gone with the object. Only for work that something durable also brings back
 * (a restarted object must not depend on it).
 */
export class EarliestTimer {
  private at = Infinity;
  private handle: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly fire: () => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Fires at `at`, unless it is armed sooner. */
  armBy(at: number): void {
    if (at >= this.at) return;
    if (this.handle !== undefined) clearTimeout(this.handle);
    this.at = at;
    this.schedule();
  }

  private schedule(): void {
    this.handle = setTimeout(
      () => {
        // Timers may run a millisecond before the clock reaches their time (Node rounds): never fire early.
        if (this.clock() < this.at) return this.schedule();
        this.at = Infinity;
        this.handle = undefined;
        this.fire();
      },
      Math.max(0, this.at - this.clock()),
    );
  }

  /** When it fires; undefined when not armed. */
  get armedAt(): number | undefined {
    return this.at === Infinity ? undefined : this.at;
  }
}
