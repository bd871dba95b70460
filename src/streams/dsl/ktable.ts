/**
 * `KTable`: a changelog stream read as a table, the latest value per key. Its records are updates,
 * passed between table operators as `Change`s (new value, and old value once an operator further
 * down asks for it); a null new value is a tombstone (the key was deleted). Tables from
 * aggregations and topics hold no tombstones; `filter` makes them (a row that no longer passes is
 * deleted downstream), which the `Tombstone` type parameter records so that `toStream()` is typed
 * `V | null` only then. A windowed table (from a windowed aggregation) also knows when each window
 * is final, which is what `suppress(Suppressed.untilWindowCloses())` needs.
 */
import { TopologyError } from "../errors";
import type { KeyValue } from "../record";
import { serdeOrDefault, type Serde } from "../serdes";
import { missingKeySerdeMessage } from "../topology/missing-key-serde";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import type { Window } from "../windowed";
import { OldValues, type Change } from "./change";
import { KGroupedTable } from "./kgrouped-table";
import { KStream, type Predicate } from "./kstream";
import { materializeStore, versioning } from "./materialize";
import type { Materialized } from "./materialized";
import type { Grouped } from "./options";
import { erase, processorOf } from "./processors";
import { suppressProcessor } from "./suppress";
import type { Suppressed } from "./suppressed";
import { tableLookup, versionedLookup, type MaterializedTable } from "./table-lookup";
import { writeTableUpdate } from "./table-row";
import type { TableSource } from "./table-source";
import { tableTableJoin, type TableJoinKind } from "./table-table-join";
import { tableValueOp } from "./table-value-ops";
import { foreignKeyJoin } from "./foreign-key-join/join";
import { tableRepartitionMap } from "./table-repartition-map";

/** What the implementations of the overloaded joins accept; their overloads give the real types. */
type LooseFunction = (...args: never[]) => unknown;

/** What a windowed table knows of its windows: when each is final, and the serde of the key inside `Windowed`. */
export interface Windowing {
  readonly closeTime: (window: Window) => number;
  readonly innerKeySerde: Serde<unknown>;
}

/** How a table's node was made, besides its graph node: what later operators need to ask of it. */
export interface TableParts {
  /** Whether and how its node sends old values (read by its processor). */
  readonly oldValues: OldValues;
  /** Set for tables keyed by `Windowed<…>` from windowed aggregations. */
  readonly windowing?: Windowing;
  /** Set for tables read from a topic or a stream: they can be materialized in place. */
  readonly source?: TableSource;
  /**
   * Set for a versioned table (KIP-914): one materialized in a versioned store, or computed from
   * one without a store of its own between. Its updates may be out of order (`isLatest: false`);
   * it is materialized for joins in a versioned store with this history retention.
   */
  readonly historyRetentionMs?: number;
}

export class KTable<K, V, Tombstone extends null = never> {
  readonly oldValues: OldValues;
  readonly windowing: Windowing | undefined;
  /** Set for a versioned table; see `TableParts.historyRetentionMs`. */
  readonly historyRetentionMs: number | undefined;
  private readonly source: TableSource | undefined;

  /** Made by `StreamsBuilder.table` and aggregations; not meant to be called directly. */
  constructor(
    readonly graph: TopologyGraph,
    readonly node: GraphNode,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** The store holding this table, when it is materialized (aggregations always are). */
    readonly queryableStoreName: string | undefined,
    parts: TableParts,
  ) {
    this.oldValues = parts.oldValues;
    this.windowing = parts.windowing;
    this.source = parts.source;
    this.historyRetentionMs = parts.historyRetentionMs;
  }

  /**
   * A new value for every row, with the row's timestamp; tombstones stay tombstones. With
   * `materialized`, the result is kept in that store too (and can be queried).
   */
  mapValues<VOut>(mapper: (value: V, key: K) => VOut, materialized?: Materialized<K, VOut>): KTable<K, VOut, Tombstone> {
    return this.valueOp<VOut, Tombstone>("KTABLE-MAPVALUES", (key, value) => mapper(value, key), false, materialized);
  }

  /**
   * Keeps the rows that satisfy the predicate, with their timestamps; a row that does not is
   * forwarded as a tombstone (unless old values show it was not in the table either). With
   * `materialized`, the result is kept in that store too.
   */
  filter(predicate: Predicate<K, V>, materialized?: Materialized<K, V>): KTable<K, V, null> {
    return this.valueOp<V, null>("KTABLE-FILTER", (key, value) => (predicate(key, value) ? value : null), true, materialized);
  }

