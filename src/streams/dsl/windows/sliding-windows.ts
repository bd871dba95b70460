/**
 * `SlidingWindows`: windows of `timeDifference` ms that slide with the records, and their
 * aggregation with Kafka's incremental algorithm (`KStreamSlidingWindowAggregate`). A key's
 * windows are those that end at one of its records (`[t - difference, t]`) and those that start
 * just after one (`[t + 1, t + 1 + difference]`) while they hold records; records before
 * `difference` share the window `[0, difference]`. Both ends are inclusive.
 *
 * A new record is folded, in arrival order, into every existing window that contains it; the
 * windows it creates are seeded from the aggregate of a neighbouring window that holds exactly
 * the right records (its own left window from the window ending before it, its right window from
 * the latest window holding records after it). Only windows whose contents change are written
 * and forwarded. Each window keeps the largest timestamp of its records, which its results
 * carry. The windows needed to seed new ones start up to two differences before a record, which
 * is why the store keeps windows that long (Kafka's default retention: 2 × difference + grace).
 */
import { internal } from "../../processor";
import type { AnySupplier } from "../../topology/graph";
import type { Window, Windowed } from "../../windowed";
import { change, type Change } from "../change";
import { emitClosed, EmitStrategy, type EmitRange } from "../emit-strategy";
import { erase, processorOf, windowStoreOf } from "../processors";
import { checkDuration, type WindowAggregation, type Windows } from "./windows";

export class SlidingWindows implements Windows {
  readonly storeKind = "window";

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

  aggregateProcessor<K, V, VA>(aggregation: WindowAggregation<K, V, VA>): AnySupplier {
    return slidingWindowAggregate(this, aggregation);
  }
}

/** A window's aggregate and timestamp; `value` undefined stands for the initializer's value. */
interface Seed<VA> {
  readonly value: VA | undefined;
  readonly timestamp: number;
}

