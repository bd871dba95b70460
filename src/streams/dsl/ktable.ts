/**
 * `KTable`: a changelog stream read as a table, the latest value per key. Its records are updates;
 * a null value is a tombstone (the key was deleted). Tables from aggregations and topics hold no
 * tombstones; `filter` makes them (a row that no longer passes is deleted downstream), which the
 * `Tombstone` type parameter records so that `toStream()` is typed `V | null` only then.
 * A windowed table (from a windowed aggregation) also knows when each window is final, which is
 * what `suppress(Suppressed.untilWindowCloses())` needs.
 */
import { TopologyError } from "../errors";
import { serdeOrDefault, type Serde } from "../serdes";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import type { Window } from "../windowed";
import { KStream, type Predicate } from "./kstream";
import type { Materialized } from "./materialized";
import { erase, keyValueStoreOf, passThrough, processorOf, type RecordHandler } from "./processors";
import { suppressProcessor, type Suppressed } from "./suppress";
import { tableLookup, type TableLookup } from "./table-lookup";
import { writeRow } from "./table-row";
import { tableTableJoin, type TableJoinKind } from "./table-table-join";

/** A table as joins read it: the node after which its store is up to date, the store, and how to read a row. */
export interface MaterializedTable {
  readonly node: GraphNode;
  readonly storeName: string;
  readonly lookup: TableLookup;
}

/** What a windowed table knows of its windows: when each is final, and the serde of the key inside `Windowed`. */
export interface Windowing {
  readonly closeTime: (window: Window) => number;
  readonly innerKeySerde: Serde<unknown>;
}

export class KTable<K, V, Tombstone extends null = never> {
  /** Made by `StreamsBuilder.table` and aggregations; not meant to be called directly. */
  constructor(
    readonly graph: TopologyGraph,
    readonly node: GraphNode,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** The store holding this table, when it is materialized (aggregations always are). */
    readonly queryableStoreName: string | undefined,
    /** Set for tables keyed by `Windowed<…>` from windowed aggregations. */
    readonly windowing?: Windowing,
  ) {}

  /**
   * A new value for every row, with the row's timestamp; tombstones stay tombstones. With
   * `materialized`, the result is kept in that store too (and can be queried).
   */
  mapValues<VOut>(mapper: (value: V, key: K) => VOut, materialized?: Materialized<K, VOut>): KTable<K, VOut, Tombstone> {
    const mapped = this.derive<VOut, Tombstone>("KTABLE-MAPVALUES", materialized?.valueSerde, (r, c) =>
      c.forward(r.value === null ? { ...r, value: null as Tombstone } : { ...r, value: mapper(r.value as V, r.key) }),
    );
    return materialized ? mapped.materialized(materialized) : mapped;
  }

  /**
   * Keeps the rows that satisfy the predicate, with their timestamps; a row that does not is
   * forwarded as a tombstone. With `materialized`, the result is kept in that store too.
   */
  filter(predicate: Predicate<K, V>, materialized?: Materialized<K, V>): KTable<K, V, null> {
    const filtered = this.derive<V, null>("KTABLE-FILTER", materialized?.valueSerde ?? this.valueSerde, (r, c) =>
      c.forward(r.value !== null && predicate(r.key, r.value as V) ? r : { ...r, value: null }),
    );
    return materialized ? filtered.materialized(materialized) : filtered;
  }

  /** Keeps the rows that do not satisfy the predicate; the others become tombstones. */
  filterNot(predicate: Predicate<K, V>, materialized?: Materialized<K, V>): KTable<K, V, null> {
    return this.filter((key, value) => !predicate(key, value), materialized);
  }

  /** The table's updates as a stream: one record per update, tombstones as null values. */
  toStream(): KStream<K, V | Tombstone> {
    const node = this.graph.addProcessor("KTABLE-TOSTREAM", { parents: [this.node], supplier: passThrough, stores: [] });
    return new KStream<K, V | Tombstone>(this.graph, node, this.keySerde, serdeOrDefault(this.valueSerde) as Serde<V | Tombstone>, false);
  }

  /**
   * Holds back a windowed table's updates and emits each window's final value once stream time
   * passes its close time (end + grace), in a change-logged buffer store. Windowed tables only.
   */
  suppress(suppressed: Suppressed): KTable<K, V, Tombstone> {
    if (!this.windowing) throw new TopologyError("suppress(Suppressed.untilWindowCloses()) needs a windowed table, from windowedBy(...) and an aggregation");
    const storeName = suppressed.name ?? this.graph.newName("KTABLE-SUPPRESS-STATE-STORE");
    const valueSerde = serdeOrDefault(this.valueSerde) as Serde<unknown>;
    this.graph.addStore({ name: storeName, kind: "buffer", keySerde: this.windowing.innerKeySerde, valueSerde });
    const supplier = suppressProcessor(storeName, this.windowing.closeTime);
    const node = this.graph.addProcessor("KTABLE-SUPPRESS", { parents: [this.node], supplier, stores: [storeName] });
    return new KTable<K, V, Tombstone>(this.graph, node, this.keySerde, this.valueSerde, undefined, this.windowing);
  }