  /** Keeps the rows that do not satisfy the predicate; the others become tombstones. */
  filterNot(predicate: Predicate<K, V>, materialized?: Materialized<K, V>): KTable<K, V, null> {
    return this.filter((key, value) => !predicate(key, value), materialized);
  }

  /** The table's updates as a stream: one record per update (its new value), tombstones as null values. */
  toStream(): KStream<K, V | Tombstone> {
    const toValue = processorOf<K, Change<V>, K, V | null>((record, context) => context.forward({ ...record, value: record.value.newValue }));
    const node = this.graph.addProcessor("KTABLE-TOSTREAM", { parents: [this.node], supplier: erase(toValue), stores: [] });
    return new KStream<K, V | Tombstone>(this.graph, node, this.keySerde, serdeOrDefault(this.valueSerde) as Serde<V | Tombstone>, false);
  }

  /**
   * Regroups the rows by a new key (and value) for an aggregation of the table: each update
   * subtracts the row's old value from its old group and adds the new value to its new group,
   * through a repartition topic (Kafka's `KTable.groupBy`). A row the selector maps to no key
   * (a null pair or key) belongs to no group.
   */
  groupBy<KR, VR>(selector: (key: K, value: V) => KeyValue<KR | null, VR> | null, grouped: Grouped<KR, VR> = {}): KGroupedTable<KR, VR> {
    // Subtracting needs the old value of every update.
    this.oldValues.enable(true);
    const keySerde = this.graph.keySerdeOr(grouped.key, () =>
      missingKeySerdeMessage("KTable groupBy()", this.node.name, "groupBy(selector, { key: Serdes.string() })"),
    );
    const supplier = tableRepartitionMap(selector, keySerde);
    const node = this.graph.addProcessor("KTABLE-SELECT", { parents: [this.node], supplier, stores: [] });
    return new KGroupedTable<KR, VR>(this.graph, node, keySerde, serdeOrDefault(grouped.value), grouped.name);
  }

  /**
   * Holds back the table's updates in a change-logged buffer store: a windowed table's until each
   * window closes (`Suppressed.untilWindowCloses`, final results), any table's until a time limit
   * passed since a key's first held update (`Suppressed.untilTimeLimit`); see ./suppress.ts. The
   * result is read by joins as what it emitted (a store is added after it when one is needed).
   */
  suppress(suppressed: Suppressed): KTable<K, V, Tombstone> {
    const finalResults = suppressed.mode === "until-window-closes";
    if (this.historyRetentionMs !== undefined)
      throw new TopologyError("suppress is not supported for versioned tables: their out-of-order updates are not final");
    if (finalResults && !this.windowing)
      throw new TopologyError("suppress(Suppressed.untilWindowCloses()) needs a windowed table, from windowedBy(...) and an aggregation");
    const storeName = suppressed.name ?? this.graph.newName("KTABLE-SUPPRESS-STATE-STORE");
    const valueSerde = serdeOrDefault(this.valueSerde) as Serde<unknown>;
    const keySerde = (finalResults ? this.windowing!.innerKeySerde : serdeOrDefault(this.keySerde)) as Serde<unknown>;
    this.graph.addStore({ name: storeName, kind: "buffer", keySerde, valueSerde });
    const oldValues = new OldValues((force) => this.oldValues.enable(force));
    const supplier = suppressProcessor(
      finalResults ? { storeName, suppressed, closeTime: this.windowing!.closeTime, oldValues } : { storeName, suppressed, oldValues },
    );
    const node = this.graph.addProcessor("KTABLE-SUPPRESS", { parents: [this.node], supplier, stores: [storeName] });
    return new KTable<K, V, Tombstone>(
      this.graph,
      node,
      this.keySerde,
      this.valueSerde,
      undefined,
      this.windowing ? { oldValues, windowing: this.windowing } : { oldValues },
    );
  }

