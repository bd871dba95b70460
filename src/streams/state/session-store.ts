/**
 * Session stores: the aggregate of each (key, session), laid out as a `TimeKeyedStore` with the
 * session end as time and its start as seq. Sessions that may merge with a new record end at or
 * after `record - gap`, so finding them is one short range over ends; expiry goes by end too.
 * Session windows are inclusive at both ends.
 */
import type { RawKeyValueStore } from "./key-value-store";
import type { Serde } from "../serdes";
import type { Window, WindowedValue } from "../windowed";
import { MAX_TIME } from "./key-codec";
import { TimeKeyedStore, type TimedEntry } from "./time-keyed-store";
import { decodeStored } from "./typed-store";

export interface SessionStore<K, V> {
  readonly name: string;
  /** The key's sessions with `end >= earliestEnd` and `start <= latestStart`, by end (Kafka's `findSessions`). */
  findSessions(key: K, earliestEnd: number, latestStart: number): WindowedValue<V>[];
  /** All sessions of the key, by end. */
  fetch(key: K): WindowedValue<V>[];
  put(key: K, session: Window, value: V): void;
  remove(key: K, session: Window): void;
}

/** Raw session reads for interactive queries: the key's sessions overlapping `[from, to]`, values serialized. */
export function fetchSessions(raw: RawKeyValueStore, serializedKey: string, from = 0, to = MAX_TIME): WindowedValue<string>[] {
  return new TimeKeyedStore(raw)
    .fetch(serializedKey, from, MAX_TIME)
    .filter((e) => e.seq <= to)
    .map((e) => ({ window: { start: e.seq, end: e.time }, value: e.value }));
}

export class SessionStoreView<K, V> implements SessionStore<K, V> {
  readonly entries: TimeKeyedStore;

  constructor(
    readonly name: string,
    private readonly raw: RawKeyValueStore,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {
    this.entries = new TimeKeyedStore(raw);
  }

  findSessions(key: K, earliestEnd: number, latestStart: number): WindowedValue<V>[] {
    return fetchSessions(this.raw, this.keySerde.serialize(key), earliestEnd, latestStart).map(({ window, value }) => ({
      window,
      value: decodeStored(this.name, this.valueSerde, value, "value"),
    }));
  }

  fetch(key: K): WindowedValue<V>[] {
    return this.findSessions(key, 0, MAX_TIME);
  }

  /** The value of exactly that session. */
  fetchSession(key: K, session: Window): V | undefined {
    const text = this.entries.get(this.keySerde.serialize(key), session.end, session.start);
    return text === undefined ? undefined : decodeStored(this.name, this.valueSerde, text, "value");
  }

  /** A session's value is stamped with the session's end, what its results carry (as in Kafka). */
  put(key: K, session: Window, value: V): void {
    this.entries.put(this.keySerde.serialize(key), session.end, session.start, this.valueSerde.serialize(value), session.end);
  }

  remove(key: K, session: Window): void {
    this.entries.delete(this.keySerde.serialize(key), session.end, session.start);
  }

  /** An entry read from `entries` (time: session end, seq: session start), typed. */
  decode(entry: TimedEntry): { readonly key: K; readonly window: Window; readonly value: V } {
    return {
      key: decodeStored(this.name, this.keySerde, entry.key, "key"),
      window: { start: entry.seq, end: entry.time },
      value: decodeStored(this.name, this.valueSerde, entry.value, "value"),
    };
  }

  /** Deletes every session (of any key) that ended before `end`: retention. */
  expireEndingBefore(end: number): void {
    this.entries.takeBefore(end);
  }
}
