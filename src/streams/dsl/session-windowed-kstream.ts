/**
 * `SessionWindowedKStream`: a grouped stream windowed by `SessionWindows`, ready to be aggregated
 * into a table keyed by `Windowed<K>` (the session). When sessions merge, the merged-away ones are
 * deleted from the table (tombstones), so the table's type admits null values.
 */
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { Windowed } from "../windowed";
import type { KGroupedStream } from "./kgrouped-stream";
import type { KTable } from "./ktable";
import type { Materialized } from "./materialized";
import type { Aggregation } from "./processors";
import { windowedFold } from "./time-windowed-kstream";
import { sessionAggregate } from "./window-aggregate";
import type { SessionWindows } from "./windows";

export class SessionWindowedKStream<K, V> {
  /** Made by `KGroupedStream.windowedBy`. */
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: SessionWindows,
  ) {}

  /** The number of records per key and session. */
  count(materialized: Materialized<K, number> = {}): KTable<Windowed<K>, number, null> {
    return this.fold<number>(materialized, Serdes.number(), (_key, _value, count) => (count ?? 0) + 1, (_key, a, b) => a + b);
  }

  /** Combines the values of each session; merging sessions combines their aggregates with the same reducer. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<Windowed<K>, V, null> {
    const step: Aggregation<K, V, V> = (_key, value, current) => (current === undefined ? value : reducer(current, value));
    return this.fold<V>(materialized, serdeOrDefault(this.grouped.groupedValueSerde), step, (_key, a, b) => reducer(a, b));
  }

  /** Folds the values of each session into an aggregate; `merger` combines two sessions' aggregates when they merge. */
  aggregate<VA>(
    initializer: () => VA,
    aggregator: (key: K, value: V, aggregate: VA) => VA,
    merger: (key: K, left: VA, right: VA) => VA,
    materialized: Materialized<K, VA> = {},
  ): KTable<Windowed<K>, VA, null> {
    return this.fold<VA>(materialized, Serdes.json<VA>(), (key, value, current) => aggregator(key, value, current === undefined ? initializer() : current), merger);
  }

  private fold<VA>(materialized: Materialized<K, VA>, defaultValueSerde: Serde<VA>, step: Aggregation<K, V, VA>, merger: (key: K, left: VA, right: VA) => VA): KTable<Windowed<K>, VA, null> {
    const { windows } = this;
    return windowedFold<K, V, VA, null>(this.grouped, windows, "session", "KSTREAM-SESSION-AGGREGATE", materialized, defaultValueSerde, (storeName, retentionMs) =>
      sessionAggregate(storeName, windows, retentionMs, step, merger),
    );
  }
}
