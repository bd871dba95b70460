/**
 * `StreamsBuilder`: where a topology is written. Sources, tables and stores are declared here;
 * operators on the returned streams add the rest; `build` validates and returns the `Topology`.
 */
import { TopologyError } from "../errors";
import { serdeOrDefault, type Serde } from "../serdes";
import { buildTopology, type BuildOptions } from "../topology/build";
import { TopologyGraph } from "../topology/graph";
import type { TimestampExtractor, Topology } from "../topology/topology";
import { KStream } from "./kstream";
import { KTable } from "./ktable";
import { materializeStore, versioning } from "./materialize";
import type { Materialized } from "./materialized";
import type { Consumed } from "./options";
import { GlobalKTable } from "./global-ktable";
import { erase, keyValueStoreOf, processorOf } from "./processors";
import { writeRow } from "./table-row";
import { addTableSource } from "./table-source";

export class StreamsBuilder {
  private readonly graph = new TopologyGraph();

  /** A stream of one or more topics (a record goes wherever its topic's records go). */
  stream<K, V>(topics: string | readonly string[], consumed: Consumed<K, V> = {}): KStream<K, V> {
    const keySerde = serdeOrDefault(consumed.key);
    const valueSerde = serdeOrDefault(consumed.value);
    const { timestampExtractor } = consumed;
    const node = this.graph.addSource("KSTREAM-SOURCE", {
      topics: typeof topics === "string" ? [topics] : [...topics],
      repartition: false,
      keySerde: keySerde as Serde<unknown>,
      valueSerde: valueSerde as Serde<unknown>,
      ...(timestampExtractor ? { timestampExtractor: timestampExtractor as TimestampExtractor<unknown, unknown> } : {}),
    });
    return new KStream<K, V>(this.graph, node, keySerde, valueSerde, false);
  }

  /**
   * A table of a topic: each record is the new value of its key (stamped with the record's
   * timestamp). With `materialized`, the rows are kept in that store (change-logged like any
   * store) and can be queried. A record without a key is no row: it is dropped and counted, as
   * Kafka's `KTableSource` drops it.
   */
  table<K, V>(topic: string, consumed: Consumed<K, V> = {}, materialized?: Materialized<K, V>): KTable<K, V> {
    const source = this.stream(topic, consumed);
    const keySerde = materialized?.keySerde ?? source.keySerde!;
    const valueSerde = materialized?.valueSerde ?? source.valueSerde!;
    const storeName = materialized ? (materialized.storeName ?? this.graph.newName("KTABLE-SOURCE-STATE-STORE")) : undefined;
    const table = addTableSource(this.graph, source.node, {
      prefix: "KTABLE-SOURCE",
      storeName,
      ...versioning(materialized ?? {}),
      laterStoreName: () => this.graph.newName("KTABLE-SOURCE-STATE-STORE"),
      keySerde: keySerde as Serde<unknown>,
      valueSerde: valueSerde as Serde<unknown>,
    });
    return new KTable<K, V>(this.graph, table.node, keySerde, valueSerde, storeName, {
      oldValues: table.oldValues,
      source: table,
      ...versioning(materialized ?? {}),
    });
  }

  /**
   * A global table of a topic (Kafka's `globalTable`): every task that joins it reads all of the
   * topic's partitions into its own copy, kept in the store `materialized` names (default
   * generated), which can be queried by key. Join it with `KStream.join(table, keySelector, joiner)`.
   */
  globalTable<K, V>(topic: string, consumed: Consumed<K, V> = {}, materialized: Materialized<K, V> = {}): GlobalKTable<K, V> {
    if (materialized.historyRetentionMs !== undefined) throw new TopologyError(`global table ${topic}: a global table's store cannot be versioned`);
    const source = this.graph.addSource("KSTREAM-SOURCE", {
      topics: [topic],
      repartition: false,
      keySerde: serdeOrDefault(consumed.key) as Serde<unknown>,
      valueSerde: serdeOrDefault(consumed.value) as Serde<unknown>,
      global: true,
    });
    const store = materializeStore(this.graph, materialized, {
      generatedName: `${topic}-STATE-STORE`,
      keySerde: () => serdeOrDefault(consumed.key),
      valueSerde: serdeOrDefault(consumed.value),
      global: true,
    });
    const { name: storeName, keySerde, valueSerde } = store;
    const supplier = processorOf<K, V | null, never, never>((record, context) => {
      if (record.key === null) return context.dropRecord("null key in a global table");
      writeRow(keyValueStoreOf<K, V>(context, storeName), record);
    });
    const node = this.graph.addProcessor("KTABLE-SOURCE", { parents: [source], supplier: erase(supplier), stores: [storeName] });
    return new GlobalKTable<K, V>(this.graph, node, keySerde, valueSerde, storeName);
  }

  /** Declares a key-value store for processors of the Processor API (`KStream.process`). */
  addStateStore<K, V>(name: string, serdes: { key?: Serde<K>; value?: Serde<V> } = {}): this {
    this.graph.addStore({ name, keySerde: serdeOrDefault(serdes.key) as Serde<unknown>, valueSerde: serdeOrDefault(serdes.value) as Serde<unknown> });
    return this;
  }

  /**
   * Declares a window store for processors of the Processor API (`ProcessorContext.getWindowStore`).
   * Nothing expires by itself: the processor deletes what it no longer needs.
   */
  addWindowStore<K, V>(name: string, serdes: { key?: Serde<K>; value?: Serde<V> } = {}): this {
    this.graph.addStore({
      name,
      kind: "window",
      keySerde: serdeOrDefault(serdes.key) as Serde<unknown>,
      valueSerde: serdeOrDefault(serdes.value) as Serde<unknown>,
    });
    return this;
  }

  /** Declares a session store for processors of the Processor API (`ProcessorContext.getSessionStore`). */
  addSessionStore<K, V>(name: string, serdes: { key?: Serde<K>; value?: Serde<V> } = {}): this {
    this.graph.addStore({
      name,
      kind: "session",
      keySerde: serdeOrDefault(serdes.key) as Serde<unknown>,
      valueSerde: serdeOrDefault(serdes.value) as Serde<unknown>,
    });
    return this;
  }

  /** Validates the topology and fixes its subtopologies, topics and tasks. Throws `TopologyError`. */
  build(options: BuildOptions): Topology {
    return buildTopology(this.graph, options);
  }
}
