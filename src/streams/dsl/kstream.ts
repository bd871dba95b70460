/**
 * `KStream`: an unbounded stream of keyed records, and its operators (joins included). Every
 * operator adds a node to the builder's graph and returns a new stream. A stream remembers
 * whether its key may have changed since its source (`repartitionRequired`): grouping or joining
 * such a stream goes through a repartition topic, so that each key is processed by the one task
 * that owns it.
 */
import { TopologyError } from "../errors";
import type { ProcessorSupplier } from "../processor";
import type { KeyValue } from "../record";
import { serdeOrDefault, type Serde } from "../serdes";
import type { GraphNode, StreamPartitioner, TopologyGraph } from "../topology/graph";
import { BranchedKStream } from "./branched-kstream";
import { GlobalKTable } from "./global-ktable";
import { KGroupedStream } from "./kgrouped-stream";
import { KTable } from "./ktable";
import { versioning } from "./materialize";
import type { Materialized } from "./materialized";
import type { Grouped, Joined, Produced, Repartitioned, StreamJoined } from "./options";
import { erase, passThrough, processorOf, type RecordHandler } from "./processors";
import { repartitionThrough } from "./repartition";
import { streamGlobalTableJoin } from "./stream-global-join";
import { streamStreamJoin } from "./stream-stream-join";
import { streamTableJoin } from "./stream-table-join";
import { addTableSource } from "./table-source";
import { JoinWindows } from "./windows/join-windows";
import { missingKeySerdeMessage } from "../topology/missing-key-serde";

export type Predicate<K, V> = (key: K, value: V) => boolean;

/** What the implementations of `join` and `leftJoin` accept; their overloads give the real types. */
type JoinTarget<K> = KTable<K, unknown, null> | KTable<K, unknown> | KStream<K, unknown> | GlobalKTable<unknown, unknown>;
type LooseJoiner = (value: never, other: never) => unknown;
type JoinThird<K, V> = JoinWindows | Joined<K, V> | LooseJoiner;

export class KStream<K, V> {
  /** Made by `StreamsBuilder` and by operators; not meant to be called directly. */
  constructor(
    readonly graph: TopologyGraph,
    readonly node: GraphNode,
    /** The serdes known for this stream's keys and values, if any (used where none is given). */
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    readonly repartitionRequired: boolean,
  ) {}

  /** Keeps the records that satisfy the predicate. */
  filter(predicate: Predicate<K, V>): KStream<K, V> {
    return this.sameKey("KSTREAM-FILTER", this.valueSerde, (r, c) => predicate(r.key, r.value) && c.forward(r));
  }

  /** Drops the records that satisfy the predicate. */
  filterNot(predicate: Predicate<K, V>): KStream<K, V> {
    return this.sameKey("KSTREAM-FILTER", this.valueSerde, (r, c) => predicate(r.key, r.value) || c.forward(r));
  }

  /** A new key and value for every record. The key changes, so grouping afterwards repartitions. */
  map<KOut, VOut>(mapper: (key: K, value: V) => KeyValue<KOut, VOut>): KStream<KOut, VOut> {
    return this.newKey<KOut, VOut>("KSTREAM-MAP", (r, c) => c.forward({ ...r, ...mapper(r.key, r.value) }));
  }

  /** A new value for every record; the key stays, so no repartitioning. */
  mapValues<VOut>(mapper: (value: V, key: K) => VOut): KStream<K, VOut> {
    return this.sameKey<VOut>("KSTREAM-MAPVALUES", undefined, (r, c) => c.forward({ ...r, value: mapper(r.value, r.key) }));
  }

  /** Zero or more records for every record, with new keys. */
  flatMap<KOut, VOut>(mapper: (key: K, value: V) => Iterable<KeyValue<KOut, VOut>>): KStream<KOut, VOut> {
    return this.newKey<KOut, VOut>("KSTREAM-FLATMAP", (r, c) => {
      for (const out of mapper(r.key, r.value)) c.forward({ ...r, ...out });
    });
  }

