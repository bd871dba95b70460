/**
 * The logical graph the DSL records: source, processor and sink nodes with parent links, and the
 * state stores they use. Recording never fails; `buildTopology` validates the whole graph at once.
 * Repartition topics are recorded by their base name: their real name needs the applicationId.
 */
import type { ProcessorSupplier } from "../processor";
import type { StreamRecord } from "../record";
import type { Serde } from "../serdes";
import type { StoreKind } from "../state/store-kind";
import { MissingKeySerde } from "./missing-key-serde";

/**
 * Picks the partition of an output record; undefined leaves it to Kafka's default partitioner.
 * Several partitions send the record to each of them (Kafka's multicast, KIP-837); none drops it.
 */
export type StreamPartitioner<K, V> = (key: K, value: V, partitions: number) => number | readonly number[] | undefined;

/** A processor supplier with its types erased, as the graph keeps it. */
export type AnySupplier = ProcessorSupplier<unknown, unknown, unknown, unknown>;

interface NodeBase {
  /** Unique in the topology, Kafka style: `KSTREAM-FILTER-0000000001`. */
  readonly name: string;
  readonly parents: readonly GraphNode[];
}

export interface SourceNode extends NodeBase {
  readonly kind: "source";
  /** External topic names, or the base name of one repartition topic. */
  readonly topics: readonly string[];
  readonly repartition: boolean;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly timestampExtractor?: (record: StreamRecord<unknown, unknown>, partitionTime: number) => number;
  /**
   * The source of a global table: every task that joins the table reads all of the topic's
   * partitions into its own copy of the table (see `StreamsBuilder.globalTable`).
   */
  readonly global?: boolean;
}

export interface ProcessorNode extends NodeBase {
  readonly kind: "processor";
  readonly supplier: AnySupplier;
  readonly stores: readonly string[];
}

export interface SinkNode extends NodeBase {
  readonly kind: "sink";
  /** An external topic, or the base name of a repartition topic. */
  readonly topic: string;
  readonly repartition: boolean;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly partitioner?: StreamPartitioner<unknown, unknown>;
  /** A repartition topic's partition count when chosen (`KStream.repartition`); else it follows its readers and writer. */
  readonly partitions?: number;
}

export type GraphNode = SourceNode | ProcessorNode | SinkNode;

/** A store declared by an aggregation, a table, a join, `suppress` or `addStateStore`. */
export interface StoreSpec {
  readonly name: string;
  /** Default `"key-value"`. */
  readonly kind?: StoreKind;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** A global table's store: every subtopology that uses it holds a whole copy. */
  readonly global?: boolean;
  /**
   * A versioned table's store (`Stores.persistentVersionedKeyValueStore`): it holds the latest
   * rows, and its history lives in a companion store (`versionsStoreName`) that every processor
   * connected to it is connected to as well.
   */
  readonly historyRetentionMs?: number;
  /** Behind the task's record cache (see `StoreDefinition.caching`). */
  readonly caching?: boolean;
}

/** The companion store holding a versioned store's older versions. */
export function versionsStoreName(storeName: string): string {
  return `${storeName}-versions`;
}

type Without<T, Omitted extends keyof T> = Omit<T, Omitted | "kind" | "name">;

/** Collects nodes and stores in creation order; that order makes subtopology ids deterministic. */
export class TopologyGraph {
  readonly nodes: GraphNode[] = [];
  /** In declaration order, duplicates included (they are reported by the build). */
  readonly stores: StoreSpec[] = [];
  /** Key serdes the DSL could not know, for `build` to bind to the default or refuse (see ./missing-key-serde.ts). */
  readonly missingKeySerdes: MissingKeySerde[] = [];
  private counter = 0;

  /** `serde`, or when it is not known, a placeholder the build binds to `BuildOptions.defaultKeySerde` or refuses with `message`. */
  keySerdeOr<K>(serde: Serde<K> | undefined, message: () => string): Serde<K> {
    if (serde) return serde;
    const missing = new MissingKeySerde(message());
    this.missingKeySerdes.push(missing);
    return missing as Serde<K>;
  }

  /** A new node name: Kafka Streams' `<PREFIX>-<10-digit index>`, the index shared by all nodes. */
  newName(prefix: string): string {
    return `${prefix}-${String(this.counter++).padStart(10, "0")}`;
  }

  addSource(prefix: string, source: Without<SourceNode, "parents">): SourceNode {
    return this.add<SourceNode>({ kind: "source", name: this.newName(prefix), parents: [], ...source });
  }

  /** `name`: one taken earlier with `newName` (an operator whose topics are named after its processor). */
  addProcessor(prefix: string, processor: Without<ProcessorNode, never>, name = this.newName(prefix)): ProcessorNode {
    return this.add<ProcessorNode>({ kind: "processor", name, ...processor, stores: processor.stores.flatMap((store) => this.withCompanion(store)) });
  }

  addSink(prefix: string, sink: Without<SinkNode, never>): SinkNode {
    return this.add<SinkNode>({ kind: "sink", name: this.newName(prefix), ...sink });
  }

  addStore(store: StoreSpec): void {
    this.stores.push(store);
    if (store.historyRetentionMs !== undefined) {
      this.stores.push({ name: versionsStoreName(store.name), kind: "buffer", keySerde: store.keySerde, valueSerde: store.valueSerde });
    }
  }

  /** Whether a declared store is versioned. */
  isVersioned(name: string): boolean {
    return this.historyRetentionOf(name) !== undefined;
  }

  /** A versioned store's history retention; undefined for any other store. */
  historyRetentionOf(name: string): number | undefined {
    return this.stores.find((s) => s.name === name)?.historyRetentionMs;
  }

  /** A store's name, with its companion's when it is versioned. */
  private withCompanion(name: string): string[] {
    return this.isVersioned(name) ? [name, versionsStoreName(name)] : [name];
  }

  /**
   * Connects a store to a processor added earlier: a table is materialized in place once an
   * operator added after it needs its rows or old values (its processor finds the store by name
   * when records flow, after the build).
   */
  connectStore(node: ProcessorNode, storeName: string): void {
    for (const name of this.withCompanion(storeName)) if (!node.stores.includes(name)) (node.stores as string[]).push(name);
  }

  /** The kind of a declared store (the first declared under that name). */
  storeKind(name: string): StoreKind | undefined {
    const store = this.stores.find((s) => s.name === name);
    return store && (store.kind ?? "key-value");
  }

  private add<T extends GraphNode>(node: T): T {
    this.nodes.push(node);
    return node;
  }
}
