/**
 * The `queues` test project's application: the default example (orders → totals, bad orders to
 * `orders-dead-letters`) with its input fed by Cloudflare Queues — `orders-queue` keyed by the
 * body's `customer` field, `orders-by-function` by a function that refuses "poison" orders.
 */
import { defineEdgeStreams } from "edge-streams";
import { DEAD_LETTER_TOPIC } from "../../examples/orders-totals/app";
import { ordersTotalsTopology, partitionsOf } from "../../examples/orders-totals/topology";

/** An order as a Queue message carries it. */
export interface OrderMessage {
  readonly customer?: string;
  readonly amount?: unknown;
  readonly poison?: boolean;
}

/** Where the orders `orders-queue` gave up on land (through its dead-letter queue, `orders-queue-dlq`). */
export const FAILED_ORDERS = "failed-orders";

/** Topics delivered by sinks (records written by the tests), and the topic the sinks' queue is consumed into. */
export const SINK_TOPICS = { queued: "sink-queued", hooked: "sink-hooked", small: "sink-small" } as const;
export const SINK_RECEIVED = "sink-received";
/** The small sink's largest message (its JSON plus Queues' 100 bytes): a larger record is dead-lettered. */
export const SMALL_MESSAGE_BYTES = 600;

export class PoisonOrder extends Error {
  override name = "PoisonOrder";
}

export const streams = defineEdgeStreams((env) => ordersTotalsTopology({ deadLetterQueueTopic: DEAD_LETTER_TOPIC }, partitionsOf(env)), {
  extraTopics: { [FAILED_ORDERS]: 1, [SINK_TOPICS.queued]: 2, [SINK_TOPICS.hooked]: 2, [SINK_TOPICS.small]: 1, [SINK_RECEIVED]: 1 },
  sinks: {
    // The example's output, and topics the tests write, delivered to one queue (each message says its topic).
    totals: { topic: "totals", queue: "SINK_QUEUE" },
    queued: { topic: SINK_TOPICS.queued, queue: "SINK_QUEUE" },
    small: { topic: SINK_TOPICS.small, queue: "SINK_QUEUE", maxMessageBytes: SMALL_MESSAGE_BYTES },
    // POSTed to the test's server (test/node/webhook-server.ts), three records a request, retried quickly.
    hook: { topic: SINK_TOPICS.hooked, urlVar: "SINK_WEBHOOK_URL", secret: "SINK_WEBHOOK_SECRET", maxRecords: 3, retry: { initialMs: 200, maxMs: 1_000 } },
  },
  queues: {
    "orders-queue": { topic: "orders", key: "customer" },
    "orders-by-function": {
      topic: "orders",
      key: (body: OrderMessage) => {
        if (body.poison) throw new PoisonOrder(`order of ${body.customer} is poison`);
        return body.customer;
      },
    },
    // The queue's own dead-letter queue: what Queues gave up on, kept in a topic of its own.
    "orders-queue-dlq": { topic: FAILED_ORDERS, key: "customer" },
    // What the sinks sent, one record per message (keyed by the message's id: each delivery kept).
    "sink-out-queue": { topic: SINK_RECEIVED, key: (_body: unknown, message: { id: string }) => message.id },
    // Refused: the application writes totals itself (its batches fail, as a misconfiguration).
    "into-totals": { topic: "totals" },
  },
});
