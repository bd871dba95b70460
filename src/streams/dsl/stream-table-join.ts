/**
 * Stream-table joins (inner, left): each stream record looks up the table's current row of its
 * key. Table updates produce nothing by themselves. The table is read from its store, so the join
 * runs in the table's subtopology: the stream is repartitioned first when its key may have
 * changed, and the build checks that the two topics are co-partitioned.
 */
import { TopologyError } from "../errors";
import { serdeOrDefault } from "../serdes";
import type { GraphNode } from "../topology/graph";
import { KStream } from "./kstream";
import type { KTable } from "./ktable";
import type { Joined } from "./options";
import { erase, processorOf } from "./processors";
import { repartitionThrough } from "./repartition";

/** The node a join reads a stream from: the stream, or its repartition topic's source if its key may have changed. */
export function joinInput<K, V>(stream: KStream<K, V>, joined: Joined<K, V>, name: string): GraphNode {
  if (!stream.repartitionRequired) return stream.node;
  return repartitionThrough(stream, name, serdeOrDefault(joined.key ?? stream.keySerde), serdeOrDefault(joined.value ?? stream.valueSerde));
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
  const { storeName } = table.materialize();
  const prefix = kind === "inner" ? "KSTREAM-JOIN" : "KSTREAM-LEFTJOIN";
  const parent = joinInput(stream, joined, joined.name ?? graph.newName(prefix));
  const supplier = processorOf<K, V, K, VR>((record, context) => {
    if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in a stream-table join`);
    const row = context.getStateStore<K, VT>(storeName).get(record.key);
    if (row === undefined && kind === "inner") return;
    context.forward({ ...record, value: joiner(record.value, row ?? null) });
  });
  const node = graph.addProcessor(prefix, { parents: [parent], supplier: erase(supplier), stores: [storeName] });
  return new KStream<K, VR>(graph, node, joined.key ?? stream.keySerde, undefined, false);
}
