/**
 * Stream-GlobalKTable joins (Kafka's `KStreamGlobalKTableJoin`): each stream record looks up the
 * global table's row of the key `keySelector` computes from it, in the task's own copy of the
 * table; the result keeps the stream record's key and timestamp. A record whose computed key or
 * value is null is dropped (counted) — but a left join joins a record without a key of its own
 * (KIP-962). An inner join forwards nothing when the row is absent, a left join joins with null.
 * The stream is not repartitioned: every task holds the whole table.
 */
import { TopologyError } from "../errors";
import { KStream } from "./kstream";
import type { GlobalKTable } from "./global-ktable";
import { erase, keyValueStoreOf, processorOf } from "./processors";

export function streamGlobalTableJoin<K, V, KG, VG, VR>(
  kind: "inner" | "left",
  stream: KStream<K, V>,
  table: GlobalKTable<KG, VG>,
  keySelector: (key: K, value: V) => KG | null,
  joiner: (value: V, row: VG | null) => VR,
): KStream<K, VR> {
  const { graph } = stream;
  if (table.graph !== graph) throw new TopologyError("cannot join a stream and a global table of different StreamsBuilders");
  const storeName = table.queryableStoreName;
  const supplier = processorOf<K, V, K, VR>((record, context) => {
    const mapped = keySelector(record.key, record.value);
    const keepNullKey = kind === "left" && record.key === null && record.value !== null;
    if (!keepNullKey && (mapped === null || mapped === undefined || record.value === null))
      return context.dropRecord("null join key or value in a stream-global table join");
    const row = mapped === null || mapped === undefined ? undefined : keyValueStoreOf<KG, VG>(context, storeName).get(mapped);
    if (row === undefined && kind === "inner") return;
    context.forward({ ...record, value: joiner(record.value, row ?? null) });
  });
  const node = graph.addProcessor(kind === "inner" ? "KSTREAM-JOIN" : "KSTREAM-LEFTJOIN", {
    parents: [stream.node],
    supplier: erase(supplier),
    stores: [storeName],
  });
  return new KStream<K, VR>(graph, node, stream.keySerde, undefined, stream.repartitionRequired);
}
