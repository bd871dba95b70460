/**
 * `Materialized`: the name and serdes of the store an aggregation or table keeps its state in.
 * The store name is also the name queries use and the middle of its changelog topic's name.
 */
import type { Serde } from "../serdes";

export interface Materialized<K, V> {
  /** Without a name, the store gets a generated one (and so does its changelog topic). */
  readonly storeName?: string;
  readonly keySerde?: Serde<K>;
  readonly valueSerde?: Serde<V>;
}

export const Materialized = {
  /** A store of that name; its name must be unique in the topology. */
  as<K, V>(storeName: string, serdes: { key?: Serde<K>; value?: Serde<V> } = {}): Materialized<K, V> {
    return { storeName, keySerde: serdes.key, valueSerde: serdes.value };
  },
  /** A store with a generated name and these serdes. */
  with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return { keySerde, valueSerde };
  },
};
