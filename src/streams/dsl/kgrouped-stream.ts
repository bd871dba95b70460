/**
 * `KGroupedStream`: a stream grouped by key, ready to be aggregated into a table, or windowed
 * (`windowedBy`) first. When the key may have changed since the source, the aggregation reads its
 * records back from a repartition topic `<applicationId>-<name>-repartition` (written with the
 * collector's default partitioner), which makes the aggregation a new subtopology: every key
 * lands on the one task that owns it.
 */
import type { GraphNode, TopologyGraph } from "../topology/graph";
import { Serdes, serdeOrDefault, type Serde } from "../serdes";
import type { KStream } from "./kstream";
import { OldValues } from "./change";
import { CogroupedKStream } from "./cogrouped-kstream";
import { KTable } from "./ktable";
import { materializeStore, versioning } from "./materialize";
import type { Materialized } from "./materialized";
import { aggregateProcessor } from "./processors";
import { repartitionThrough } from "./repartition";
import { SessionWindowedKStream } from "./session-windowed-kstream";
import { TimeWindowedKStream } from "./time-windowed-kstream";
import type { SessionStoreWindows, Windows, WindowStoreWindows } from "./windows/windows";

export class KGroupedStream<K, V> {
  /** The source of the repartition topic `Grouped.name` names, once made. */
  private namedRepartition: GraphNode | undefined;
  /** The grouping's key serde, once an aggregation needed it (a placeholder when not known: ../topology/missing-key-serde.ts). */
  private groupingKeySerde: Serde<K> | undefined;

  /** Made by `KStream.groupByKey` and `groupBy`. */
  constructor(
    private readonly stream: KStream<K, V>,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
    /** Base name of the repartition topic, when one is needed. */
    private readonly repartitionName: string | undefined,
    /** The operation that made it, for the error when its key serde is missing. */
    private readonly operation: "groupByKey" | "groupBy" = "groupByKey",
  ) {}

  /** The number of records per key. */
  count(materialized: Materialized<K, number> = {}): KTable<K, number> {
    return this.fold<number>("KSTREAM-AGGREGATE", materialized, Serdes.number(), (_key, _value, count) => (count ?? 0) + 1);
  }

  /** Combines the values of each key; the first value of a key is its first aggregate. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<K, V> {
    return this.fold<V>("KSTREAM-REDUCE", materialized, serdeOrDefault(this.valueSerde), (_key, value, current) =>
      current === undefined ? value : reducer(current, value),
    );
  }

  /** Folds the values of each key into an aggregate that starts as `initializer()`. */
  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: Materialized<K, VA> = {}): KTable<K, VA> {
    return this.fold<VA>("KSTREAM-AGGREGATE", materialized, Serdes.json<VA>(), (key, value, current) =>
      aggregator(key, value, current === undefined ? initializer() : current),
    );
  }

  /** Windowed aggregations: time (tumbling, hopping) and sliding windows (`TimeWindows`, `SlidingWindows`), or sessions (`SessionWindows`). */
  windowedBy(windows: WindowStoreWindows): TimeWindowedKStream<K, V>;
  windowedBy(windows: SessionStoreWindows): SessionWindowedKStream<K, V>;
  windowedBy(windows: Windows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    // Windows kept in a session store merge: their aggregations take a merger.
    return windows.storeKind === "session" ? new SessionWindowedKStream(this, windows) : new TimeWindowedKStream(this, windows);
  }

  get graph(): TopologyGraph {
    return this.stream.graph;
  }

  /** The serde of the grouped values, when known. */
  get groupedValueSerde(): Serde<V> | undefined {
    return this.valueSerde;
  }

  /** The key serde this grouping was given or its stream knows; undefined after a key change without one. */
  get knownKeySerde(): Serde<K> | undefined {
    return this.keySerde;
  }

  /**
   * The key serde of an aggregation's store (and of its repartition topic): the materialized one,
   * else the grouping's, else — the key changed and none was given — a placeholder the build binds
   * to the default key serde or refuses.
   */
  storeKeySerde(materialized: { readonly keySerde?: Serde<K> }): Serde<K> {
    if (materialized.keySerde) return materialized.keySerde;
    const fix = this.operation === "groupBy" ? "groupBy(selector, { key: Serdes.string() })" : "groupByKey({ key: Serdes.string() })";
    this.groupingKeySerde ??= this.stream.keySerdeOr(this.keySerde, `${this.operation}()`, fix);
    return this.groupingKeySerde;
  }

  /**
   * The node an aggregation reads from: the stream itself, or, when its key may have changed, the
   * source of a repartition topic named after the grouping (or else the aggregation's store).
   */
  aggregationParent(storeName: string, keySerde: Serde<K>): GraphNode {
    if (!this.stream.repartitionRequired) return this.stream.node;
    // A repartition topic named by `Grouped.name` is shared by every aggregation of this grouping (as in Kafka).
    if (this.repartitionName !== undefined) {
      this.namedRepartition ??= repartitionThrough(this.stream, this.repartitionName, keySerde, serdeOrDefault(this.valueSerde));
      return this.namedRepartition;
    }
    return repartitionThrough(this.stream, storeName, keySerde, serdeOrDefault(this.valueSerde));
  }

  /**
   * Aggregates this grouping together with others into one table (Kafka's `cogroup`): each
   * grouped stream folds its values into the shared aggregate with its own aggregator.
   */
  cogroup<VA>(aggregator: (key: K, value: V, aggregate: VA) => VA): CogroupedKStream<K, VA> {
    return new CogroupedKStream<K, VA>(this as unknown as KGroupedStream<K, unknown>, aggregator as (key: K, value: unknown, aggregate: VA) => VA);
  }

  private fold<VA>(
    prefix: string,
    materialized: Materialized<K, VA>,
    defaultValueSerde: Serde<VA>,
    step: (key: K, value: V, current: VA | undefined) => VA,
  ): KTable<K, VA> {
    const { graph } = this.stream;
    const store = materializeStore(graph, materialized, {
      generatedName: `${prefix}-STATE-STORE`,
      keySerde: () => this.storeKeySerde(materialized),
      valueSerde: defaultValueSerde,
      cached: true,
    });
    const parent = this.aggregationParent(store.name, store.keySerde);
    const oldValues = new OldValues();
    const supplier = aggregateProcessor(store.name, step, oldValues, store.historyRetentionMs);
    const node = graph.addProcessor(prefix, { parents: [parent], supplier, stores: [store.name] });
    return new KTable<K, VA>(graph, node, store.keySerde, store.valueSerde, store.name, { oldValues, ...versioning(store) });
  }
}
