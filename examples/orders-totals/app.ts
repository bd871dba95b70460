/**
 * The default example's application: orders → totals, with orders that fail (unreadable, or an
 * aggregation that throws) sent to a dead-letter topic, built from the environment (its
 * `PARTITIONS` var). worker.ts exports what
 * the Worker needs of it; tests drive it from here.
 */
import { defineEdgeStreams } from "edge-streams";
import { ordersTotalsTopology, partitionsOf } from "./topology";

/** Orders that fail (say `{"amount": "ten"}`) go here, with Kafka's error headers, instead of stopping their task. */
export const DEAD_LETTER_TOPIC = "orders-dead-letters";

export const streams = defineEdgeStreams((env) => ordersTotalsTopology({ deadLetterQueueTopic: DEAD_LETTER_TOPIC }, partitionsOf(env)));
