/**
 * `Materialized`: the name and serdes of the store an aggregation or table keeps its state in,
 * and for windowed aggregations how long windows are kept. The store name is also the name
 * queries use and the middle of its changelog topic's name.
 */
import type { Serde } from "../serdes";

export interface Materialized<K, V> {
  /** Without a name, the store gets a generated one (and so does its changelog topic). */
  readonly storeName?: string;
  readonly keySerde?: Serde<K>;
  readonly valueSerde?: Serde<V>;
  /**
   * Windowed stores only: how long, in stream time, a window is kept after its start (a session
   * after its end) for queries. Default and minimum: as long as it can still change (size + grace,
   * sliding: difference + 1 + grace, sessions: gap + grace).
   */
  readonly retentionMs?: number;
}

export interface MaterializedOptions<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  readonly retentionMs?: number;
}

export const Materialized = {
  /** A store of that name; its name must be unique in the topology. */
  as<K, V>(storeName: string, options: MaterializedOptions<K, V> = {}): Materialized<K, V> {
    return { storeName, keySerde: options.key, valueSerde: options.value, retentionMs: options.retentionMs };
  },
  /** A store with a generated name and these serdes. */
  with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return { keySerde, valueSerde };
  },
};