  /** Zero or more values for every record, each with the record's key. */
  flatMapValues<VOut>(mapper: (value: V, key: K) => Iterable<VOut>): KStream<K, VOut> {
    return this.sameKey<VOut>("KSTREAM-FLATMAPVALUES", undefined, (r, c) => {
      for (const value of mapper(r.value, r.key)) c.forward({ ...r, value });
    });
  }

  /** A new key for every record, the value unchanged. */
  selectKey<KOut>(selector: (key: K, value: V) => KOut): KStream<KOut, V> {
    const next = this.newKey<KOut, V>("KSTREAM-KEY-SELECT", (r, c) => c.forward({ ...r, key: selector(r.key, r.value) }));
    return new KStream(this.graph, next.node, undefined, this.valueSerde, true);
  }

  /** Calls the action for every record and passes the record on (for logging, metrics). */
  peek(action: (key: K, value: V) => void): KStream<K, V> {
    return this.sameKey("KSTREAM-PEEK", this.valueSerde, (r, c) => {
      action(r.key, r.value);
      c.forward(r);
    });
  }

  /**
   * Splits the stream: each record goes to the first branch whose predicate it satisfies.
   * Branch names are `prefix` followed by the branch's name (or its position, from 1).
   */
  split<Prefix extends string = "">(prefix?: Prefix): BranchedKStream<K, V, Prefix> {
    return new BranchedKStream<K, V, Prefix>(this, prefix ?? ("" as Prefix));
  }

  /** The records of both streams, interleaved as they arrive. */
  merge(other: KStream<K, V>): KStream<K, V> {
    if (other.graph !== this.graph) throw new TopologyError("cannot merge streams of different StreamsBuilders");
    const node = this.graph.addProcessor("KSTREAM-MERGE", { parents: [this.node, other.node], supplier: passThrough, stores: [] });
    const same = <T>(a: T | undefined, b: T | undefined) => (a === b ? a : undefined);
    return new KStream(
      this.graph,
      node,
      same(this.keySerde, other.keySerde),
      same(this.valueSerde, other.valueSerde),
      this.repartitionRequired || other.repartitionRequired,
    );
  }

  /** Writes every record to a topic. A null value is written as a tombstone. */
  to(topic: string, produced: Produced<K, V> = {}): void {
    const { partitioner } = produced;
    this.graph.addSink("KSTREAM-SINK", {
      parents: [this.node],
      topic,
      repartition: false,
      keySerde: serdeOrDefault(produced.key ?? this.keySerde) as Serde<unknown>,
      valueSerde: serdeOrDefault(produced.value ?? this.valueSerde) as Serde<unknown>,
      ...(partitioner ? { partitioner: partitioner as unknown as StreamPartitioner<unknown, unknown> } : {}),
    });
  }

  /**
   * Runs a processor of the Processor API, connected to the named stores. What it forwards may
   * have any key, so grouping afterwards repartitions.
   */
  process<KOut, VOut>(supplier: ProcessorSupplier<K, V, KOut, VOut>, ...storeNames: string[]): KStream<KOut, VOut> {
    const node = this.graph.addProcessor("KSTREAM-PROCESSOR", { parents: [this.node], supplier: erase(supplier), stores: storeNames });
    return new KStream<KOut, VOut>(this.graph, node, undefined, undefined, true);
  }

  /** Joins each record with the table's row of its key; records without a row produce nothing. */
  join<VT, VR, T extends null>(table: KTable<K, VT, T>, joiner: (value: V, row: VT) => VR, joined?: Joined<K, V>): KStream<K, VR>;
  /** Joins records of both streams with the same key whose timestamps differ by at most the windows' time difference. */
  join<VO, VR>(other: KStream<K, VO>, joiner: (value: V, otherValue: VO) => VR, windows: JoinWindows, joined?: StreamJoined<K, V, VO>): KStream<K, VR>;
  /** Joins each record with the global table's row of the key `keySelector` computes from it; records without a row produce nothing. */
  join<KG, VG, VR>(table: GlobalKTable<KG, VG>, keySelector: (key: K, value: V) => KG | null, joiner: (value: V, row: VG) => VR): KStream<K, VR>;
  join(other: JoinTarget<K>, joiner: LooseJoiner, third?: JoinThird<K, V>, joined?: StreamJoined<K, V, unknown>): KStream<K, unknown> {
    return this.joinWith("inner", other, joiner, third, joined);
  }

