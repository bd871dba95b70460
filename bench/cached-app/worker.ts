/**
 * The example application with its `totals` store behind the record cache (Kafka's default for a
 * topology of one's own), for the bench's `process` scenario: the same topology, names, topics and
 * dead-letter topic as examples/orders-totals, caching on. Not an example: the example keeps
 * `totals` uncached, as its HTTP contract promises every update on the changelog and output topic.
 */
import { defineEdgeStreams } from "edge-streams";
import { DEAD_LETTER_TOPIC } from "../../examples/orders-totals/app";
import { DEFAULT_PARTITIONS, ordersTotalsTopology } from "../../examples/orders-totals/topology";

const streams = defineEdgeStreams(ordersTotalsTopology({ deadLetterQueueTopic: DEAD_LETTER_TOPIC }, DEFAULT_PARTITIONS, { caching: true }));

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}
export class SubscriptionHub extends streams.SubscriptionHub {}

export default streams;
