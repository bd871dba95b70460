/**
 * The processors of windowed aggregations over time windows (tumbling, hopping) and sessions.
 * Each keeps its results in its window or session store, and the stream time it goes by in the
 * same store (so a recreated or restored task closes windows exactly where the old one did).
 * A record whose windows have all closed is late: dropped and counted. Windows past retention
 * are deleted through the change-logged store, so the changelog carries their tombstones.
 */
import { internal } from "../processor";
import type { AnySupplier } from "../topology/graph";
import type { Windowed } from "../windowed";
import { erase, processorOf, sessionStoreOf, windowStoreOf, type Aggregation } from "./processors";
import type { SessionWindows, TimeWindows } from "./windows";

/** Folds each record into every open window it falls in and forwards each window's new aggregate. */
export function timeWindowAggregate<K, V, VA>(storeName: string, windows: TimeWindows, retentionMs: number, step: Aggregation<K, V, VA>): AnySupplier {
  return erase(
    processorOf<K, V, Windowed<K>, VA>((record, context) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in an aggregation`);
      const store = windowStoreOf<K, VA>(context, storeName);
      const { streamTime } = store.entries.advance(record.timestamp);
      let late = false;
      for (const window of windows.windowsFor(record.timestamp)) {
        if (windows.closeTime(window) <= streamTime) {
          late = true;
          continue;
        }
        const next = step(record.key, record.value, store.get(record.key, window.start));
        store.put(record.key, window, next);
        context.forward({ ...record, key: { key: record.key, window }, value: next });
      }
      if (late) internal(context).dropLateRecord();
      store.expireStartingBefore(streamTime - retentionMs + 1);
    }),
  );
}

/**
 * Adds each record to the key's session: a new one, or the merge of every open session within
 * the gap of it. Merged-away sessions are deleted and forwarded as tombstones, then the merged
 * session with its aggregate. Final sessions (see `SessionWindows.closeTime`) are not merged any
 * more: what suppression emitted as final stays final.
 */
export function sessionAggregate<K, V, VA>(
  storeName: string,
  windows: SessionWindows,
  retentionMs: number,
  step: Aggregation<K, V, VA>,
  merger: (key: K, left: VA, right: VA) => VA,
): AnySupplier {
  return erase(
    processorOf<K, V, Windowed<K>, VA | null>((record, context) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in an aggregation`);
      const { key, timestamp } = record;
      const store = sessionStoreOf<K, VA>(context, storeName);
      const { streamTime } = store.entries.advance(timestamp);
      const gap = windows.inactivityGapMs;
      const open = store.findSessions(key, timestamp - gap, timestamp + gap).filter((s) => windows.closeTime(s.window) > streamTime);
      const merged = { start: Math.min(timestamp, ...open.map((s) => s.window.start)), end: Math.max(timestamp, ...open.map((s) => s.window.end)) };
      if (windows.isLate(merged, streamTime)) {
        internal(context).dropLateRecord();
      } else {
        let current: VA | undefined;
        for (const session of open) current = current === undefined ? session.value : merger(key, current, session.value);
        const next = step(key, record.value, current);
        for (const { window } of open) {
          if (window.start === merged.start && window.end === merged.end) continue;
          store.remove(key, window);
          context.forward({ ...record, key: { key, window }, value: null });
        }
        store.put(key, merged, next);
        context.forward({ ...record, key: { key, window: merged }, value: next });
      }
      store.expireEndingBefore(streamTime - retentionMs);
    }),
  );
}