  /** Joins each record with the table's row of its key, or null. */
  leftJoin<VT, VR, T extends null>(table: KTable<K, VT, T>, joiner: (value: V, row: VT | null) => VR, joined?: Joined<K, V>): KStream<K, VR>;
  /** Like `join`, and each record that found no partner in time is joined with null once it no longer can. */
  leftJoin<VO, VR>(
    other: KStream<K, VO>,
    joiner: (value: V, otherValue: VO | null) => VR,
    windows: JoinWindows,
    joined?: StreamJoined<K, V, VO>,
  ): KStream<K, VR>;
  /** Joins each record with the global table's row of the key `keySelector` computes from it, or null. */
  leftJoin<KG, VG, VR>(table: GlobalKTable<KG, VG>, keySelector: (key: K, value: V) => KG | null, joiner: (value: V, row: VG | null) => VR): KStream<K, VR>;
  leftJoin(other: JoinTarget<K>, joiner: LooseJoiner, third?: JoinThird<K, V>, joined?: StreamJoined<K, V, unknown>): KStream<K, unknown> {
    return this.joinWith("left", other, joiner, third, joined);
  }

  /** Like `leftJoin`, for the records of both streams. */
  outerJoin<VO, VR>(
    other: KStream<K, VO>,
    joiner: (value: V | null, otherValue: VO | null) => VR,
    windows: JoinWindows,
    joined?: StreamJoined<K, V, VO>,
  ): KStream<K, VR> {
    return streamStreamJoin("outer", this, other, joiner, windows, joined ?? {});
  }

  /**
   * The stream read as a table: each record is its key's new value, a null value deletes the key
   * (Kafka's `toTable`). A stream whose key may have changed goes through a repartition topic named
   * after the operator first. With `Materialized.as(name)` the table is kept in that store and can
   * be queried; otherwise it gets a store only if a later operator needs one.
   */
  toTable(materialized: Materialized<K, V> = {}): KTable<K, V> {
    const { graph } = this;
    const name = graph.newName("KSTREAM-TOTABLE");
    const laterStoreName = graph.newName("KSTREAM-TOTABLE-STATE-STORE");
    const keySerde = this.keySerdeOr(materialized.keySerde, "toTable()", 'toTable(Materialized.as("name", { key: Serdes.string() }))');
    const valueSerde = materialized.valueSerde ?? this.valueSerde;
    const parent = this.repartitionRequired ? repartitionThrough(this, name, keySerde, serdeOrDefault(valueSerde)) : this.node;
    const source = addTableSource(graph, parent, {
      prefix: "KSTREAM-TOTABLE",
      name,
      storeName: materialized.storeName,
      ...versioning(materialized),
      laterStoreName: () => laterStoreName,
      keySerde: keySerde as Serde<unknown>,
      valueSerde: serdeOrDefault(valueSerde) as Serde<unknown>,
    });
    return new KTable<K, V>(graph, source.node, keySerde, valueSerde, materialized.storeName, {
      oldValues: source.oldValues,
      source,
      ...versioning(materialized),
    });
  }

