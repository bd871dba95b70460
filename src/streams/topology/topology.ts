/**
 * A built topology: subtopologies with their topics, stores and processing nodes, every topic with
 * its partition count, and the task ids. Immutable; made by `StreamsBuilder.build`.
 */
import type { Serde } from "../serdes";
import { describeTopology } from "./describe";
import type { AnySupplier, StreamPartitioner } from "./graph";
import { formatTaskId } from "./task-id";

/** What to do with an input record whose key or value cannot be deserialized. */
export type DeserializationHandler =
  /** Throw `DeserializationError` out of `process()`: processing stops until someone intervenes. */
  | "fail"
  /** Count the record as skipped and go on. */
  | "skip"
  /** Send the raw record to this topic, with headers naming the error, count it and go on. */
  | { readonly deadLetterTopic: string };

export interface StoreDefinition {
  readonly name: string;
  readonly kind: "key-value";
  /** `<applicationId>-<store>-changelog`, with the partition count of the store's subtopology. */
  readonly changelogTopic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
}

export interface TopologySource {
  readonly kind: "source";
  readonly name: string;
  /** Real topic names (repartition topics resolved). */
  readonly topics: readonly string[];
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly parents: readonly string[];
  readonly children: readonly string[];
}

export interface TopologyProcessor {
  readonly kind: "processor";
  readonly name: string;
  readonly supplier: AnySupplier;
  readonly stores: readonly string[];
  readonly parents: readonly string[];
  readonly children: readonly string[];
}

export interface TopologySink {
  readonly kind: "sink";
  readonly name: string;
  readonly topic: string;
  /** The topic's partition count, handed to the partitioner. */
  readonly partitions: number;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly partitioner?: StreamPartitioner<unknown, unknown>;
  readonly parents: readonly string[];
  readonly children: readonly string[];
}

export type TopologyNode = TopologySource | TopologyProcessor | TopologySink;

export interface Subtopology {
  readonly id: number;
  /** Partitions of each of its source topics, hence its number of tasks. */
  readonly partitions: number;
  /** Every topic it reads, repartition topics included, in order of creation. */
  readonly sourceTopics: readonly string[];
  /** The repartition topics among `sourceTopics`. */
  readonly repartitionSourceTopics: readonly string[];
  /** Every topic its sinks write, repartition topics included. */
  readonly sinkTopics: readonly string[];
  readonly stores: readonly StoreDefinition[];
  /** Its nodes in creation order: every node comes after its parents. */
  readonly nodes: readonly TopologyNode[];
}

export class Topology {
  constructor(
    readonly applicationId: string,
    readonly subtopologies: readonly Subtopology[],
    private readonly allTopics: Readonly<Record<string, number>>,
    readonly deserializationHandler: DeserializationHandler,
  ) {}

  /** Every topic with its partition count: external, changelog and repartition topics. */
  topics(): Record<string, number> {
    return { ...this.allTopics };
  }

  /** `<subtopology>_<partition>` for every task, by subtopology then partition. */
  taskIds(): string[] {
    return this.subtopologies.flatMap((s) => Array.from({ length: s.partitions }, (_, p) => formatTaskId(s.id, p)));
  }

  subtopology(id: number): Subtopology | undefined {
    return this.subtopologies.find((s) => s.id === id);
  }

  /** The definition of a store, wherever it is. */
  store(name: string): StoreDefinition | undefined {
    return this.subtopologies.flatMap((s) => s.stores).find((s) => s.name === name);
  }

  /** A readable description, in the spirit of Kafka Streams' `Topology#describe`. */
  describe(): string {
    return describeTopology(this);
  }
}
