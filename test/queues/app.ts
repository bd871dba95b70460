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

export class PoisonOrder extends Error {
  override name = "PoisonOrder";
}

export const streams = defineEdgeStreams((env) => ordersTotalsTopology({ deadLetterQueueTopic: DEAD_LETTER_TOPIC }, partitionsOf(env)), {
  extraTopics: { [FAILED_ORDERS]: 1 },
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
    // Refused: the application writes totals itself (its batches fail, as a misconfiguration).
    "into-totals": { topic: "totals" },
  },
});
