/**
 * The default example's application: orders → totals, with unreadable orders sent to a
 * dead-letter topic. worker.ts exports what the Worker needs of it; tests drive it from here.
 */
import { defineEdgeStreams } from "edge-streams";
import { ordersTotalsTopology } from "./topology";

/** Orders that cannot be read (say `{"amount": "ten"}`) go here instead of stopping their task. */
export const DEAD_LETTER_TOPIC = "orders-dead-letters";

export const streams = defineEdgeStreams(ordersTotalsTopology({ deadLetterTopic: DEAD_LETTER_TOPIC }));

/** The application the Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;