  /** Rows of both tables with the same key, joined; a row missing on either side has no result. */
  join<VO, VR, T extends null>(other: KTable<K, VO, T>, joiner: (value: V, other: VO) => VR, materialized?: Materialized<K, VR>): KTable<K, VR, null> {
    return this.tableJoin("inner", other, joiner as (value: V | null, other: VO | null) => VR, materialized);
  }

  /** Every row of this table, joined with the other's row of the same key or null. */
  leftJoin<VO, VR, T extends null>(other: KTable<K, VO, T>, joiner: (value: V, other: VO | null) => VR, materialized?: Materialized<K, VR>): KTable<K, VR, null> {
    return this.tableJoin("left", other, joiner as (value: V | null, other: VO | null) => VR, materialized);
  }

  /** Every row of either table, joined with the other's row of the same key or null. */
  outerJoin<VO, VR, T extends null>(other: KTable<K, VO, T>, joiner: (value: V | null, other: VO | null) => VR, materialized?: Materialized<K, VR>): KTable<K, VR, null> {
    return this.tableJoin("outer", other, joiner, materialized);
  }

  /**
   * The node whose output reflects a store holding this table, the store, and how to read a row
   * from it: the table's own store, or else a new one written by a node added after this one
   * (joins read tables from stores).
   */
  materialize(storeName?: string, keySerde?: Serde<K>, valueSerde?: Serde<V>): MaterializedTable {
    const own = this.queryableStoreName;
    if (own !== undefined && storeName === undefined) return { node: this.node, storeName: own, lookup: tableLookup(this.graph.storeKind(own) ?? "key-value", own) };
    const name = storeName ?? this.graph.newName("KTABLE-MATERIALIZE-STATE-STORE");
    this.graph.addStore({ name, keySerde: serdeOrDefault(keySerde ?? this.keySerde) as Serde<unknown>, valueSerde: serdeOrDefault(valueSerde ?? this.valueSerde) as Serde<unknown> });
    const supplier = processorOf<K, V | null, K, V | null>((record, context) => {
      writeRow(keyValueStoreOf<K, V>(context, name), record);
      context.forward(record);
    });
    const node = this.graph.addProcessor("KTABLE-MATERIALIZE", { parents: [this.node], supplier: erase(supplier), stores: [name] });
    return { node, storeName: name, lookup: tableLookup("key-value", name) };
  }

  private tableJoin<VO, VR, T extends null>(kind: TableJoinKind, other: KTable<K, VO, T>, joiner: (value: V | null, other: VO | null) => VR, materialized?: Materialized<K, VR>): KTable<K, VR, null> {
    if (other.graph !== this.graph) throw new TopologyError("cannot join tables of different StreamsBuilders");
    const node = tableTableJoin(kind, this.graph, this.materialize(), other.materialize(), joiner);
    const joined = new KTable<K, VR, null>(this.graph, node, this.keySerde, materialized?.valueSerde, undefined, this.windowing);
    return materialized ? joined.materialized({ ...materialized, storeName: materialized.storeName ?? this.graph.newName("KTABLE-JOIN-STATE-STORE") }) : joined;
  }

  /** This table, also kept in the store `materialized` names (generated when it names none). */
  private materialized(materialized: Materialized<K, V>): KTable<K, V, Tombstone> {
    const name = materialized.storeName ?? this.graph.newName("KTABLE-MATERIALIZE-STATE-STORE");
    const keySerde = materialized.keySerde ?? this.keySerde;
    const valueSerde = materialized.valueSerde ?? this.valueSerde;
    const { node, storeName } = this.materialize(name, keySerde, valueSerde);
    return new KTable<K, V, Tombstone>(this.graph, node, keySerde, valueSerde, storeName, this.windowing);
  }

  private derive<VOut, TOut extends null>(
    prefix: string,
    valueSerde: Serde<VOut> | undefined,
    body: RecordHandler<K, V | Tombstone, K, VOut | TOut>,
  ): KTable<K, VOut, TOut> {
    const node = this.graph.addProcessor(prefix, { parents: [this.node], supplier: erase(processorOf(body)), stores: [] });
    return new KTable<K, VOut, TOut>(this.graph, node, this.keySerde, valueSerde, undefined, this.windowing);
  }
}