function slidingWindowAggregate<K, V, VA>(windows: SlidingWindows, aggregation: WindowAggregation<K, V, VA>): AnySupplier {
  const { storeName, retentionMs, step, oldValues, emit = EmitStrategy.onWindowUpdate() } = aggregation;
  const difference = windows.timeDifferenceMs;
  // Kafka's bounds: windows starting after the last emission's and ending (inclusive) before the close time.
  const range: EmitRange = (closeTime, emitted) => {
    const to = closeTime - difference - 1;
    return to < 0 ? undefined : { from: emitted === undefined ? 0 : Math.max(0, emitted - difference), to };
  };
  return erase(
    processorOf<K, V, Windowed<K>, Change<VA>>((record, context) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in an aggregation`);
      const store = windowStoreOf<K, VA>(context, storeName);
      const t = record.timestamp;
      const streamTime = Math.max(store.entries.streamTime(), t);
      // Kafka's window close time: windows ending before it are final.
      const closeTime = streamTime - windows.graceMs;
      // The store's own time: the latest window start it has kept (what its retention counts from).
      let observed = store.entries.observedTime();
      const visibleFrom = () => observed - retentionMs + 1;
      const key = record.key;

      /** Folds the record into the window (seeded by `seed`) and forwards it; a closed window is only counted. */
      const update = (window: Window, seed: Seed<VA>): void => {
        if (window.end < closeTime) {
          internal(context).dropLateRecord();
          return;
        }
        const next = step(key, record.value, seed.value);
        const timestamp = seed.value === undefined ? t : Math.max(t, seed.timestamp);
        // As Kafka's, the old value sent is the aggregate the window was computed from.
        put(window, next, timestamp, seed.value ?? null);
      };
      const put = (window: Window, value: VA, timestamp: number, old: VA | null = null): void => {
        store.put(key, window, value, timestamp);
        observed = Math.max(observed, window.start);
        if (!emit.onClose) context.forward({ ...record, key: { key, window }, value: change(value, oldValues.sending ? old : null), timestamp });
      };
      const windowAt = (start: number): Window => ({ start, end: start + difference });
      const fetch = (from: number, to: number) => store.fetchWithTimestamps(key, Math.max(from, visibleFrom()), to);

      if (t + difference < closeTime) {
        internal(context).dropLateRecord();
      } else if (t < difference) {
        early();
      } else {
        latest();
      }
      store.entries.advance(t, false, observed);
      // As Kafka's, only a record that is neither late nor early looks for closed windows.
      if (emit.onClose && t + difference >= closeTime && t >= difference) {
        emitClosed(store.entries, closeTime, range, record.headers, (entry, headers) => {
          const { key: inner, window, value, timestamp } = store.decode(entry);
          context.forward({ key: { key: inner, window }, value: change(value), timestamp, headers });
        });
      }
      store.expireStartingBefore(observed - retentionMs + 1);

      /** A record at `t >= difference`: its windows, from the latest back (Kafka's reverse iteration). */
      function latest(): void {
        const starts = new Set<number>();
        let leftSeed: Seed<VA> | undefined;
        let rightSeed: Seed<VA> | undefined;
        let leftExists = false;
        let rightExists = false;
        let previous: number | undefined;
        const found = fetch(Math.max(0, t - 2 * difference), t + 1).reverse();
        for (const existing of found) {
          const { window, timestamp } = existing;
          starts.add(window.start);
          const end = window.start + difference;
          if (window.start === t + 1) {
            rightExists = true;
          } else if (end > t) {
            // Its aggregate before t joins it is that of the records after t: t's right window.
            rightSeed ??= existing;
            update(window, existing);
          } else if (end === t) {
            leftExists = true;
            update(window, existing);
            // A record at t was here before: every window it needs exists already.
            if (timestamp >= t) return;
            previous = timestamp;
          } else {
            leftSeed = existing;
            previous = timestamp;
            break;
          }
        }
        create(starts, leftSeed, rightSeed, leftExists, rightExists, previous);
      }

      /** A record before `difference`: it belongs to the window `[0, difference]` that all such records share. */
      function early(): void {
        const starts = new Set<number>();
        let combined: (Seed<VA> & { window: Window }) | undefined;
        let rightSeed: Seed<VA> | undefined;
        let rightExists = false;
        let previous: number | undefined;
        for (const found of fetch(0, t + 1)) {
          const { window, timestamp } = found;
          starts.add(window.start);
          if (window.start === 0) {
            combined = found;
            if (timestamp < t) previous = timestamp;
          } else if (window.start <= t) {
            rightSeed = found;
            update(window, found);
          } else {
            rightExists = true;
          }
        }
        // Only records after t can make the shared window's latest timestamp exceed t: then it holds exactly t's right window.
        if (rightSeed === undefined && combined !== undefined && combined.timestamp > t) rightSeed = combined;
        if (!rightExists && rightSeed !== undefined && rightSeed.timestamp > t) put(windowAt(t + 1), rightSeed.value!, rightSeed.timestamp);
        if (previous !== undefined && !starts.has(previous + 1)) update(windowAt(previous + 1), { value: undefined, timestamp: t });
        update(windowAt(0), combined ?? { value: undefined, timestamp: t });
      }

      /** The windows a record at `t` adds: the previous record's right window, its own left and right windows. */
      function create(
        starts: Set<number>,
        leftSeed: Seed<VA> | undefined,
        rightSeed: Seed<VA> | undefined,
        leftExists: boolean,
        rightExists: boolean,
        previous: number | undefined,
      ): void {
        if (previous !== undefined && !starts.has(previous + 1) && previous + 1 + difference >= t)
          update(windowAt(previous + 1), { value: undefined, timestamp: t });
        if (!leftExists) {
          const seeded = previous !== undefined && t - difference <= previous && leftSeed !== undefined;
          update(windowAt(t - difference), { value: seeded ? leftSeed.value : undefined, timestamp: t });
        }
        // The latest window holding t also holds every record after t within the difference: it seeds t's right window.
        if (!rightExists && rightSeed !== undefined && rightSeed.timestamp > t) put(windowAt(t + 1), rightSeed.value!, rightSeed.timestamp);
      }
    }),
  );
}
