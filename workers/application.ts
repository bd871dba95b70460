/**
 * The application this Worker runs: the example of API.md (orders → totals). To run your own
 * topology, build it here; the API, the task objects and the log all read it from this module.
 */
import { Application } from "../src/application";
import { ordersTotalsTopology } from "../src/streams/examples/orders-totals";

/** Orders that cannot be read (say `{"amount": "ten"}`) go here instead of stopping their task. */
export const DEAD_LETTER_TOPIC = "orders-dead-letters";

export const application = new Application(ordersTotalsTopology({ deadLetterTopic: DEAD_LETTER_TOPIC }));
