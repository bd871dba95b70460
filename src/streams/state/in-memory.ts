/**
 * An in-memory `StoreBackend` for tests and for topologies run outside Durable Objects.
 * It keeps the order contract of real backends (UTF-8 byte order of keys).
 */
import type { KeyValue } from "../record";
import { compareKeys, type RawKeyValueStore, type StoreBackend } from "./key-value-store";

export class InMemoryKeyValueStore implements RawKeyValueStore {
  private readonly entries = new Map<string, string>();

  get(key: string): string | undefined {
    return this.entries.get(key);
  }

  put(key: string, value: string): void {
    this.entries.set(key, value);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  range(from?: string, to?: string, limit = Infinity): KeyValue<string, string>[] {
    return this.sorted()
      .filter(({ key }) => (from === undefined || compareKeys(key, from) >= 0) && (to === undefined || compareKeys(key, to) <= 0))
      .slice(0, limit);
  }

  prefix(prefix: string, limit = Infinity): KeyValue<string, string>[] {
    return this.sorted()
      .filter(({ key }) => key.startsWith(prefix))
      .slice(0, limit);
  }

  /** Number of entries. */
  get size(): number {
    return this.entries.size;
  }

  private sorted(): KeyValue<string, string>[] {
    return [...this.entries]
      .sort(([a], [b]) => compareKeys(a, b))
      .map(([key, value]) => ({ key, value }));
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
    return Object.fromEntries(this.keyValue(storeName).range().map(({ key, value }) => [key, value]));
  }
}
