/**
 * `JoinWindows`: how far apart in time the records of a stream-stream join may be. Not a window
 * type of aggregations (it implements no `Windows`): it only bounds the pairs a join makes.
 */
import { TopologyError } from "../../errors";
import { checkDuration } from "./windows";

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