  /**
   * Writes the stream to a repartition topic and reads it back (Kafka's `repartition`), which starts
   * a new subtopology: with a chosen partition count (its tasks scale apart from the input's) and
   * partitioner, or Kafka's defaults. Records without a key go through too. Grouping the result
   * by key needs no further repartition.
   */
  repartition(repartitioned: Repartitioned<K, V> = {}): KStream<K, V> {
    const { graph } = this;
    const { numberOfPartitions: partitions, partitioner } = repartitioned;
    if (partitions !== undefined && !(Number.isSafeInteger(partitions) && partitions >= 1)) {
      throw new TopologyError(`numberOfPartitions must be a positive integer, got ${partitions}`);
    }
    const name = repartitioned.name ?? graph.newName("KSTREAM-REPARTITION");
    const keySerde = this.keySerdeOr(repartitioned.key, "repartition()", "repartition({ key: Serdes.string() })");
    const valueSerde = repartitioned.value ?? this.valueSerde;
    const source = repartitionThrough(this, name, keySerde, serdeOrDefault(valueSerde), true, {
      ...(partitions === undefined ? {} : { partitions }),
      ...(partitioner ? { partitioner } : {}),
    });
    return new KStream<K, V>(graph, source, keySerde, valueSerde, false);
  }

  /**
   * Groups by the current key, for an aggregation. After a key change the grouping needs a key
   * serde (`Grouped`, the aggregation's `Materialized`, or `BuildOptions.defaultKeySerde`).
   */
  groupByKey(grouped: Grouped<K, V> = {}): KGroupedStream<K, V> {
    return new KGroupedStream(this, grouped.key ?? this.keySerde, grouped.value ?? this.valueSerde, grouped.name);
  }

  /** Groups by a key computed from each record; always repartitions, so it needs a key serde as `groupByKey` does. */
  groupBy<KOut>(selector: (key: K, value: V) => KOut, grouped: Grouped<KOut, V> = {}): KGroupedStream<KOut, V> {
    const selected = this.selectKey(selector);
    return new KGroupedStream(selected, grouped.key, grouped.value ?? this.valueSerde, grouped.name, "groupBy");
  }

  /**
   * The key serde an operation uses: the one it is given, else the one this stream knows, else
   * (after a key change) a placeholder the build binds to the default or refuses, naming `fix`.
   */
  keySerdeOr(given: Serde<K> | undefined, operation: string, fix: string): Serde<K> {
    return this.graph.keySerdeOr(given ?? this.keySerde, () => missingKeySerdeMessage(operation, this.node.name, fix));
  }

  private joinWith(
    kind: "inner" | "left",
    other: JoinTarget<K>,
    joiner: LooseJoiner,
    third?: JoinThird<K, V>,
    joined?: StreamJoined<K, V, unknown>,
  ): KStream<K, unknown> {
    if (other instanceof GlobalKTable) {
      if (typeof third !== "function") throw new TopologyError("a stream-global table join needs a key selector and a joiner");
      return streamGlobalTableJoin<K, V, unknown, unknown, unknown>(
        kind,
        this,
        other,
        joiner as (key: K, value: V) => unknown,
        third as (value: V, row: unknown) => unknown,
      );
    }
    if (typeof third === "function") throw new TopologyError("a key selector is for joins with a global table");
    if (other instanceof KStream) {
      if (!(third instanceof JoinWindows)) throw new TopologyError("a stream-stream join needs JoinWindows");
      return streamStreamJoin<K, V, unknown, unknown>(kind, this, other, joiner as (value: V | null, other: unknown) => unknown, third, joined ?? {});
    }
    return streamTableJoin<K, V, unknown, unknown, null>(
      kind,
      this,
      other as KTable<K, unknown, null>,
      joiner as (value: V, row: unknown) => unknown,
      (third ?? {}) as Joined<K, V>,
    );
  }

  private sameKey<VOut>(prefix: string, valueSerde: Serde<VOut> | undefined, body: RecordHandler<K, V, K, VOut>): KStream<K, VOut> {
    const node = this.graph.addProcessor(prefix, { parents: [this.node], supplier: erase(processorOf(body)), stores: [] });
    return new KStream(this.graph, node, this.keySerde, valueSerde, this.repartitionRequired);
  }

  private newKey<KOut, VOut>(prefix: string, body: RecordHandler<K, V, KOut, VOut>): KStream<KOut, VOut> {
    const node = this.graph.addProcessor(prefix, { parents: [this.node], supplier: erase(processorOf(body)), stores: [] });
    return new KStream<KOut, VOut>(this.graph, node, undefined, undefined, true);
  }
}
