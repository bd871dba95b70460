/**
 * `edge-streams`: the library a Worker depends on. The topology DSL (Kafka Streams' names:
 * StreamsBuilder, serdes, windows, Materialized, the Processor API, TopologyTestDriver), and
 * `defineEdgeStreams`, which turns a topology into the Worker's fetch handler and its Durable
 * Object classes. Tests that run the real objects in workerd use `edge-streams/testing`.
 */
export * from "../src/streams/index";
export { defineEdgeStreams, type ApplicationSource, type EdgeStreams, type EdgeStreamsObjectClass } from "./edge-streams";
export { ConfigError, intVar } from "../src/config";
export { MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES } from "../src/log/records";
export { Application, type ApplicationOptions } from "../src/application";
export type { RestoreListener, StandbyUpdateListener } from "../src/streams/restore-listeners";
export type { EdgeStreamsEnv } from "../platform/bindings";
export type { Config, ConfigVars } from "../src/config";
export type { ApiEnv } from "./api/context";
export type { Host } from "../platform/host";
export type { TopicPartition, LogRecord } from "../src/log/types";
export type { TaskObject } from "../durable-objects/task-object";
export type { Coordinator } from "../durable-objects/coordinator";
export type { RestoreWorker } from "../durable-objects/restore-worker";
export type { LogPartition } from "../durable-objects/log-partition";
export type { ConsumerGroup } from "../durable-objects/consumer-group";
