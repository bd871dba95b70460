/**
 * Punctuation schedules of one task (Kafka Streams' `PunctuationQueue`s): callbacks that run
 * every `interval` of stream time (driven by the records processed) or of wall-clock time
 * (driven by `TaskProcessor.punctuate(now)`, which the task's Durable Object calls from its one
 * alarm, armed for `next("wall-clock")`). Schedules live in memory: processors make them again in
 * `init()` whenever a task processor is created, as Kafka's do.
 *
 * Each due schedule runs once per call, however many intervals passed (a gap in the input or a
 * late alarm does not replay missed punctuations), and its next time stays on its grid:
 * - stream time: the multiples of `interval` (so the first runs with the first record);
 * - wall-clock: the schedule's creation time plus multiples of `interval`.
 */

export type PunctuationType = "stream-time" | "wall-clock";

/** Called with the stream time or the wall-clock time of the punctuation. */
export type Punctuator = (timestampMs: number) => void;

export interface Cancellable {
  cancel(): void;
}

interface Schedule {
  readonly intervalMs: number;
  readonly run: Punctuator;
  next: number;
  cancelled: boolean;
}

export class PunctuationSchedules {
  private readonly schedules: Record<PunctuationType, Schedule[]> = { "stream-time": [], "wall-clock": [] };

  /** Adds a schedule at `now` (the current stream time, -1 before any record, or wall-clock time). */
  add(type: PunctuationType, intervalMs: number, now: number, run: Punctuator): Cancellable {
    if (!Number.isSafeInteger(intervalMs) || intervalMs < 1)
      throw new RangeError(`a punctuation interval is a positive integer of milliseconds, got ${intervalMs}`);
    const next = type === "stream-time" ? nextMultiple(now, intervalMs) : now + intervalMs;
    const schedule: Schedule = { intervalMs, run, next, cancelled: false };
    this.schedules[type].push(schedule);
    return {
      cancel: () => {
        schedule.cancelled = true;
        const list = this.schedules[type];
        const index = list.indexOf(schedule);
        if (index >= 0) list.splice(index, 1);
      },
    };
  }

  /** Runs every schedule of that type due at `time`, earliest first; returns how many ran. */
  fire(type: PunctuationType, time: number): number {
    // Called after every record: most tasks have no schedule of this type, so nothing to sort out.
    const schedules = this.schedules[type];
    if (schedules.length === 0) return 0;
    const due = schedules.filter((s) => s.next <= time).sort((a, b) => a.next - b.next);
    let ran = 0;
    for (const schedule of due) {
      // An earlier punctuator of this round may have cancelled it.
      if (schedule.cancelled) continue;
      schedule.next =
        type === "stream-time"
          ? nextMultiple(time, schedule.intervalMs)
          : schedule.next + schedule.intervalMs * (Math.floor((time - schedule.next) / schedule.intervalMs) + 1);
      schedule.run(time);
      ran++;
    }
    return ran;
  }

  /** When the earliest schedule of that type is due; undefined without schedules. */
  next(type: PunctuationType): number | undefined {
    const times = this.schedules[type].map((s) => s.next);
    return times.length === 0 ? undefined : Math.min(...times);
  }
}

/** The first multiple of `interval` after `time`. */
function nextMultiple(time: number, interval: number): number {
  return (Math.floor(time / interval) + 1) * interval;
}
