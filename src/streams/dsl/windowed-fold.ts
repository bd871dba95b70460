/**
 * What every windowed aggregation of a grouped stream shares, whatever its window type: the store
 * its windows ask for, the repartition if the key changed, the node with the windows' aggregate
 * processor, and the resulting table keyed by `Windowed<K>`, which knows when each window closes.
 */
import { Serdes, type Serde } from "../serdes";
import type { Windowed } from "../windowed";
import { OldValues } from "./change";
import type { KGroupedStream } from "./kgrouped-stream";
import { KTable, type Windowing } from "./ktable";
import { materializeStore } from "./materialize";
import type { Materialized } from "./materialized";
import { windowRetention, type WindowAggregation, type Windows } from "./windows/windows";

/** What a windowed table knows of its windows: when each closes, and the serde of the key inside `Windowed`. */
export function windowingOf<K>(windows: Windows, keySerde: Serde<K>): Windowing {
  return { closeTime: windows.closeTime.bind(windows), innerKeySerde: keySerde as Serde<unknown> };
}

/** The fold of one windowed aggregation: what it does with each value, besides where it keeps the result. */
export type WindowedStep<K, V, VA> = Pick<WindowAggregation<K, V, VA>, "step" | "merge" | "emit">;

export function windowedFold<K, V, VA, T extends null>(
  grouped: KGroupedStream<K, V>,
  windows: Windows,
  prefix: string,
  materialized: Materialized<K, VA>,
  defaultValueSerde: Serde<VA>,
  fold: WindowedStep<K, V, VA>,
): KTable<Windowed<K>, VA, T> {
  const { graph } = grouped;
  const retentionMs = windowRetention(windows, materialized);
  const {
    name: storeName,
    keySerde,
    valueSerde,
  } = materializeStore(graph, materialized, {
    generatedName: `${prefix}-STATE-STORE`,
    kind: windows.storeKind,
    keySerde: () => grouped.storeKeySerde(materialized),
    valueSerde: defaultValueSerde,
    unversioned: "windowed aggregation",
  });
  const parent = grouped.aggregationParent(storeName, keySerde);
  const oldValues = new OldValues();
  const supplier = windows.aggregateProcessor<K, V, VA>({ ...fold, storeName, retentionMs, oldValues });
  const node = graph.addProcessor(prefix, { parents: [parent], supplier, stores: [storeName] });
  return new KTable<Windowed<K>, VA, T>(graph, node, Serdes.windowed(keySerde), valueSerde, storeName, {
    oldValues,
    windowing: windowingOf(windows, keySerde),
  });
}
