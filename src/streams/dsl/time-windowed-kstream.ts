/**
 * `TimeWindowedKStream`: a grouped stream windowed by `TimeWindows` (tumbling, hopping) or
 * `SlidingWindows`, ready to be aggregated into a table keyed by `Windowed<K>`. The results live
 * in a window store (change-logged like every store) that interactive queries read by key and
 * time range; windows older than the retention are deleted from it as stream time advances.
 * Results are forwarded on every update, or once per window when it closes (`emitStrategy`).
 */
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { Windowed } from "../windowed";
import { EmitStrategy } from "./emit-strategy";
import type { KGroupedStream } from "./kgrouped-stream";
import type { KTable } from "./ktable";
import type { Materialized } from "./materialized";
import type { Aggregation } from "./processors";
import { windowedFold } from "./windowed-fold";
import type { Windows } from "./windows/windows";

export class TimeWindowedKStream<K, V> {
  /** Made by `KGroupedStream.windowedBy`. */
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: Windows,
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
    return windowedFold<K, V, VA, never>(this.grouped, this.windows, "KSTREAM-WINDOWED-AGGREGATE", materialized, defaultValueSerde, { step, emit: this.emit });
  }
}
