/**
 * The back-off of the `"retry"` uncaught-error policy: after each failed attempt the task waits
 * twice as long as before (from `initialMs`, at most `maxMs`) before processing the same input
 * again; a commit that succeeds starts over. A record that always fails is retried forever, as
 * with Kafka's REPLACE_THREAD, but at most once per `maxMs`, so it costs little while it waits
 * for someone to fix the cause. Kept in memory: an object that restarts retries at once.
 */
export interface BackoffSettings {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { initialMs: 1_000, maxMs: 60_000 };

export class RetryBackoff {
  private failures = 0;
  private until = 0;

  constructor(private readonly settings: BackoffSettings = DEFAULT_BACKOFF) {
    if (!(settings.initialMs >= 1 && settings.maxMs >= settings.initialMs)) {
      throw new RangeError(`a retry back-off needs 1 <= initialMs <= maxMs, got ${settings.initialMs} and ${settings.maxMs}`);
    }
  }

  /** An attempt failed at `now`: returns when the next one may start. */
  failed(now: number): number {
    const delay = Math.min(this.settings.maxMs, this.settings.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    this.until = now + delay;
    return this.until;
  }

  /** An attempt succeeded (or an operator resumed the task): no waiting any more. */
  reset(): void {
    this.failures = 0;
    this.until = 0;
  }

  /** Failed attempts since the last success. */
  get attempts(): number {
    return this.failures;
  }

  /** When the next attempt may start, if the task is waiting at `now`; else undefined. */
  waitingUntil(now: number): number | undefined {
    return this.until > now ? this.until : undefined;
  }
}
