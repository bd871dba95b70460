/**
 * `edge-streams`: the library a Worker depends on. The topology DSL (Kafka Streams' names:
 * StreamsBuilder, serdes, windows, Materialized, the Processor API, TopologyTestDriver), and
 * `defineEdgeStreams`, which turns a topology into the Worker's fetch handler and its Durable
 * Object classes. Tests that run the real objects in workerd use `edge-streams/testing`.
 */
export * from "./topology";
export { defineEdgeStreams, type ApplicationSource, type EdgeStreams, type EdgeStreamsObjectClass, type EdgeStreamsOptions } from "./edge-streams";
export type { QueueMessage, QueueSource } from "../src/connectors/queue-source";
export type { QueueSinkDefinition, SinkDefinition, WebhookSinkDefinition } from "../src/connectors/sink-config";
export type { SinkRecord } from "../src/connectors/sink";
export { SIGNATURE_HEADER, verifyWebhookSignature } from "../src/connectors/webhook-signature";
export type { EdgeStreamsEnv } from "../platform/bindings";
export type { ApiEnv } from "./api/context";
export type { Host } from "../platform/host";
export type { TaskObject } from "../durable-objects/task-object";
export type { Coordinator } from "../durable-objects/coordinator";
export type { RestoreWorker } from "../durable-objects/restore-worker";
export type { SubscriptionHub } from "../durable-objects/subscription-hub";
export type { LogPartition } from "../durable-objects/log-partition";
export type { ConsumerGroup } from "../durable-objects/consumer-group";
