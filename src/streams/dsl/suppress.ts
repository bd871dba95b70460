/**
 * `suppress(Suppressed.untilWindowCloses())`: final results of a windowed table. Updates wait in a
 * change-logged buffer store (a `TimeKeyedStore` ordered by close time, then window start, then
 * key), one entry per window holding its latest value; once the operator's stream time reaches a
 * window's close time (end + grace) the entry is emitted and deleted, in close-time order. The
 * stream time is kept in the buffer too, so a restored buffer emits exactly when the old one would
 * have. The buffer is unbounded (Kafka's `BufferConfig.unbounded()`): it holds the open windows.
 */
import type { Header } from "../record";
import { internal } from "../processor";
import type { Serde } from "../serdes";
import { TimeKeyedStore } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import type { AnySupplier } from "../topology/graph";
import type { Window, Windowed } from "../windowed";
import { change, type Change, type OldValues } from "./change";
import { erase, processorOf } from "./processors";

export interface Suppressed {
  /** Name of the buffer store (and middle of its changelog topic); default generated. */
  readonly name?: string;
}

export const Suppressed = {
  /** Emit each window once, with its final value, when it closes; nothing before. */
  untilWindowCloses(options: { readonly name?: string } = {}): Suppressed {
    return options.name === undefined ? {} : { name: options.name };
  },
};

/**
 * A buffered update: window end, timestamp, headers and serialized value, and the window's value
 * before the first update buffered (what downstream last saw: the emitted change's old value).
 */
interface Buffered {
  readonly end: number;
  readonly timestamp: number;
  readonly headers: readonly Header[];
  readonly value: string;
  readonly prior?: string;
}

export function suppressProcessor(storeName: string, closeTime: (window: Window) => number, oldValues: OldValues): AnySupplier {
  return erase(
    processorOf<Windowed<unknown>, Change<unknown>, Windowed<unknown>, Change<unknown>>((record, context) => {
      const handle = internal(context).storeHandle(storeName);
      const keySerde: Serde<unknown> = handle.keySerde;
      const valueSerde: Serde<unknown> = handle.valueSerde;
      const buffer = new TimeKeyedStore(handle.raw);
      const { streamTime } = buffer.advance(record.timestamp);
      const { key, window } = record.key;
      const serializedKey = keySerde.serialize(key);
      const { newValue, oldValue } = record.value;
      if (newValue === null) {
        // A tombstone for a window not yet emitted (a merged-away session, a filtered row): it is simply never final.
        buffer.delete(serializedKey, closeTime(window), window.start);
      } else {
        const held = buffer.get(serializedKey, closeTime(window), window.start);
        const prior = held === undefined ? (oldValue === null ? undefined : valueSerde.serialize(oldValue)) : (JSON.parse(held) as Buffered).prior;
        const entry: Buffered = { end: window.end, timestamp: record.timestamp, headers: record.headers, value: valueSerde.serialize(newValue), ...(prior === undefined ? {} : { prior }) };
        buffer.put(serializedKey, closeTime(window), window.start, JSON.stringify(entry));
      }
      for (const due of buffer.takeBefore(streamTime + 1)) {
        const entry = JSON.parse(due.value) as Buffered;
        const prior = oldValues.sending && entry.prior !== undefined ? decodeStored(storeName, valueSerde, entry.prior, "value") : null;
        context.forward({
          key: { key: decodeStored(storeName, keySerde, due.key, "key"), window: { start: due.seq, end: entry.end } },
          value: change(decodeStored(storeName, valueSerde, entry.value, "value"), prior),
          timestamp: entry.timestamp,
          headers: entry.headers,
        });
      }
    }),
  );
}
