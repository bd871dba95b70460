/**
 * Edge Streams' platform-independent streams layer: the topology DSL (Kafka Streams names), the
 * Processor API, serdes, state store interfaces and the synchronous task runtime.
 */
export { DeserializationError, TopologyError, type RecordOrigin } from "./errors";
export { Serdes, type Serde } from "./serdes";
export type { Header, KeyValue, RecordMetadata, StreamRecord } from "./record";
export type { Processor, ProcessorContext, ProcessorSupplier } from "./processor";

export { StreamsBuilder } from "./dsl/streams-builder";
export { KStream, type Predicate } from "./dsl/kstream";
export { BranchedKStream, type Branches } from "./dsl/branched-kstream";
export { KGroupedStream } from "./dsl/kgrouped-stream";
export { KTable } from "./dsl/ktable";
export { Materialized } from "./dsl/materialized";
export type { Consumed, Grouped, Produced, StreamPartitioner } from "./dsl/options";

export { Topology } from "./topology/topology";
export type { DeserializationHandler, StoreDefinition, Subtopology, TopologyNode, TopologySink, TopologySource, TopologyProcessor } from "./topology/topology";
export { changelogTopicName, repartitionTopicName, type BuildOptions } from "./topology/build";
export { formatTaskId, parseTaskId, type TaskCoordinates } from "./topology/task-id";

export { compareKeys, type KeyValueStore, type RawKeyValueStore, type StoreBackend } from "./state/key-value-store";
export { InMemoryKeyValueStore, InMemoryStoreBackend } from "./state/in-memory";
export { TypedKeyValueStore } from "./state/typed-store";

export { createTaskProcessor } from "./runtime/task-processor";
export type { InputRecord, OutgoingRecord, RecordSink, TaskMetrics, TaskProcessor, TaskProcessorDeps } from "./runtime/types";
export { DEAD_LETTER_HEADERS } from "./runtime/deserialization";
export { POSITION_HEADER, positionFromHeaders } from "./runtime/position-header";

export { TopologyTestDriver, type DriverRecord, type PipeOptions } from "./testing/topology-test-driver";
