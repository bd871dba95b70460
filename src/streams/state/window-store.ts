/**
 * Window stores: the value of each (key, window), laid out as a `TimeKeyedStore` with the window
 * start as time and the window end as seq, so a key's windows are read by start in one range and
 * expired windows are found by start across all keys. Used by windowed aggregations, and by the
 * Processor API through `ProcessorContext.getWindowStore` (stores declared `addWindowStore`).
 */
import type { RawKeyValueStore, ValueAndTimestamp } from "./key-value-store";
import type { Serde } from "../serdes";
import type { TimestampedWindowedValue, Window, WindowedValue } from "../windowed";
import { TimeKeyedStore, type TimedEntry } from "./time-keyed-store";
import { decodeStored } from "./typed-store";

export interface WindowStore<K, V> {
  readonly name: string;
  /** The value of the key's window that starts at `windowStart`, if any. */
  get(key: K, windowStart: number): V | undefined;
  /** The key's windows whose start lies in `[fromStart, toStart]`, by start (Kafka's `fetch`). */
  fetch(key: K, fromStart: number, toStart: number): WindowedValue<V>[];
  put(key: K, window: Window, value: V): void;
  delete(key: K, window: Window): void;
}

/** Raw window reads for interactive queries: serialized key in, serialized values out. */
export function fetchWindows(raw: RawKeyValueStore, serializedKey: string, fromStart: number, toStart: number): WindowedValue<string>[] {
  return new TimeKeyedStore(raw).fetch(serializedKey, fromStart, toStart).map((e) => ({ window: { start: e.time, end: e.seq }, value: e.value }));
}

export class WindowStoreView<K, V> implements WindowStore<K, V> {
  readonly entries: TimeKeyedStore;

  constructor(
    readonly name: string,
    private readonly raw: RawKeyValueStore,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {
    this.entries = new TimeKeyedStore(raw);
  }

  get(key: K, windowStart: number): V | undefined {
    return this.fetch(key, windowStart, windowStart)[0]?.value;
  }

  fetch(key: K, fromStart: number, toStart: number): WindowedValue<V>[] {
    return fetchWindows(this.raw, this.keySerde.serialize(key), fromStart, toStart).map(({ window, value }) => ({
      window,
      value: decodeStored(this.name, this.valueSerde, value, "value"),
    }));
  }

  /** `fetch`, with each window's timestamp (for an aggregate, the largest of its records'). */
  fetchWithTimestamps(key: K, fromStart: number, toStart: number): TimestampedWindowedValue<V>[] {
    return this.entries.fetch(this.keySerde.serialize(key), fromStart, toStart).map((e) => ({
      window: { start: e.time, end: e.seq },
      value: decodeStored(this.name, this.valueSerde, e.value, "value"),
      timestamp: e.timestamp,
    }));
  }

  /** The value of exactly that window, with its timestamp. */
  getWithTimestamp(key: K, window: Window): ValueAndTimestamp<V> | undefined {
    const entry = this.entries.getWithTimestamp(this.keySerde.serialize(key), window.start, window.end);
    return entry === undefined ? undefined : { value: decodeStored(this.name, this.valueSerde, entry.value, "value"), timestamp: entry.timestamp };
  }

  /** Without a timestamp, the window's value takes the current record's. */
  put(key: K, window: Window, value: V, timestamp?: number): void {
    this.entries.put(this.keySerde.serialize(key), window.start, window.end, this.valueSerde.serialize(value), timestamp);
  }

  delete(key: K, window: Window): void {
    this.entries.delete(this.keySerde.serialize(key), window.start, window.end);
  }

  /** An entry read from `entries` (time: window start, seq: window end), typed. */
  decode(entry: TimedEntry): { readonly key: K; readonly window: Window; readonly value: V; readonly timestamp: number } {
    return {
      key: decodeStored(this.name, this.keySerde, entry.key, "key"),
      window: { start: entry.time, end: entry.seq },
      value: decodeStored(this.name, this.valueSerde, entry.value, "value"),
      timestamp: entry.timestamp,
    };
  }

  /** Deletes every window (of any key) that starts before `start`: retention. */
  expireStartingBefore(start: number): void {
    this.entries.takeBefore(start);
  }
}
