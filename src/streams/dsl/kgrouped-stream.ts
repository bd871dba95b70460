/**
 * `KGroupedStream`: a stream grouped by key, ready to be aggregated into a table. When the key may
 * have changed since the source, the aggregation reads its records back from a repartition topic
 * `<applicationId>-<name>-repartition` (written with the collector's default partitioner), which
 * makes the aggregation a new subtopology: every key lands on the one task that owns it.
 */
import type { GraphNode } from "../topology/graph";
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { KStream } from "./kstream";
import { KTable } from "./ktable";
import type { Materialized } from "./materialized";
import { aggregateProcessor, erase, processorOf } from "./processors";

export class KGroupedStream<K, V> {
  /** Made by `KStream.groupByKey` and `groupBy`. */
  constructor(
    private readonly stream: KStream<K, V>,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
    /** Base name of the repartition topic, when one is needed. */
    private readonly repartitionName: string | undefined,
  ) {}

  /** The number of records per key. */
  count(materialized: Materialized<K, number> = {}): KTable<K, number> {
    return this.fold<number>("KSTREAM-AGGREGATE", materialized, Serdes.number(), (_key, _value, count) => (count ?? 0) + 1);
  }

  /** Combines the values of each key; the first value of a key is its first aggregate. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<K, V> {
    return this.fold<V>("KSTREAM-REDUCE", materialized, serdeOrDefault(this.valueSerde), (_key, value, current) =>
      current === undefined ? value : reducer(current, value),
    );
  }

  /** Folds the values of each key into an aggregate that starts as `initializer()`. */
  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: Materialized<K, VA> = {}): KTable<K, VA> {
    return this.fold<VA>("KSTREAM-AGGREGATE", materialized, Serdes.json<VA>(), (key, value, current) =>
      aggregator(key, value, current === undefined ? initializer() : current),
    );
  }

  private fold<VA>(prefix: string, materialized: Materialized<K, VA>, defaultValueSerde: Serde<VA>, step: (key: K, value: V, current: VA | undefined) => VA): KTable<K, VA> {
    const { graph } = this.stream;
    const storeName = materialized.storeName ?? graph.newName(`${prefix}-STATE-STORE`);
    const keySerde = materialized.keySerde ?? serdeOrDefault(this.keySerde);
    const valueSerde = materialized.valueSerde ?? defaultValueSerde;
    graph.addStore({ name: storeName, keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown> });
    const parent = this.stream.repartitionRequired ? this.repartition(this.repartitionName ?? storeName, keySerde) : this.stream.node;
    const node = graph.addProcessor(prefix, { parents: [parent], supplier: aggregateProcessor(storeName, step), stores: [storeName] });
    return new KTable<K, VA>(graph, node, keySerde, valueSerde, storeName);
  }

  /** Writes the grouped records to a repartition topic and returns the source reading them back. */
  private repartition(name: string, keySerde: Serde<K>): GraphNode {
    const { graph } = this.stream;
    const serdes = { keySerde: keySerde as Serde<unknown>, valueSerde: serdeOrDefault(this.valueSerde) as Serde<unknown> };
    // A record without a key has no partition to go to; it could never be aggregated anyway.
    const dropNullKeys = processorOf<K, V, K, V>((r, c) => (r.key === null ? c.dropRecord("null key before a repartition") : c.forward(r)));
    const filter = graph.addProcessor("KSTREAM-FILTER", { parents: [this.stream.node], supplier: erase(dropNullKeys), stores: [] });
    graph.addSink("KSTREAM-SINK", { parents: [filter], topic: name, repartition: true, ...serdes });
    return graph.addSource("KSTREAM-SOURCE", { topics: [name], repartition: true, ...serdes });
  }
}
