/**
 * How many subscriptions one isolate holds at once: each open stream costs a little memory (one
 * read batch at most, see watch-loop.ts) and reads its changelog partitions while idle; past the
 * limit a new subscription is refused with 503 and `Retry-After` (another isolate, or later, has
 * room). Per isolate, in memory: it bounds one isolate, not the deployment.
 */

/** Open subscriptions one isolate takes at most (docs/subscriptions.md). */
export const MAX_WATCHES_PER_ISOLATE = 256;

export class WatchSlots {
  private open = 0;

  constructor(readonly limit: number = MAX_WATCHES_PER_ISOLATE) {}

  /** A slot, as the function that gives it back (idempotent); undefined when every slot is taken. */
  take(): (() => void) | undefined {
    if (this.open >= this.limit) return undefined;
    this.open++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.open--;
    };
  }

  get taken(): number {
    return this.open;
  }
}
