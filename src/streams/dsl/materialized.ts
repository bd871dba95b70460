/**
 * `Materialized`: the name and serdes of the store an aggregation or table keeps its state in,
 * for windowed aggregations how long windows are kept, and for tables whether the store is
 * versioned (`Materialized.as(Stores.persistentVersionedKeyValueStore(name, retention))`). The
 * store name is also the name queries use and the middle of its changelog topic's name.
 *
 * Caching (Kafka's record cache): an aggregation's store is cached unless its `Materialized` says
 * otherwise (`caching: false`, `Materialized.withCachingDisabled`), as in Kafka: consecutive
 * updates of a key between two commits reach the changelog and downstream once, at the commit (or
 * when the cache, `statestore.cache.max.bytes`, evicts the key). Versioned stores are never cached.
 * ./materialize.ts turns a `Materialized` into the store an operator declares.
 */
import type { Serde } from "../serdes";
import type { VersionedStoreSupplier } from "./stores";

export interface Materialized<K, V> {
  /** Without a name, the store gets a generated one (and so does its changelog topic). */
  readonly storeName?: string;
  readonly keySerde?: Serde<K>;
  readonly valueSerde?: Serde<V>;
  /**
   * Windowed stores only: how long, in stream time, a window is kept after its start (a session
   * after its end) for queries. Default and minimum: as long as it can still change (size + grace,
   * sliding: 2 × difference + grace, sessions: gap + grace); key-value stores ignore it.
   */
  readonly retentionMs?: number;
  /** A versioned table store: how long, in stream time, older versions are kept for joins by time. */
  readonly historyRetentionMs?: number;
  /** Whether the store is behind the record cache; default true (Kafka's default), where the operator supports caching. */
  readonly caching?: boolean;
}

export interface MaterializedOptions<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  readonly retentionMs?: number;
  readonly caching?: boolean;
}

export const Materialized = {
  /** A store of that name (its name must be unique in the topology), or the versioned store a supplier describes. */
  as<K, V>(store: string | VersionedStoreSupplier, options: MaterializedOptions<K, V> = {}): Materialized<K, V> {
    const base = {
      keySerde: options.key,
      valueSerde: options.value,
      retentionMs: options.retentionMs,
      ...(options.caching === undefined ? {} : { caching: options.caching }),
    };
    return typeof store === "string" ? { storeName: store, ...base } : { storeName: store.name, historyRetentionMs: store.historyRetentionMs, ...base };
  },
  /** A store with a generated name and these serdes. */
  with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return { keySerde, valueSerde };
  },
  /** The same store, behind the record cache (Kafka's `withCachingEnabled`). */
  withCachingEnabled<K, V>(materialized: Materialized<K, V> = {}): Materialized<K, V> {
    return { ...materialized, caching: true };
  },
  /** The same store without the record cache: every update reaches the changelog and downstream (Kafka's `withCachingDisabled`). */
  withCachingDisabled<K, V>(materialized: Materialized<K, V> = {}): Materialized<K, V> {
    return { ...materialized, caching: false };
  },
};
