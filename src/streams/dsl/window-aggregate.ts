/**
 * The processors of windowed aggregations over time windows (tumbling, hopping) and sessions.
 * Each keeps its results in its window or session store, and the stream time it goes by in the
 * same store (so a recreated or restored task closes windows exactly where the old one did).
 * A record is late for a window once stream time has passed the window's close time: dropped
 * from it and counted. Windows past retention are deleted through the change-logged store, so
 * the changelog carries their tombstones.
 */
import { internal } from "../processor";
import type { AnySupplier } from "../topology/graph";
import type { Windowed } from "../windowed";
import { change, type Change, type OldValues } from "./change";
import { emitClosed, EmitStrategy, type EmitRange } from "./emit-strategy";
import { erase, processorOf, sessionStoreOf, windowStoreOf, type Aggregation } from "./processors";
import type { SessionWindows, TimeWindows } from "./windows";

/**
 * Folds each record into every open window it falls in and forwards each window's new aggregate,
 * stamped with the largest timestamp of the window's records (Kafka's timestamped window store).
 * Each window the record is too late for counts as a dropped record, as Kafka counts them.
 */
export function timeWindowAggregate<K, V, VA>(
  storeName: string,
  windows: TimeWindows,
  retentionMs: number,
  step: Aggregation<K, V, VA>,
  oldValues: OldValues,
  emit: EmitStrategy = EmitStrategy.onWindowUpdate(),
): AnySupplier {
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

/**
 * Adds each record to its key's session, as Kafka's `KStreamSessionWindowAggregate`: the record
 * merges with every session of the key the store still holds within the gap of it (Kafka's
 * `findSessions`), starting from the initializer's value and applying the merger to each, unless
 * the merged session would be late (stream time past its end + gap + grace: dropped, counted).
 * When the merged session differs from the record's own `[t, t]`, each session merged (even one
 * equal to the result) is deleted and forwarded as a tombstone first; then the merged session.
 * Results and tombstones are stamped with their session's end.
 */
export function sessionAggregate<K, V, VA>(
  storeName: string,
  windows: SessionWindows,
  retentionMs: number,
  initializer: () => VA,
  step: (key: K, value: V, aggregate: VA) => VA,
  merger: (key: K, left: VA, right: VA) => VA,
  oldValues: OldValues,
  emit: EmitStrategy = EmitStrategy.onWindowUpdate(),
): AnySupplier {
  // Kafka's bounds: sessions ending from the last close time emitted to before the new one.
  const range: EmitRange = (closeTime, emitted) => {
    const to = closeTime - 1;
    const from = Math.max(0, emitted ?? 0);
    return to >= 0 && to >= from ? { from, to } : undefined;
  };
  return erase(
    processorOf<K, V, Windowed<K>, Change<VA>>((record, context) => {
      if (record.key === null) return context.dropRecord("null key in an aggregation");
      const { key, timestamp } = record;
      const store = sessionStoreOf<K, VA>(context, storeName);
      const { streamTime } = store.entries.advance(timestamp);
      const gap = windows.inactivityGapMs;
      const found = store.findSessions(key, timestamp - gap, timestamp + gap);
      let aggregate = initializer();
      let merged = { start: timestamp, end: timestamp };
      for (const session of found) {
        aggregate = merger(key, aggregate, session.value);
        merged = { start: Math.min(merged.start, session.window.start), end: Math.max(merged.end, session.window.end) };
      }
      if (windows.isLate(merged, streamTime)) {
        internal(context).dropLateRecord();
      } else {
        if (merged.start !== timestamp || merged.end !== timestamp) {
          for (const { window, value } of found) {
            store.remove(key, window);
            if (!emit.onClose)
              context.forward({ ...record, key: { key, window }, value: change<VA>(null, oldValues.sending ? value : null), timestamp: window.end });
          }
        }
        const next = step(key, record.value, aggregate);
        store.put(key, merged, next);
        if (!emit.onClose) context.forward({ ...record, key: { key, window: merged }, value: change(next), timestamp: merged.end });
      }
      // Sessions close once stream time passes end + gap + grace.
      const closeTime = streamTime - windows.graceMs - gap;
      if (emit.onClose) {
        emitClosed(store.entries, closeTime, range, record.headers, (entry, headers) => {
          const { key: inner, window, value } = store.decode(entry);
          context.forward({ key: { key: inner, window }, value: change(value), timestamp: window.end, headers });
        });
      }
      // The latest session ends at stream time: retention counts from there, as in Kafka's session
      // stores; a session waiting to be emitted is kept until it is.
      const expiry = streamTime - retentionMs + 1;
      store.expireEndingBefore(emit.onClose ? Math.min(expiry, closeTime) : expiry);
    }),
  );
}

/** Whether two lists of windows start at the same times. */
function sameStarts(a: readonly { start: number }[], b: readonly { start: number }[]): boolean {
  return a.length === b.length && a.every((w, i) => w.start === b[i]!.start);
}
