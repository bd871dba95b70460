/**
 * An in-memory `StoreBackend` for tests and for topologies run outside Durable Objects.
 * It keeps the order contract of real backends (UTF-8 byte order of keys) and each value's timestamp.
 */
import type { KeyValue } from "../record";
import { compareKeys, NO_TIMESTAMP, type RawKeyValueStore, type StoreBackend, type TimestampedKeyValue, type ValueAndTimestamp } from "./key-value-store";

export class InMemoryKeyValueStore implements RawKeyValueStore {
  private readonly entries = new Map<string, ValueAndTimestamp<string>>();

  get(key: string): string | undefined {
    return this.entries.get(key)?.value;
  }

  getWithTimestamp(key: string): ValueAndTimestamp<string> | undefined {
    return this.entries.get(key);
  }

  put(key: string, value: string, timestamp = NO_TIMESTAMP): void {
    this.entries.set(key, { value, timestamp });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  range(from?: string, to?: string, limit = Infinity): KeyValue<string, string>[] {
    return this.rangeWithTimestamps(from, to, limit).map(({ key, value }) => ({ key, value }));
  }

  rangeWithTimestamps(from?: string, to?: string, limit = Infinity): TimestampedKeyValue<string, string>[] {
    return this.sorted()
      .filter(({ key }) => (from === undefined || compareKeys(key, from) >= 0) && (to === undefined || compareKeys(key, to) <= 0))
      .slice(0, limit);
  }

  prefix(prefix: string, limit = Infinity): KeyValue<string, string>[] {
    return this.sorted()
      .filter(({ key }) => key.startsWith(prefix))
      .slice(0, limit)
      .map(({ key, value }) => ({ key, value }));
  }

  /** Number of entries. */
  get size(): number {
    return this.entries.size;
  }

  private sorted(): TimestampedKeyValue<string, string>[] {
    return [...this.entries].sort(([a], [b]) => compareKeys(a, b)).map(([key, { value, timestamp }]) => ({ key, value, timestamp }));
  }
}

export class InMemoryStoreBackend implements StoreBackend {
  private readonly stores = new Map<string, InMemoryKeyValueStore>();

  keyValue(storeName: string): InMemoryKeyValueStore {
    let store = this.stores.get(storeName);
    if (!store) this.stores.set(storeName, (store = new InMemoryKeyValueStore()));
    return store;
  }

  /** A store's entries as a plain object of serialized keys and values, for assertions. */
  contents(storeName: string): Record<string, string> {
    return Object.fromEntries(
      this.keyValue(storeName)
        .range()
        .map(({ key, value }) => [key, value]),
    );
  }
}
