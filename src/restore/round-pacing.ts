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
  /** Of it, work due at once (a changelog not reached, or behind); without it, only growth heard during the round. Default: all of it. */
  readonly backlog?: boolean;
  /** It applied a batch or reported corruption. */
  readonly progressed: boolean;
}

export class RoundPacing {
  /** Rounds in a row that applied nothing while work remained (in memory: a restarted worker starts again from `RETRY_MS`). */
  private idleRounds = 0;
  /** When the latest round began (in memory: a restarted worker's first growth is read at once). */
  private lastRoundAt = Number.NEGATIVE_INFINITY;

  /**
   * `polls`: the log sends no wake-ups, so standbys' changelogs are polled. `updateEveryMs`
   * (STANDBY_UPDATE_INTERVAL_MS): the least time from one round's start to the next round a
   * changelog's growth brings — standbys are fed at most that often, each round taking every
   * append since the last (a fetch, a batch and the standby's rows per round instead of per commit
   * of a busy task; issue #33).
   */
  constructor(
    private readonly polls: boolean,
    private readonly updateEveryMs = 0,
  ) {}

  /** A round begins at `now`. */
  began(now: number): void {
    this.lastRoundAt = now;
  }

  /** A changelog grew (a wake-up) at `now`: in how many ms the round that reads it comes. */
  afterGrowth(now: number): number {
    return Math.max(0, this.lastRoundAt + this.updateEveryMs - now);
  }

  /**
   * After a round: in how many ms the next one comes, or undefined when none is due (wake-ups and
   * registrations bring the worker back). `mayHaveGrown` (asked only when the worker polls and no
   * work remains): whether any registered changelog may have grown since it was last read. `now`:
   * when the round ended; with it, a round that left only growth heard meanwhile is followed at
   * the next update (`afterGrowth`) rather than at once.
   */
  next(round: RoundOutcome, mayHaveGrown: () => boolean, now?: number): number | undefined {
    this.idleRounds = round.progressed ? 0 : this.idleRounds + 1;
    const backoff = backoffDelay(RETRY_MS, MAX_RETRY_MS, this.idleRounds - 1);
    if (round.more) {
      if (!round.progressed) return backoff;
      return round.backlog === false && now !== undefined ? this.afterGrowth(now) : 0;
    }
    if (this.polls && mayHaveGrown()) return backoff;
    return undefined;
  }
}
