/**
 * Options of DSL operators, named as in Kafka Streams: how a source reads (`Consumed`), how a sink
 * writes (`Produced`), how a grouping repartitions (`Grouped`), how `repartition()` does
 * (`Repartitioned`) and how a join names its topics and stores (`Joined`). Serdes left out default to the
 * serde the stream already knows for that key or value, else JSON.
 */
import type { Serde } from "../serdes";
import type { StreamPartitioner } from "../topology/graph";
import type { TimestampExtractor } from "../topology/topology";

export type { StreamPartitioner, TimestampExtractor };

export interface Consumed<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  /**
   * The record's event time, from the deserialized record (default: its timestamp). It is the
   * time windows, joins, suppression and stream-time punctuation go by.
   */
  readonly timestampExtractor?: TimestampExtractor<K, V>;
}

/** Options of joins: serdes of the stream's records and the base name of any topic or store the join needs. */
export interface Joined<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  /**
   * Base name of the repartition topic of a side whose key may have changed, and of the join's
   * buffer stores (stream-stream, and `<name>-Buffer` for a stream-table join with a grace period);
   * default the join node's generated name.
   */
  readonly name?: string;
  /**
   * Stream-table joins with a versioned table only (KIP-923): each stream record waits this long
   * in stream time before it is joined with the table's row as of its timestamp, so that table
   * updates arriving a little late still join. At most the table's history retention.
   */
  readonly gracePeriodMs?: number;
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

/** Options of stream-stream joins: `Joined`, plus the serde of the other stream's values. */
export interface StreamJoined<K, V, VO> extends Joined<K, V> {
  readonly otherValue?: Serde<VO>;
}

/** Options of `KStream.repartition()`. */
export interface Repartitioned<K, V> {
  readonly key?: Serde<K>;
  readonly value?: Serde<V>;
  /** Base name of the repartition topic (`<applicationId>-<name>-repartition`); default generated. */
  readonly name?: string;
  /**
   * The repartition topic's partition count, hence that of the subtopology reading it; default:
   * that of the subtopology writing it (or of the topics it is joined with).
   */
  readonly numberOfPartitions?: number;
  /** Picks each record's partition(s); default Kafka's default partitioner on the serialized key. */
  readonly partitioner?: StreamPartitioner<K, V>;
}
