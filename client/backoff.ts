/**
 * When to try again: exponential back-off with jitter (so many clients cut off at once do not all
 * come back at once), never sooner than a server's `Retry-After`. Which answers are worth another
 * try: network failures, 408, 425, 429 and 5xx; any other status is the caller's to fix.
 */

export interface Backoff {
  /** The first wait (ms). Default 500. */
  readonly initialMs?: number;
  /** The longest wait (ms). Default 30,000. */
  readonly maxMs?: number;
  /** Each failure in a row multiplies the wait by this. Default 2. */
  readonly factor?: number;
}

export const DEFAULT_BACKOFF: Required<Backoff> = { initialMs: 500, maxMs: 30_000, factor: 2 };

/**
 * The wait before attempt `failures + 1` after `failures` failures in a row (0: the first retry):
 * between half and all of `initialMs · factor^failures`, capped at `maxMs`.
 */
export function backoffDelay(failures: number, backoff: Backoff = {}, random: () => number = Math.random): number {
  const { initialMs, maxMs, factor } = { ...DEFAULT_BACKOFF, ...backoff };
  const ceiling = Math.min(maxMs, initialMs * factor ** Math.max(0, failures));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** A `Retry-After` header (seconds, or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (header === null || header === undefined || header.trim() === "") return undefined;
  const text = header.trim();
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Whether an HTTP status is worth another try (the same request may succeed later). */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}