  /** Rows of both tables with the same key, joined; a row missing on either side has no result. */
  join<VO, VR, T extends null>(other: KTable<K, VO, T>, joiner: (value: V, other: VO) => VR, materialized?: Materialized<K, VR>): KTable<K, VR, null>;
  /**
   * Each row joined with the other table's row whose key `foreignKeyExtractor` takes from its
   * value (a foreign-key join, KIP-213); a row without a match has no result.
   */
  join<KO, VO, VR, T extends null>(
    other: KTable<KO, VO, T>,
    foreignKeyExtractor: (value: V) => KO | null,
    joiner: (value: V, other: VO) => VR,
    materialized?: Materialized<K, VR>,
  ): KTable<K, VR, null>;
  join(other: unknown, second: LooseFunction, third?: Materialized<K, unknown> | LooseFunction, fourth?: Materialized<K, unknown>): KTable<K, unknown, null> {
    if (typeof third === "function") return this.foreignKeyJoin(false, other, second, third, fourth);
    return this.tableJoin("inner", other as unknown as KTable<K, unknown, null>, second as unknown as (value: V | null, other: unknown) => unknown, third);
  }

  /** Every row of this table, joined with the other's row of the same key or null. */
  leftJoin<VO, VR, T extends null>(
    other: KTable<K, VO, T>,
    joiner: (value: V, other: VO | null) => VR,
    materialized?: Materialized<K, VR>,
  ): KTable<K, VR, null>;
  /** Every row of this table, joined with the other table's row whose key its value names, or null (a foreign-key join). */
  leftJoin<KO, VO, VR, T extends null>(
    other: KTable<KO, VO, T>,
    foreignKeyExtractor: (value: V) => KO | null,
    joiner: (value: V, other: VO | null) => VR,
    materialized?: Materialized<K, VR>,
  ): KTable<K, VR, null>;
  leftJoin(
    other: unknown,
    second: LooseFunction,
    third?: Materialized<K, unknown> | LooseFunction,
    fourth?: Materialized<K, unknown>,
  ): KTable<K, unknown, null> {
    if (typeof third === "function") return this.foreignKeyJoin(true, other, second, third, fourth);
    return this.tableJoin("left", other as unknown as KTable<K, unknown, null>, second as unknown as (value: V | null, other: unknown) => unknown, third);
  }

  /** Every row of either table, joined with the other's row of the same key or null. */
  outerJoin<VO, VR, T extends null>(
    other: KTable<K, VO, T>,
    joiner: (value: V | null, other: VO | null) => VR,
    materialized?: Materialized<K, VR>,
  ): KTable<K, VR, null> {
    return this.tableJoin("outer", other, joiner, materialized);
  }

  /**
   * The node whose output reflects a store holding this table, the store, and how to read a row
   * from it: the table's own store; for a table read from a topic or stream, its source
   * materialized in place; else a new store written by a node added after this one (joins read
   * tables from stores).
   */
  materialize(): MaterializedTable {
    const own = this.queryableStoreName ?? this.source?.store();
    if (own !== undefined) return this.materializedTable(this.node, own);
    // A versioned table's copy is versioned too, so that joins can read it as of a time.
    const { name, historyRetentionMs: retention } = materializeStore(this.graph, versioning(this), {
      generatedName: "KTABLE-MATERIALIZE-STATE-STORE",
      keySerde: () => this.keySerde,
      valueSerde: this.valueSerde,
    });
    // Writes the rows and passes each change on as it is: old values come from upstream.
    const supplier = processorOf<K, Change<V>, K, Change<V>>((record, context) => {
      writeTableUpdate(context, name, retention, { ...record, value: record.value.newValue }, false);
      context.forward(record);
    });
    const node = this.graph.addProcessor("KTABLE-MATERIALIZE", { parents: [this.node], supplier: erase(supplier), stores: [name] });
    return this.materializedTable(node, name);
  }

  private materializedTable(node: GraphNode, storeName: string): MaterializedTable {
    const lookup = tableLookup(this.graph.storeKind(storeName) ?? "key-value", storeName);
    const retention = this.graph.historyRetentionOf(storeName);
    if (retention === undefined) return { node, storeName, lookup };
    return { node, storeName, lookup, historyRetentionMs: retention, lookupAsOf: versionedLookup(storeName, retention) };
  }

  /** Asks this table's node to send old values (Kafka's `enableSendingOldValues`); see `OldValues`. */
  enableSendingOldValues(forceMaterialization: boolean): boolean {
    return this.oldValues.enable(forceMaterialization);
  }

