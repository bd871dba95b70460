/**
 * The typed view of a raw store: keys and values pass through the store's serdes. A stored value
 * that no longer deserializes is corrupt state, reported as a `DeserializationError` naming the store.
 * DSL operators also read and write values with their timestamps (Kafka's timestamped stores).
 */
import { DeserializationError, messageOf } from "../errors";
import type { KeyValue } from "../record";
import type { Serde } from "../serdes";
import type { KeyValueStore, RawKeyValueStore, ValueAndTimestamp } from "./key-value-store";

export class TypedKeyValueStore<K, V> implements KeyValueStore<K, V> {
  constructor(
    readonly name: string,
    private readonly raw: RawKeyValueStore,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  get(key: K): V | undefined {
    const text = this.raw.get(this.keySerde.serialize(key));
    return text === undefined ? undefined : this.decode(this.valueSerde, text, "value");
  }

  /** The value with its timestamp. */
  getWithTimestamp(key: K): ValueAndTimestamp<V> | undefined {
    const entry = this.raw.getWithTimestamp(this.keySerde.serialize(key));
    return entry === undefined ? undefined : { value: this.decode(this.valueSerde, entry.value, "value"), timestamp: entry.timestamp };
  }

  /** Without a timestamp, the value takes the current record's. */
  put(key: K, value: V, timestamp?: number): void {
    this.raw.put(this.keySerde.serialize(key), this.valueSerde.serialize(value), timestamp);
  }

  delete(key: K): void {
    this.raw.delete(this.keySerde.serialize(key));
  }

  putIfAbsent(key: K, value: V): V | undefined {
    const current = this.get(key);
    if (current === undefined) this.put(key, value);
    return current;
  }

  range(from?: K, to?: K, limit?: number): KeyValue<K, V>[] {
    const bound = (key: K | undefined) => (key === undefined ? undefined : this.keySerde.serialize(key));
    return this.raw.range(bound(from), bound(to), limit).map((entry) => this.decodeEntry(entry));
  }

  prefix(serializedPrefix: string, limit?: number): KeyValue<K, V>[] {
    return this.raw.prefix(serializedPrefix, limit).map((entry) => this.decodeEntry(entry));
  }

  all(limit?: number): KeyValue<K, V>[] {
    return this.raw.range(undefined, undefined, limit).map((entry) => this.decodeEntry(entry));
  }

  private decodeEntry(entry: KeyValue<string, string>): KeyValue<K, V> {
    return { key: this.decode(this.keySerde, entry.key, "key"), value: this.decode(this.valueSerde, entry.value, "value") };
  }

  private decode<T>(serde: Serde<T>, text: string, what: string): T {
    return decodeStored(this.name, serde, text, what);
  }
}

/** Deserializes text read from a store; failure is corrupt state, a `DeserializationError` naming the store. */
export function decodeStored<T>(storeName: string, serde: Serde<T>, text: string, what: string): T {
  try {
    return serde.deserialize(text);
  } catch (error) {
    throw new DeserializationError(`store ${storeName}: cannot deserialize a stored ${what}: ${messageOf(error)}`, undefined, { cause: error });
  }
}
