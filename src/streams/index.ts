/**
 * Edge Streams' platform-independent streams layer: the topology DSL (Kafka Streams names), the
 * Processor API, serdes, state store interfaces and the synchronous task runtime.
 */
export { DeserializationError, ProcessingError, ProductionError, TopologyError, type RecordOrigin } from "./errors";
export { Serdes, type Serde } from "./serdes";
export type { SchemaOutput, StandardSchemaV1 } from "./standard-schema";
export type { Header, KeyValue, RecordMetadata, StreamRecord } from "./record";
export type { Cancellable, Processor, ProcessorContext, ProcessorSupplier, Punctuator, PunctuationType } from "./processor";
export { windowedSerde, type TimestampedWindowedValue, type Window, type Windowed, type WindowedValue } from "./windowed";

export { StreamsBuilder } from "./dsl/streams-builder";
export { KStream, type Predicate } from "./dsl/kstream";
export { BranchedKStream, type Branches } from "./dsl/branched-kstream";
export { KGroupedStream } from "./dsl/kgrouped-stream";
export { CogroupedKStream, SessionWindowedCogroupedKStream, TimeWindowedCogroupedKStream } from "./dsl/cogrouped-kstream";
export { KTable } from "./dsl/ktable";
export { KGroupedTable } from "./dsl/kgrouped-table";
export { GlobalKTable } from "./dsl/global-ktable";
export type { Change } from "./dsl/change";
export { Materialized, type MaterializedOptions } from "./dsl/materialized";
export { Stores, type VersionedStoreSupplier } from "./dsl/stores";
export type { Consumed, Grouped, Joined, Produced, Repartitioned, StreamJoined, StreamPartitioner } from "./dsl/options";
export { JoinWindows } from "./dsl/windows/join-windows";
export { SessionWindows } from "./dsl/windows/session-windows";
export { SlidingWindows } from "./dsl/windows/sliding-windows";
export { TimeWindows } from "./dsl/windows/time-windows";
export { TimeWindowedKStream } from "./dsl/time-windowed-kstream";
export { SessionWindowedKStream } from "./dsl/session-windowed-kstream";
export { BufferConfig, EagerBufferConfig, StrictBufferConfig, Suppressed, type BufferFullStrategy } from "./dsl/suppressed";
export { EmitStrategy } from "./dsl/emit-strategy";

export { Topology } from "./topology/topology";
export type {
  DeserializationHandler,
  ErrorHandler,
  ErrorHandlerContext,
  ErrorHandlerFunction,
  ErrorHandlerResponse,
  ProcessingHandler,
  ProductionHandler,
  ProductionRecord,
} from "./error-handlers";
export type {
  ErrorHandlers,
  StoreDefinition,
  StoreKind,
  Subtopology,
  TimestampExtractor,
  TopologyNode,
  TopologySink,
  TopologySource,
  TopologyProcessor,
  UncaughtErrorPolicy,
  UncaughtErrorHandler,
} from "./topology/topology";
export { changelogTopicName, repartitionTopicName, type BuildOptions } from "./topology/build";
export { RefusedRecord, type Refusal } from "./topology/input-encoding";
export { formatTaskId, parseTaskId, type TaskCoordinates } from "./topology/task-id";

export {
  compareKeys,
  NO_TIMESTAMP,
  type KeyValueStore,
  type RawKeyValueStore,
  type StoreBackend,
  type TimestampedKeyValue,
  type ValueAndTimestamp,
} from "./state/key-value-store";
export { InMemoryKeyValueStore, InMemoryStoreBackend } from "./state/in-memory";
export { TypedKeyValueStore } from "./state/typed-store";
export { fetchWindows, type WindowStore } from "./state/window-store";
export { fetchSessions, type SessionStore } from "./state/session-store";
export { PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedKeyValueStore, type VersionedRecord } from "./state/versioned-store";

export { createTaskProcessor } from "./runtime/task-processor";
export type { InputRecord, OutgoingRecord, RecordSink, TaskEventMetrics, TaskMetrics, TaskProcessor, TaskProcessorDeps } from "./runtime/types";
export { DEAD_LETTER_BOUNDS, DEAD_LETTER_HEADERS } from "./runtime/dead-letter";
export { POSITION_HEADER, positionFromHeaders } from "./runtime/position-header";

export { TopologyTestDriver, type DriverRecord, type PipeOptions } from "./testing/topology-test-driver";
