/**
 * A built topology: subtopologies with their topics, stores and processing nodes, every topic with
 * its partition count, and the task ids. Immutable; made by `StreamsBuilder.build`.
 */
import type { TopicSpec } from "../../log/topics";
import type { DeserializationHandler, ProcessingHandler, ProductionHandler } from "../error-handlers";
import type { StreamRecord } from "../record";
import type { Serde } from "../serdes";
import { describeTopology } from "./describe";
import type { StoreKind } from "../state/store-kind";
import type { AnySupplier, StreamPartitioner } from "./graph";
import { formatTaskId } from "./task-id";

export type { StoreKind };

export type { DeserializationHandler, ErrorHandler, ProcessingHandler, ProductionHandler } from "../error-handlers";

/**
 * What the task's Durable Object does with an error that escapes `process()` or `punctuate()`
 * (the call's storage transaction is always rolled back first). Kafka Streams'
 * `StreamsUncaughtExceptionHandler` answers, mapped to tasks that are Durable Objects:
 * - `"fail"` ≈ `SHUTDOWN_CLIENT` (Kafka's default): the task stops and is marked failed with the
 *   error; it stays stopped until an operator clears the failure. Other tasks go on (a task
 *   object is the unit that fails here, as a client is in Kafka).
 * - `"retry"` ≈ `REPLACE_THREAD`: the task processor is discarded and recreated, and the same
 *   input is processed again from the last commit after a back-off. Right for transient
 *   failures; a record that always fails is retried forever, as in Kafka.
 * - `"shutdown-application"` ≈ `SHUTDOWN_APPLICATION`: every task of the application stops
 *   (the coordinator marks them all failed).
 */
export type UncaughtErrorPolicy = "fail" | "retry" | "shutdown-application";

/**
 * A fixed policy, or a function choosing one per error (as Kafka's handler is): say `"retry"`
 * for a timeout, `"fail"` for everything else. A function that throws chooses `"fail"`.
 */
export type UncaughtErrorHandler = UncaughtErrorPolicy | ((error: unknown) => UncaughtErrorPolicy);

/** The topology's error handlers and its dead letter topic (see `BuildOptions`). */
export interface ErrorHandlers {
  readonly processing: ProcessingHandler;
  readonly production: ProductionHandler;
  readonly uncaught: UncaughtErrorHandler;
  /** Kafka's `errors.dead.letter.queue.topic.name`: where the built-in `"continue"` handlers send what fails. */
  readonly deadLetterQueueTopic?: string;
}

/**
 * The time of an input record (event time), from the deserialized record; the input record's own
 * timestamp is `record.timestamp`. `partitionTime` is the largest time extracted so far from the
 * record's partition, -1 before the first (Kafka's partition time; it survives a restart of the
 * task), what an extractor can fall back on for a record without a usable time. A result that is
 * not a non-negative safe integer, or a throw, is a processing error (`ErrorHandler`).
 */
export type TimestampExtractor<K, V> = (record: StreamRecord<K, V>, partitionTime: number) => number;

export interface StoreDefinition {
  readonly name: string;
  readonly kind: StoreKind;
  /** `<applicationId>-<store>-changelog`, with the partition count of the store's subtopology. */
  readonly changelogTopic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** A global table's store: every task of the subtopology holds the whole table. */
  readonly global?: boolean;
  /** Behind the task's record cache (`Materialized.withCachingEnabled`): updates reach the changelog and downstream at commits. */
  readonly caching?: boolean;
}

export interface TopologySource {
  readonly kind: "source";
  readonly name: string;
  /** Real topic names (repartition topics resolved). */
  readonly topics: readonly string[];
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** The record's time; without one, the input record's timestamp. */
  readonly timestampExtractor?: TimestampExtractor<unknown, unknown>;
  /** A global table's source: the task reads every partition of its topic. */
  readonly global?: boolean;
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
  /**
   * Topics of global tables its tasks join: each task reads every partition of them (into its own
   * copy of the table). Not in `sourceTopics`, and not co-partitioned with them.
   */
  readonly globalSourceTopics: readonly string[];
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
    private readonly allTopics: Readonly<Record<string, TopicSpec>>,
    readonly deserializationHandler: DeserializationHandler,
    readonly errorHandlers: ErrorHandlers = { processing: "fail", production: "fail", uncaught: "fail" },
  ) {}

  /**
   * The topics dead letters may go to, as far as the topology says (a handler function may name
   * any other declared topic): its `deadLetterQueueTopic` and the handlers' `{ deadLetterTopic }`.
   * Only the application writes them.
   */
  deadLetterTopics(): string[] {
    const { processing, production, deadLetterQueueTopic } = this.errorHandlers;
    const named = [this.deserializationHandler, processing, production].flatMap((h) => (typeof h === "object" ? [h.deadLetterTopic] : []));
    return [...new Set([...(deadLetterQueueTopic === undefined ? [] : [deadLetterQueueTopic]), ...named])];
  }

  /** What the task's Durable Object does with this error, escaped from `process()` or `punctuate()`; see `UncaughtErrorPolicy`. */
  uncaughtErrorPolicy(error: unknown): UncaughtErrorPolicy {
    const handler = this.errorHandlers.uncaught;
    if (typeof handler !== "function") return handler;
    try {
      const policy = handler(error);
      return policy === "retry" || policy === "shutdown-application" ? policy : "fail";
    } catch {
      return "fail";
    }
  }

  /** Every topic with its partition count: external, changelog and repartition topics. */
  topics(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.allTopics).map(([topic, spec]) => [topic, spec.partitions]));
  }

  /** Every topic with its partition count and configuration (see `BuildOptions.topicConfigs`). */
  topicSpecs(): Record<string, TopicSpec> {
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
