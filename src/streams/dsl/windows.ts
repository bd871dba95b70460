/**
 * Window specifications, named as in Kafka Streams: `TimeWindows` (tumbling, or hopping with
 * `advanceBy`), `SlidingWindows`, `SessionWindows` and `JoinWindows`. Grace is the time, in
 * stream time, a window keeps accepting out-of-order records after it ends; once stream time has
 * passed a window's close time the window is final and records for it are late (dropped, counted).
 * Stream time here is the largest timestamp the operator has seen (kept in its store).
 * Bounds, lateness and default retentions are Kafka Streams'.
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

  /** The start of the latest window holding `timestamp`. */
  latestStart(timestamp: number): number {
    return Math.floor(timestamp / this.advanceMs) * this.advanceMs;
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

  /**
   * As Kafka's: 2 × difference + grace. A new record's windows are built from the windows that
   * start up to two differences before it, so those must still be kept.
   */
  get minRetentionMs(): number {
    return 2 * this.timeDifferenceMs + this.graceMs;
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
   * Stream time from which the session is final: a record up to `gap` after its end extends it,
   * and such a record is on time until stream time passes `end + gap + grace` (KAFKA-12718).
   */
  closeTime(session: Window): number {
    return session.end + this.inactivityGapMs + this.graceMs + 1;
  }

  /** Whether a record whose session would be `session` is late: stream time is past its end + gap + grace (Kafka, KAFKA-12718). */
  isLate(session: Window, streamTime: number): boolean {
    return session.end + this.inactivityGapMs + this.graceMs < streamTime;
  }

  /** As Kafka's default: gap + grace. */
  get minRetentionMs(): number {
    return this.inactivityGapMs + this.graceMs;
  }
}

/**
 * Stream-stream joins pair a record at `t` with the other side's records of the same key from
 * `t - before` to `t + after` (for the other side's records the window is mirrored). Both are
 * `timeDifference` unless changed with `before`/`after`; `before + after` must not be negative.
 * A record that found no partner (left and outer joins) is joined with null once stream time
 * passes its window's end + grace.
 */
export class JoinWindows {
  private constructor(
    readonly beforeMs: number,
    readonly afterMs: number,
    readonly graceMs: number,
  ) {
    if (!Number.isSafeInteger(beforeMs) || !Number.isSafeInteger(afterMs))
      throw new TopologyError(`join window bounds must be integers of milliseconds, got ${beforeMs} and ${afterMs}`);
    if (beforeMs + afterMs < 0) throw new TopologyError(`a join window must not end before it starts: before ${beforeMs} ms + after ${afterMs} ms < 0`);
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    const difference = checkDuration("time difference", timeDifferenceMs, 0);
    return new JoinWindows(difference, difference, checkDuration("grace", graceMs, 0));
  }

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    return JoinWindows.ofTimeDifferenceAndGrace(timeDifferenceMs, 0);
  }

  /** How far before a left record a right record may be (Kafka's `JoinWindows.before`); may be negative. */
  before(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(timeDifferenceMs, this.afterMs, this.graceMs);
  }

  /** How far after a left record a right record may be (Kafka's `JoinWindows.after`); may be negative. */
  after(timeDifferenceMs: number): JoinWindows {
    return new JoinWindows(this.beforeMs, timeDifferenceMs, this.graceMs);
  }

  /** How long each side keeps its records, as Kafka's join stores do: before + after + grace. */
  get retentionMs(): number {
    return this.beforeMs + this.afterMs + this.graceMs;
  }
}
