/**
 * Stream-table joins (inner, left): each stream record looks up the table's current row of its
 * key; the result keeps the stream record's timestamp. Table updates produce nothing by
 * themselves. A record with a null value is dropped (counted); one with a null key is dropped by
 * an inner join and joined with null by a left join (KIP-962). The table is read from its store,
 * so the join runs in the table's subtopology: the stream is repartitioned first when its key may
 * have changed, and the build checks that the two topics are co-partitioned.
 */
import { TopologyError } from "../errors";
import { serdeOrDefault } from "../serdes";
import type { GraphNode } from "../topology/graph";
import { KStream } from "./kstream";
import type { KTable } from "./ktable";
import type { Joined } from "./options";
import { erase, processorOf } from "./processors";
import { repartitionThrough } from "./repartition";

/**
 * The node a join reads a stream from: the stream, or its repartition topic's source if its key
 * may have changed. A side that joins records without a key with null (`keepNullKeys`) keeps them
 * through the repartition topic.
 */
export function joinInput<K, V>(stream: KStream<K, V>, joined: Joined<K, V>, name: string, keepNullKeys = false): GraphNode {
  if (!stream.repartitionRequired) return stream.node;
  return repartitionThrough(stream, name, serdeOrDefault(joined.key ?? stream.keySerde), serdeOrDefault(joined.value ?? stream.valueSerde), keepNullKeys);
}

export function streamTableJoin<K, V, VT, VR, T extends null>(
  kind: "inner" | "left",
  stream: KStream<K, V>,
  table: KTable<K, VT, T>,
  joiner: (value: V, tableValue: VT | null) => VR,
  joined: Joined<K, V>,
): KStream<K, VR> {
  const { graph } = stream;
  if (table.graph !== graph) throw new TopologyError("cannot join a stream and a table of different StreamsBuilders");
  const { storeName, lookup } = table.materialize();
  const prefix = kind === "inner" ? "KSTREAM-JOIN" : "KSTREAM-LEFTJOIN";
  const name = graph.newName(prefix);
  const parent = joinInput(stream, joined, joined.name ?? name, kind === "left");
  const supplier = processorOf<K, V, K, VR>((record, context) => {
    if (kind === "left" && record.key === null && record.value !== null) return context.forward({ ...record, value: joiner(record.value, null) });
    if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in a stream-table join`);
    const row = lookup(context, record.key)?.value as VT | undefined;
    if (row === undefined && kind === "inner") return;
    context.forward({ ...record, value: joiner(record.value, row ?? null) });
  });
  const node = graph.addProcessor(prefix, { parents: [parent], supplier: erase(supplier), stores: [storeName] }, name);
  return new KStream<K, VR>(graph, node, joined.key ?? stream.keySerde, undefined, false);
}
