/**
 * Window specifications, named as in Kafka Streams: `TimeWindows` (tumbling, or hopping with
 * `advanceBy`), `SlidingWindows`, `SessionWindows` and `JoinWindows`. Grace is the time, in
 * stream time, a window keeps accepting out-of-order records after it ends; once stream time has
 * passed a window's close time the window is final and records for it are late (dropped, counted).
 * Stream time here is the largest timestamp the operator has seen (kept in its store).
 */
import { TopologyError } from "../errors";
import type { Window } from "../windowed";

function checkDuration(what: string, ms: number, min: number): number {
  if (!Number.isSafeInteger(ms) || ms < min) throw new TopologyError(`${what} must be an integer of milliseconds >= ${min}, got ${ms}`);
  return ms;
}

/** Fixed-size windows `[start, start + size)` starting every `advance` ms from the epoch (tumbling when advance = size). */
export class TimeWindows {
  private constructor(
    readonly sizeMs: number,
    readonly advanceMs: number,
    readonly graceMs: number,
  ) {}

  static ofSizeAndGrace(sizeMs: number, graceMs: number): TimeWindows {
    const size = checkDuration("window size", sizeMs, 1);
    return new TimeWindows(size, size, checkDuration("grace", graceMs, 0));
  }

  static ofSizeWithNoGrace(sizeMs: number): TimeWindows {
    return TimeWindows.ofSizeAndGrace(sizeMs, 0);
  }

  /** Hopping windows: a new window every `advanceMs` (at most the size), so windows overlap. */
  advanceBy(advanceMs: number): TimeWindows {
    const advance = checkDuration("advance", advanceMs, 1);
    if (advance > this.sizeMs) throw new TopologyError(`advance (${advance} ms) must not exceed the window size (${this.sizeMs} ms)`);
    return new TimeWindows(this.sizeMs, advance, this.graceMs);
  }

  /** The windows a timestamp falls in, earliest first; none starts before 0. */
  windowsFor(timestamp: number): Window[] {
    const windows: Window[] = [];
    const first = Math.floor(Math.max(0, timestamp - this.sizeMs + this.advanceMs) / this.advanceMs) * this.advanceMs;
    for (let start = first; start <= timestamp; start += this.advanceMs) windows.push({ start, end: start + this.sizeMs });
    return windows;
  }

  /** Stream time from which the window is final (its end is exclusive). */
  closeTime(window: Window): number {
    return window.end + this.graceMs;
  }

  /** The shortest retention that keeps every open window. */
  get minRetentionMs(): number {
    return this.sizeMs + this.graceMs;
  }
}

/**
 * Windows of `timeDifference` ms that slide with the records: for each record, the window ending
 * at it (`[t - difference, t]`) and the one starting just after it, when that holds records.
 * Both ends are inclusive; windows of records before `difference` start at 0.
 */
export class SlidingWindows {
  private constructor(
    readonly timeDifferenceMs: number,
    readonly graceMs: number,
  ) {}

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): SlidingWindows {
    return new SlidingWindows(checkDuration("time difference", timeDifferenceMs, 1), checkDuration("grace", graceMs, 0));
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): SlidingWindows {
    return SlidingWindows.ofTimeDifferenceAndGrace(timeDifferenceMs, 0);
  }

  /** Stream time from which the window is final (its end is inclusive). */
  closeTime(window: Window): number {
    return window.end + 1 + this.graceMs;
  }

  get minRetentionMs(): number {
    return this.timeDifferenceMs + 1 + this.graceMs;
  }
}

/**
 * Sessions: records of a key less than `inactivityGap` apart belong to one session, which grows
 * (and merges with neighbours) as records come. Both ends are inclusive.
 */
export class SessionWindows {
  private constructor(
    readonly inactivityGapMs: number,
    readonly graceMs: number,
  ) {}

  static ofInactivityGapAndGrace(inactivityGapMs: number, graceMs: number): SessionWindows {
    return new SessionWindows(checkDuration("inactivity gap", inactivityGapMs, 1), checkDuration("grace", graceMs, 0));
  }

  static ofInactivityGapWithNoGrace(inactivityGapMs: number): SessionWindows {
    return SessionWindows.ofInactivityGapAndGrace(inactivityGapMs, 0);
  }

  /**
   * Stream time from which the session is final. A record is on time while its session's end is
   * at least `stream time - grace`, and a record up to `gap` after the end extends the session:
   * so a session can grow until stream time passes `end + gap + grace`.
   */
  closeTime(session: Window): number {
    return session.end + this.inactivityGapMs + this.graceMs + 1;
  }

  /** Whether a record whose session would be `session` is late (Kafka: the session's end is before stream time - grace). */
  isLate(session: Window, streamTime: number): boolean {
    return session.end + this.graceMs < streamTime;
  }

  get minRetentionMs(): number {
    return this.inactivityGapMs + this.graceMs;
  }
}

/**
 * Stream-stream joins pair records of the two sides whose timestamps differ by at most
 * `timeDifference` ms. A record is late once stream time has passed `t + difference + grace`
 * (no partner it could still meet would be on time either).
 */
export class JoinWindows {
  private constructor(
    readonly timeDifferenceMs: number,
    readonly graceMs: number,
  ) {}

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    return new JoinWindows(checkDuration("time difference", timeDifferenceMs, 0), checkDuration("grace", graceMs, 0));
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    return JoinWindows.ofTimeDifferenceAndGrace(timeDifferenceMs, 0);
  }
}
