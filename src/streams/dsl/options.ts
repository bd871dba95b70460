/**
 * Options of DSL operators, named as in Kafka Streams: how a source reads (`Consumed`), how a sink
 * writes (`Produced`) and how a grouping repartitions (`Grouped`). Serdes left out default to the
 * serde the stream already knows for that key or value, else JSON.
 */
import type { Serde } from "../serdes";
import type { StreamPartitioner } from "../topology/graph";

export type { StreamPartitioner };

export interface Consumed<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
}

export interface Produced<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  /** Without one, the record collector applies Kafka's default partitioner to the serialized key. */
  readonly partitioner?: StreamPartitioner<K, V>;
}

export interface Grouped<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  /** Base name of the repartition topic, if one is needed; default the aggregation's store name. */
  readonly name?: string;
}
