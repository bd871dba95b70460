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

export class PoisonOrder extends Error {
  override name = "PoisonOrder";
}

export const streams = defineEdgeStreams((env) => ordersTotalsTopology({ deadLetterQueueTopic: DEAD_LETTER_TOPIC }, partitionsOf(env)), {
  queues: {
    "orders-queue": { topic: "orders", key: "customer" },
    "orders-by-function": {
      topic: "orders",
      key: (body: OrderMessage) => {
        if (body.poison) throw new PoisonOrder(`order of ${body.customer} is poison`);
        return body.customer;
      },
    },
    // Refused: the application writes totals itself (its batches fail, as a misconfiguration).
    "into-totals": { topic: "totals" },
  },
});
