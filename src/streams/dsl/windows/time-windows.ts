/**
 * `TimeWindows`: fixed-size windows `[start, start + size)` starting every `advance` ms from the
 * epoch — tumbling when advance = size, hopping (overlapping) when smaller — and their
 * aggregation (Kafka's `KStreamWindowAggregate`). Results live in a window store, with the stream
 * time they go by (so a recreated or restored task closes windows exactly where the old one did);
 * windows past retention are deleted through the change-logged store, so the changelog carries
 * their tombstones. Bounds, lateness and the default retention are Kafka Streams'.
 */
import { TopologyError } from "../../errors";
import { internal } from "../../processor";
import type { AnySupplier } from "../../topology/graph";
import type { Window, Windowed } from "../../windowed";
import { change, type Change } from "../change";
import { emitClosed, EmitStrategy, type EmitRange } from "../emit-strategy";
import { erase, processorOf, windowStoreOf } from "../processors";
import { checkDuration, type WindowAggregation, type Windows } from "./windows";

export class TimeWindows implements Windows {
  readonly storeKind = "window";

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

  aggregateProcessor<K, V, VA>(aggregation: WindowAggregation<K, V, VA>): AnySupplier {
    return timeWindowAggregate(this, aggregation);
  }
}

/**
 * Folds each record into every open window it falls in and forwards each window's new aggregate,
 * stamped with the largest timestamp of the window's records (Kafka's timestamped window store).
 * Each window the record is too late for counts as a dropped record, as Kafka counts them.
 */
function timeWindowAggregate<K, V, VA>(windows: TimeWindows, aggregation: WindowAggregation<K, V, VA>): AnySupplier {
  const { storeName, retentionMs, step, oldValues, emit = EmitStrategy.onWindowUpdate() } = aggregation;
  // Kafka's bounds: windows starting after the last emission's and ending by the close time.
  const range: EmitRange = (closeTime, emitted) => {
    const to = closeTime - windows.sizeMs;
    if (to < 0) return undefined;
    const from = emitted === undefined ? 0 : Math.max(0, emitted - windows.sizeMs) + 1;
    // No window starts between the two bounds: nothing closed since.
    if (emitted !== undefined && sameStarts(windows.windowsFor(to), windows.windowsFor(from - 1))) return undefined;
    return { from, to };
  };
  return erase(
    processorOf<K, V, Windowed<K>, Change<VA>>((record, context) => {
      // As Kafka's, a windowed aggregation drops only records without a key: a null value is aggregated.
      if (record.key === null) return context.dropRecord("null key in an aggregation");
      const store = windowStoreOf<K, VA>(context, storeName);
      const { streamTime } = store.entries.advance(record.timestamp);
      for (const window of windows.windowsFor(record.timestamp)) {
        if (windows.closeTime(window) <= streamTime) {
          internal(context).dropLateRecord();
          continue;
        }
        const current = store.getWithTimestamp(record.key, window);
        const next = step(record.key, record.value, current?.value);
        const timestamp = current === undefined ? record.timestamp : Math.max(record.timestamp, current.timestamp);
        store.put(record.key, window, next, timestamp);
        if (!emit.onClose)
          context.forward({ ...record, key: { key: record.key, window }, value: change(next, oldValues.sending ? (current?.value ?? null) : null), timestamp });
      }
      if (emit.onClose) {
        emitClosed(store.entries, streamTime - windows.graceMs, range, record.headers, (entry, headers) => {
          const { key, window, value, timestamp } = store.decode(entry);
          context.forward({ key: { key, window }, value: change(value), timestamp, headers });
        });
      }
      // Retention counts from the latest window kept (Kafka's window stores count from their own time).
      store.expireStartingBefore(windows.latestStart(streamTime) - retentionMs + 1);
    }),
  );
}

/** Whether two lists of windows start at the same times. */
function sameStarts(a: readonly { start: number }[], b: readonly { start: number }[]): boolean {
  return a.length === b.length && a.every((w, i) => w.start === b[i]!.start);
}
