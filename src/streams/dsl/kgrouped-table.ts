/**
 * `KGroupedTable`: a table regrouped by `KTable.groupBy`, ready to be aggregated. Its updates
 * cross a repartition topic `<applicationId>-<name>-repartition` (named after `Grouped.name`, else
 * the aggregation's store) as changes — new and old value in one record — so each group is
 * aggregated by the one task that owns it, which starts a new subtopology. An aggregation
 * subtracts an update's old value and adds its new one (Kafka's `KTableAggregate`/`KTableReduce`):
 * the subtractor runs first, so a row that moves within its group is never counted twice.
 */
import { Serdes, type Serde } from "../serdes";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import { MissingKeySerde } from "../topology/missing-key-serde";
import { change, changeSerde, OldValues, type Change } from "./change";
import { KTable } from "./ktable";
import { materializeStore, versioning } from "./materialize";
import type { Materialized } from "./materialized";
import { erase, rowStoreOf, tableUpdateProcessorOf } from "./processors";

/** How a group's aggregate changes: add a value to it, or subtract one; `undefined` aggregate: the group has none yet. */
interface TableAggregation<K, V, VA> {
  readonly add: (key: K, value: V, aggregate: VA | undefined) => VA;
  readonly subtract: (key: K, value: V, aggregate: VA) => VA;
}

export class KGroupedTable<K, V> {
  /** The source of the shared repartition topic, when `Grouped.name` names it. */
  private namedRepartition: GraphNode | undefined;

  /** Made by `KTable.groupBy`. */
  constructor(
    private readonly graph: TopologyGraph,
    /** The node mapping updates to their groups. */
    private readonly selectNode: GraphNode,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly repartitionName: string | undefined,
  ) {}

  /** The number of rows in each group. */
  count(materialized: Materialized<K, number> = {}): KTable<K, number> {
    return this.fold<number>("KTABLE-AGGREGATE", materialized, Serdes.number(), {
      add: (_key, _value, count) => (count ?? 0) + 1,
      subtract: (_key, _value, count) => count - 1,
    });
  }

  /** Combines the rows of each group: `adder` folds a new value in, `subtractor` takes an old value out. */
  reduce(adder: (aggregate: V, value: V) => V, subtractor: (aggregate: V, value: V) => V, materialized: Materialized<K, V> = {}): KTable<K, V> {
    return this.fold<V>("KTABLE-REDUCE", materialized, this.valueSerde, {
      add: (_key, value, aggregate) => (aggregate === undefined ? value : adder(aggregate, value)),
      subtract: (_key, value, aggregate) => subtractor(aggregate, value),
    });
  }

  /** Folds the rows of each group into an aggregate that starts as `initializer()`. */
  aggregate<VA>(
    initializer: () => VA,
    adder: (key: K, value: V, aggregate: VA) => VA,
    subtractor: (key: K, value: V, aggregate: VA) => VA,
    materialized: Materialized<K, VA> = {},
  ): KTable<K, VA> {
    return this.fold<VA>("KTABLE-AGGREGATE", materialized, Serdes.json<VA>(), {
      add: (key, value, aggregate) => adder(key, value, aggregate === undefined ? initializer() : aggregate),
      subtract: subtractor,
    });
  }

  private fold<VA>(prefix: string, materialized: Materialized<K, VA>, defaultValueSerde: Serde<VA>, aggregation: TableAggregation<K, V, VA>): KTable<K, VA> {
    const { graph } = this;
    const store = materializeStore(graph, materialized, {
      generatedName: "KTABLE-AGGREGATE-STATE-STORE",
      keySerde: () => this.keySerde,
      valueSerde: defaultValueSerde,
      cached: true,
    });
    // A key serde given only here serves the regrouping too.
    if (materialized.keySerde && this.keySerde instanceof MissingKeySerde) this.keySerde.supply(materialized.keySerde as Serde<unknown>);
    const oldValues = new OldValues();
    const supplier = tableAggregateProcessor(store.name, aggregation, oldValues, store.historyRetentionMs);
    const node = graph.addProcessor(prefix, { parents: [this.repartition(store.name)], supplier, stores: [store.name] });
    return new KTable<K, VA>(graph, node, store.keySerde, store.valueSerde, store.name, { oldValues, ...versioning(store) });
  }

  /** The source reading the changes back from the repartition topic; one per aggregation unless `Grouped.name` names it. */
  private repartition(storeName: string): GraphNode {
    if (this.namedRepartition) return this.namedRepartition;
    const topic = this.repartitionName ?? storeName;
    const serdes = { keySerde: this.keySerde as Serde<unknown>, valueSerde: changeSerde(this.valueSerde) as Serde<unknown> };
    this.graph.addSink("KSTREAM-SINK", { parents: [this.selectNode], topic, repartition: true, ...serdes });
    const source = this.graph.addSource("KSTREAM-SOURCE", { topics: [topic], repartition: true, ...serdes });
    if (this.repartitionName !== undefined) this.namedRepartition = source;
    return source;
  }
}

/**
 * Kafka's `KTableAggregate`: subtracts the old value from the group's aggregate (when both exist),
 * then adds the new value (from the initializer's value when the group has no aggregate), writes
 * the result and forwards it with the previous aggregate as its old value. The result's timestamp
 * is the update's, or the aggregate's when that is later and the aggregate was used.
 */
function tableAggregateProcessor<K, V, VA>(
  storeName: string,
  aggregation: TableAggregation<K, V, VA>,
  oldValues: OldValues,
  historyRetentionMs: number | undefined,
) {
  return erase(
    tableUpdateProcessorOf<K, Change<V>, VA>(storeName, oldValues, (record, context, forward) => {
      if (record.key === null) throw new Error(`Record key for KTable aggregate operator with state ${storeName} should not be null.`);
      const store = rowStoreOf<K, VA>(context, storeName, historyRetentionMs);
      const current = store.getWithTimestamp(record.key);
      const { newValue, oldValue } = record.value;
      let aggregate = current?.value;
      let timestamp = record.timestamp;
      if (oldValue !== null && current !== undefined) {
        aggregate = aggregation.subtract(record.key, oldValue, current.value);
        timestamp = Math.max(record.timestamp, current.timestamp);
      }
      if (newValue !== null) {
        aggregate = aggregation.add(record.key, newValue, aggregate);
        if (current !== undefined) timestamp = Math.max(record.timestamp, current.timestamp);
      }
      // No aggregate (a subtractor may answer null): the group's row is deleted, as Kafka's store deletes a null.
      const next = aggregate ?? null;
      if (next === null) store.delete(record.key, timestamp);
      else store.put(record.key, next, timestamp);
      forward({ ...record, value: change(next, oldValues.sending ? (current?.value ?? null) : null), timestamp });
    }),
  );
}
