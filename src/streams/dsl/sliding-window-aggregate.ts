/**
 * The processor of sliding-window aggregations. The windows of a key are those that end at one of
 * its records (`[t - difference, t]`, from 0 for early records) and those that start just after
 * one (`[t + 1, t + 1 + difference]`) when they hold records; so each distinct set of records
 * close enough together is one window.
 *
 * Aggregators have no inverse, so a window's aggregate cannot be derived from a neighbour's when
 * a record enters between them. This processor keeps the key's records while they can still be
 * part of an open window (in the same store, under namespace `r`) and recomputes each window the
 * new record touches, folding its records in time order. The cost per record grows with the
 * number of records of the key within the time difference: for dense keys, hopping windows are
 * cheaper.
 */
import { internal } from "../processor";
import type { Serde } from "../serdes";
import { TimeKeyedStore } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import type { AnySupplier } from "../topology/graph";
import type { Window, Windowed } from "../windowed";
import { erase, processorOf, windowStoreOf, type Aggregation } from "./processors";
import type { SlidingWindows } from "./windows";

/** Where the records are kept, next to the window results (namespace ""). */
const RECORDS = "r";

export function slidingWindowAggregate<K, V, VA>(
  storeName: string,
  windows: SlidingWindows,
  retentionMs: number,
  valueSerde: Serde<V>,
  step: Aggregation<K, V, VA>,
): AnySupplier {
  const difference = windows.timeDifferenceMs;
  return erase(
    processorOf<K, V, Windowed<K>, VA>((record, context) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in an aggregation`);
      const { key, timestamp: t } = record;
      const results = windowStoreOf<K, VA>(context, storeName);
      const handle = internal(context).storeHandle(storeName);
      const records = new TimeKeyedStore(handle.raw, RECORDS);
      const serializedKey = handle.keySerde.serialize(key);
      // One meta write per record: the stream time and the record's sequence number.
      const { streamTime, seq } = results.entries.advance(t, true);
      const expire = () => {
        results.expireStartingBefore(streamTime - retentionMs + 1);
        records.takeBefore(streamTime - difference - windows.graceMs);
      };
      // The latest-closing window holding the record is the one starting at it.
      if (windows.closeTime({ start: t, end: t + difference }) <= streamTime) {
        internal(context).dropLateRecord();
        return expire();
      }
      records.put(serializedKey, t, seq, valueSerde.serialize(record.value));

      const starts = new Set<number>();
      for (const { time } of records.fetch(serializedKey, t - difference - 1, t + difference)) {
        // Windows ending at a record at or after t hold t; so do those starting after a record before t.
        starts.add(time >= t ? Math.max(0, time - difference) : time + 1);
      }
      if (records.fetch(serializedKey, t + 1, t + 1 + difference).length > 0) starts.add(t + 1);

      for (const start of [...starts].sort((a, b) => a - b)) {
        const window: Window = { start, end: start + difference };
        if (windows.closeTime(window) <= streamTime) continue;
        const members = records.fetch(serializedKey, window.start, window.end);
        if (members.length === 0) continue;
        let aggregate: VA | undefined;
        for (const member of members) aggregate = step(key, decodeStored(storeName, valueSerde, member.value, "record"), aggregate);
        results.put(key, window, aggregate!);
        context.forward({ ...record, key: { key, window }, value: aggregate! });
      }
      expire();
    }),
  );
}
