/**
 * The delay of an exponential back-off: `initialMs` doubled `doublings` times (at most 16, so the
 * number stays finite), and never more than `maxMs`. Alarms of the Durable Objects use it for
 * retries and polls.
 */
export function backoffDelay(initialMs: number, maxMs: number, doublings: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(doublings, 16));
}
