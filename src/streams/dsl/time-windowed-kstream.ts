/**
 * `TimeWindowedKStream`: a grouped stream windowed by `TimeWindows` (tumbling, hopping) or
 * `SlidingWindows`, ready to be aggregated into a table keyed by `Windowed<K>`. The results live
 * in a window store (change-logged like every store) that interactive queries read by key and
 * time range; windows older than the retention are deleted from it as stream time advances.
 * Results are forwarded on every update, or once per window when it closes (`emitStrategy`).
 */
import { TopologyError } from "../errors";
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { AnySupplier } from "../topology/graph";
import type { Windowed } from "../windowed";
import type { KGroupedStream } from "./kgrouped-stream";
import { OldValues } from "./change";
import { EmitStrategy } from "./emit-strategy";
import { KTable, type Windowing } from "./ktable";
import { type Materialized, refuseVersioned } from "./materialized";
import type { Aggregation } from "./processors";
import { slidingWindowAggregate } from "./sliding-window-aggregate";
import { timeWindowAggregate } from "./window-aggregate";
import { TimeWindows, type SessionWindows, type SlidingWindows } from "./windows";

/** How long a windowed store keeps windows: `Materialized.retentionMs`, at least as long as they stay open. */
export function windowRetention(windows: TimeWindows | SlidingWindows | SessionWindows, materialized: { readonly retentionMs?: number }): number {
  const retentionMs = materialized.retentionMs ?? windows.minRetentionMs;
  if (!Number.isSafeInteger(retentionMs) || retentionMs < windows.minRetentionMs) {
    throw new TopologyError(`retention ${retentionMs} ms is shorter than the windows stay open (${windows.minRetentionMs} ms)`);
  }
  return retentionMs;
}

/** What a windowed table knows of its windows: when each closes, and the serde of the key inside `Windowed`. */
export function windowingOf<K>(windows: TimeWindows | SlidingWindows | SessionWindows, keySerde: Serde<K>): Windowing {
  return { closeTime: windows.closeTime.bind(windows), innerKeySerde: keySerde as Serde<unknown> };
}

/** What every windowed fold shares: the store, the repartition if needed, the node, the windowed table. */
export function windowedFold<K, V, VA, T extends null>(
  grouped: KGroupedStream<K, V>,
  windows: TimeWindows | SlidingWindows | SessionWindows,
  kind: "window" | "session",
  prefix: string,
  materialized: Materialized<K, VA>,
  defaultValueSerde: Serde<VA>,
  supplier: (storeName: string, retentionMs: number, oldValues: OldValues) => AnySupplier,
): KTable<Windowed<K>, VA, T> {
  const { graph } = grouped;
  const retentionMs = windowRetention(windows, materialized);
  refuseVersioned(materialized as Materialized<unknown, unknown>, "windowed aggregation");
  const storeName = materialized.storeName ?? graph.newName(`${prefix}-STATE-STORE`);
  const keySerde = grouped.storeKeySerde(materialized);
  const valueSerde = materialized.valueSerde ?? defaultValueSerde;
  graph.addStore({ name: storeName, kind, keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown> });
  const parent = grouped.aggregationParent(storeName, keySerde);
  const oldValues = new OldValues();
  const node = graph.addProcessor(prefix, { parents: [parent], supplier: supplier(storeName, retentionMs, oldValues), stores: [storeName] });
  return new KTable<Windowed<K>, VA, T>(graph, node, Serdes.windowed(keySerde), valueSerde, storeName, {
    oldValues,
    windowing: windowingOf(windows, keySerde),
  });
}

export class TimeWindowedKStream<K, V> {
  /** Made by `KGroupedStream.windowedBy`. */
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: TimeWindows | SlidingWindows,
    private readonly emit: EmitStrategy = EmitStrategy.onWindowUpdate(),
  ) {}

  /** When results are forwarded: on every update (default), or once per window when it closes (`EmitStrategy.onWindowClose()`). */
  emitStrategy(emit: EmitStrategy): TimeWindowedKStream<K, V> {
    return new TimeWindowedKStream(this.grouped, this.windows, emit);
  }

  /** The number of records per key and window. */
  count(materialized: Materialized<K, number> = {}): KTable<Windowed<K>, number> {
    return this.fold<number>(materialized, Serdes.number(), (_key, _value, count) => (count ?? 0) + 1);
  }

  /** Combines the values of each key and window; a window's first value is its first aggregate. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<Windowed<K>, V> {
    return this.fold<V>(materialized, serdeOrDefault(this.grouped.groupedValueSerde), (_key, value, current) =>
      current === undefined ? value : reducer(current, value),
    );
  }

  /** Folds the values of each key and window into an aggregate that starts as `initializer()`. */
  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: Materialized<K, VA> = {}): KTable<Windowed<K>, VA> {
    return this.fold<VA>(materialized, Serdes.json<VA>(), (key, value, current) => aggregator(key, value, current === undefined ? initializer() : current));
  }

  private fold<VA>(materialized: Materialized<K, VA>, defaultValueSerde: Serde<VA>, step: Aggregation<K, V, VA>): KTable<Windowed<K>, VA> {
    const { windows, emit } = this;
    return windowedFold<K, V, VA, never>(
      this.grouped,
      windows,
      "window",
      "KSTREAM-WINDOWED-AGGREGATE",
      materialized,
      defaultValueSerde,
      (storeName, retentionMs, oldValues) =>
        windows instanceof TimeWindows
          ? timeWindowAggregate(storeName, windows, retentionMs, step, oldValues, emit)
          : slidingWindowAggregate(storeName, windows, retentionMs, step, oldValues, emit),
    );
  }
}
