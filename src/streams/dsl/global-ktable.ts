/**
 * `GlobalKTable` (`StreamsBuilder.globalTable`): a table every task that joins it holds whole — each
 * such task reads every partition of the topic into its own copy, kept in a store of the task like
 * any other (change-logged, restored after a wipe, queryable by key), so a stream joins it by any
 * key it computes, without repartitioning or co-partitioning (`KStream.join(globalTable,
 * keySelector, joiner)`). Global updates write the table and go no further: they do not move the
 * task's stream time, as Kafka's global thread's do not.
 */
import type { Serde } from "../serdes";
import type { GraphNode, TopologyGraph } from "../topology/graph";

export class GlobalKTable<K, V> {
  /** Made by `StreamsBuilder.globalTable`. */
  constructor(
    readonly graph: TopologyGraph,
    /** The processor writing the table's store. */
    readonly node: GraphNode,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
    /** The store every joining task keeps its copy in; queryable by key. */
    readonly queryableStoreName: string,
  ) {}
}