  private foreignKeyJoin(
    leftJoin: boolean,
    other: unknown,
    extractor: LooseFunction,
    joiner: LooseFunction,
    materialized: Materialized<K, unknown> | undefined,
  ): KTable<K, unknown, null> {
    const result = materialized ?? {};
    const { output, keySerde, valueSerde } = foreignKeyJoin<K, V, unknown, unknown, unknown>(
      this,
      other as KTable<unknown, unknown, null>,
      extractor as unknown as (value: V) => unknown,
      joiner as unknown as (value: V, other: unknown) => unknown,
      leftJoin,
      result,
    );
    return new KTable<K, unknown, null>(this.graph, output.node, keySerde, valueSerde, result.storeName, {
      oldValues: output.oldValues,
      source: output,
      ...versioning(result),
    });
  }

  private tableJoin<VO, VR, T extends null>(
    kind: TableJoinKind,
    other: KTable<K, VO, T>,
    joiner: (value: V | null, other: VO | null) => VR,
    materialized?: Materialized<K, VR>,
  ): KTable<K, VR, null> {
    if (other.graph !== this.graph) throw new TopologyError("cannot join tables of different StreamsBuilders");
    // Outer sides need their old values, to drop deletes of rows that were not there (as Kafka).
    if (kind !== "inner") this.oldValues.enable(true);
    if (kind === "outer") other.oldValues.enable(true);
    const oldValues = new OldValues(() => {
      this.oldValues.enable(true);
      other.oldValues.enable(true);
      return true;
    });
    const node = tableTableJoin(kind, this.graph, this.materialize(), other.materialize(), joiner as (left: unknown, right: unknown) => unknown, oldValues);
    const joined = new KTable<K, VR, null>(this.graph, node, this.keySerde, materialized?.valueSerde, undefined, { oldValues, windowing: this.windowing });
    return materialized ? joined.materializedAs(materialized, "KTABLE-JOIN-STATE-STORE") : joined;
  }

  /** This table, also kept in the store `materialized` describes: a node after this one writes it. */
  private materializedAs(materialized: Materialized<K, V>, generatedName: string): KTable<K, V, Tombstone> {
    const store = materializeStore(this.graph, materialized, { generatedName, keySerde: () => this.keySerde, valueSerde: this.valueSerde });
    const { name, keySerde, valueSerde, historyRetentionMs: retention } = store;
    // With its own store, the node has its old values at hand.
    const oldValues = new OldValues();
    const supplier = processorOf<K, Change<V>, K, Change<V>>((record, context) => {
      const update = writeTableUpdate(context, name, retention, { ...record, value: record.value.newValue }, oldValues.sending);
      if (update !== undefined) context.forward({ ...record, value: update });
    });
    const node = this.graph.addProcessor("KTABLE-MATERIALIZE", { parents: [this.node], supplier: erase(supplier), stores: [name] });
    return new KTable<K, V, Tombstone>(this.graph, node, keySerde, valueSerde, name, { oldValues, windowing: this.windowing, ...versioning(store) });
  }

  private valueOp<VOut, TOut extends null>(
    prefix: string,
    compute: (key: K, value: V) => VOut | null,
    dropEmpty: boolean,
    materialized: Materialized<K, VOut> | undefined,
  ): KTable<K, VOut, TOut> {
    // A filter's values are its input's: their serde serves unless `materialized` names another.
    const inputValueSerde = dropEmpty ? (this.valueSerde as Serde<unknown> as Serde<VOut>) : undefined;
    const store =
      materialized &&
      materializeStore(this.graph, materialized, { generatedName: `${prefix}-STATE-STORE`, keySerde: () => this.keySerde, valueSerde: inputValueSerde });
    const { keySerde = this.keySerde, valueSerde = inputValueSerde, name: storeName } = store ?? {};
    // Kafka's filter asks its parent for old values, without forcing it to materialize.
    const initially = dropEmpty && this.oldValues.enable(false);
    const oldValues = new OldValues((force) => storeName !== undefined || this.oldValues.enable(force), initially);
    const supplier = tableValueOp<K, V, VOut>({
      compute,
      dropEmpty,
      storeName,
      oldValues,
      versionedInput: this.historyRetentionMs !== undefined,
      ...versioning(store ?? {}),
    });
    const node = this.graph.addProcessor(prefix, { parents: [this.node], supplier, stores: storeName === undefined ? [] : [storeName] });
    // Without a store of its own the result is as versioned as its input; with one, as its store.
    return new KTable<K, VOut, TOut>(this.graph, node, keySerde, valueSerde, storeName, {
      oldValues,
      windowing: this.windowing,
      ...versioning(store ?? this),
    });
  }
}
