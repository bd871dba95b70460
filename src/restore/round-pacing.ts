/**
 * When the restore worker's alarm brings the next round (pure). A round that applied something
 * and left work is followed at once; one that applied nothing though work remains (an instance or
 * the log not answering) or failed is retried with a growing back-off — never a hot loop on a
 * dead instance, and never by failing the alarm (Cloudflare drops an alarm after 6 failed
 * retries). On a log that wakes no one (a remote one), caught-up standbys poll their changelogs
 * with the same back-off while they find nothing.
 */
import { backoffDelay } from "../util/backoff";

/** The first wait after a round that applied nothing though work remained. */
export const RETRY_MS = 250;
/** ... doubling per such round, up to this. */
export const MAX_RETRY_MS = 30_000;

/** What a round did, as far as pacing asks. */
export interface RoundOutcome {
  /** Work remains (or the round failed). */
  readonly more: boolean;
  /** It applied a batch or reported corruption. */
  readonly progressed: boolean;
}

export class RoundPacing {
  /** Rounds in a row that applied nothing while work remained (in memory: a restarted worker starts again from `RETRY_MS`). */
  private idleRounds = 0;

  /** `polls`: the log sends no wake-ups, so standbys' changelogs are polled. */
  constructor(private readonly polls: boolean) {}

  /**
   * After a round: in how many ms the next one comes, or undefined when none is due (wake-ups and
   * registrations bring the worker back). `mayHaveGrown` (asked only when the worker polls and no
   * work remains): whether any registered changelog may have grown since it was last read.
   */
  next(round: RoundOutcome, mayHaveGrown: () => boolean): number | undefined {
    this.idleRounds = round.progressed ? 0 : this.idleRounds + 1;
    const backoff = backoffDelay(RETRY_MS, MAX_RETRY_MS, this.idleRounds - 1);
    if (round.more) return round.progressed ? 0 : backoff;
    if (this.polls && mayHaveGrown()) return backoff;
    return undefined;
  }
}
