/**
 * Repartitioning: writes a stream to the repartition topic `<applicationId>-<name>-repartition`
 * (with the collector's default partitioner on the serialized key) and reads it back in a new
 * source, which starts a new subtopology. Aggregations and joins of a stream whose key may have
 * changed go through one, so that every key is processed by the one task that owns it.
 * Records without a key are dropped before it (they could never be aggregated or joined), except
 * on their way to a left or outer join, which joins them with null (KIP-962; Kafka keeps them too).
 */
import type { Serde } from "../serdes";
import type { GraphNode, StreamPartitioner } from "../topology/graph";
import type { KStream } from "./kstream";
import { erase, processorOf } from "./processors";

/** A chosen partition count and partitioner of the repartition topic (`KStream.repartition`). */
export interface RepartitionTopic<K, V> {
  readonly partitions?: number;
  readonly partitioner?: StreamPartitioner<K, V>;
}

/** The source node reading the stream back from its repartition topic. */
export function repartitionThrough<K, V>(
  stream: KStream<K, V>,
  name: string,
  keySerde: Serde<K>,
  valueSerde: Serde<V>,
  keepNullKeys = false,
  topic: RepartitionTopic<K, V> = {},
): GraphNode {
  const { graph } = stream;
  const serdes = { keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown> };
  let parent = stream.node;
  if (!keepNullKeys) {
    const dropNullKeys = processorOf<K, V, K, V>((r, c) => (r.key === null ? c.dropRecord("null key before a repartition") : c.forward(r)));
    parent = graph.addProcessor("KSTREAM-FILTER", { parents: [stream.node], supplier: erase(dropNullKeys), stores: [] });
  }
  const { partitions, partitioner } = topic;
  const chosen = {
    ...(partitions === undefined ? {} : { partitions }),
    ...(partitioner ? { partitioner: partitioner as unknown as StreamPartitioner<unknown, unknown> } : {}),
  };
  graph.addSink("KSTREAM-SINK", { parents: [parent], topic: name, repartition: true, ...serdes, ...chosen });
  return graph.addSource("KSTREAM-SOURCE", { topics: [name], repartition: true, ...serdes });
}
