/**
 * `KTable`: a changelog stream read as a table, the latest value per key. Its records are updates;
 * a null value is a tombstone (the key was deleted). Tables from aggregations and topics hold no
 * tombstones; `filter` makes them (a row that no longer passes is deleted downstream), which the
 * `Tombstone` type parameter records so that `toStream()` is typed `V | null` only then.
 */
import { serdeOrDefault, type Serde } from "../serdes";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import { KStream, type Predicate } from "./kstream";
import { erase, passThrough, processorOf, type RecordHandler } from "./processors";

export class KTable<K, V, Tombstone extends null = never> {
  /** Made by `StreamsBuilder.table` and aggregations; not meant to be called directly. */
  constructor(
    readonly graph: TopologyGraph,
    readonly node: GraphNode,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** The store holding this table, when it is materialized (aggregations always are). */
    readonly queryableStoreName: string | undefined,
  ) {}

  /** A new value for every row; tombstones stay tombstones. */
  mapValues<VOut>(mapper: (value: V, key: K) => VOut): KTable<K, VOut, Tombstone> {
    return this.derive<VOut, Tombstone>("KTABLE-MAPVALUES", undefined, (r, c) =>
      c.forward(r.value === null ? { ...r, value: null as Tombstone } : { ...r, value: mapper(r.value as V, r.key) }),
    );
  }

  /** Keeps the rows that satisfy the predicate; a row that does not is forwarded as a tombstone. */
  filter(predicate: Predicate<K, V>): KTable<K, V, null> {
    return this.derive<V, null>("KTABLE-FILTER", this.valueSerde, (r, c) =>
      c.forward(r.value !== null && predicate(r.key, r.value as V) ? r : { ...r, value: null }),
    );
  }

  /** Keeps the rows that do not satisfy the predicate; the others become tombstones. */
  filterNot(predicate: Predicate<K, V>): KTable<K, V, null> {
    return this.filter((key, value) => !predicate(key, value));
  }

  /** The table's updates as a stream: one record per update, tombstones as null values. */
  toStream(): KStream<K, V | Tombstone> {
    const node = this.graph.addProcessor("KTABLE-TOSTREAM", { parents: [this.node], supplier: passThrough, stores: [] });
    return new KStream<K, V | Tombstone>(this.graph, node, this.keySerde, serdeOrDefault(this.valueSerde) as Serde<V | Tombstone>, false);
  }

  private derive<VOut, TOut extends null>(
    prefix: string,
    valueSerde: Serde<VOut> | undefined,
    body: RecordHandler<K, V | Tombstone, K, VOut | TOut>,
  ): KTable<K, VOut, TOut> {
    const node = this.graph.addProcessor(prefix, { parents: [this.node], supplier: erase(processorOf(body)), stores: [] });
    return new KTable<K, VOut, TOut>(this.graph, node, this.keySerde, valueSerde, undefined);
  }
}
