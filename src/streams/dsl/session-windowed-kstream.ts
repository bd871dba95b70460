/**
 * `SessionWindowedKStream`: a grouped stream windowed by `SessionWindows`, ready to be aggregated
 * into a table keyed by `Windowed<K>` (the session). When sessions merge, the merged-away ones are
 * deleted from the table (tombstones), so the table's type admits null values. With
 * `emitStrategy(EmitStrategy.onWindowClose())` each session is forwarded once, when it closes.
 */
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { Windowed } from "../windowed";
import type { KGroupedStream } from "./kgrouped-stream";
import type { KTable } from "./ktable";
import type { Materialized } from "./materialized";
import { EmitStrategy } from "./emit-strategy";
import { windowedFold } from "./windowed-fold";
import type { Windows } from "./windows/windows";

export class SessionWindowedKStream<K, V> {
  /** Made by `KGroupedStream.windowedBy`. */
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: Windows,
    private readonly emit: EmitStrategy = EmitStrategy.onWindowUpdate(),
  ) {}

  /** When results are forwarded: on every update (default), or once per session when it closes (`EmitStrategy.onWindowClose()`). */
  emitStrategy(emit: EmitStrategy): SessionWindowedKStream<K, V> {
    return new SessionWindowedKStream(this.grouped, this.windows, emit);
  }

  /** The number of records per key and session. */
  count(materialized: Materialized<K, number> = {}): KTable<Windowed<K>, number, null> {
    return this.fold<number>(
      materialized,
      Serdes.number(),
      () => 0,
      (_key, _value, count) => count + 1,
      (_key, a, b) => a + b,
    );
  }

  /** Combines the values of each session; merging sessions combines their aggregates with the same reducer. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<Windowed<K>, V, null> {
    // Kafka's: no initial value (null), the first value as it is, merged sessions reduced in order.
    const step = (_key: K, value: V | null, aggregate: V | null): V | null => (aggregate === null ? value : reducer(aggregate, value as V));
    const merge = (key: K, a: V | null, b: V | null) => step(key, b, a);
    return this.fold<V | null>(
      materialized as Materialized<K, V | null>,
      serdeOrDefault(this.grouped.groupedValueSerde) as Serde<V | null>,
      () => null,
      step,
      merge,
    ) as KTable<Windowed<K>, V, null>;
  }

  /** Folds the values of each session into an aggregate; `merger` combines two sessions' aggregates when they merge. */
  aggregate<VA>(
    initializer: () => VA,
    aggregator: (key: K, value: V, aggregate: VA) => VA,
    merger: (key: K, left: VA, right: VA) => VA,
    materialized: Materialized<K, VA> = {},
  ): KTable<Windowed<K>, VA, null> {
    return this.fold<VA>(materialized, Serdes.json<VA>(), initializer, aggregator, merger);
  }

  private fold<VA>(
    materialized: Materialized<K, VA>,
    defaultValueSerde: Serde<VA>,
    initializer: () => VA,
    aggregator: (key: K, value: V, aggregate: VA) => VA,
    merger: (key: K, left: VA, right: VA) => VA,
  ): KTable<Windowed<K>, VA, null> {
    return windowedFold<K, V, VA, null>(this.grouped, this.windows, "KSTREAM-SESSION-AGGREGATE", materialized, defaultValueSerde, {
      step: (key, value, aggregate) => aggregator(key, value, aggregate as VA),
      merge: { initializer, merger },
      emit: this.emit,
    });
  }
}
