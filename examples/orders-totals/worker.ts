/**
 * The default example as a Worker (the root wrangler.toml, `npm start`): orders → totals, with
 * unreadable orders sent to a dead-letter topic. A user's Worker module looks just like this.
 */
import { defineEdgeStreams } from "edge-streams";
import { ordersTotalsTopology } from "./topology";

/** Orders that cannot be read (say `{"amount": "ten"}`) go here instead of stopping their task. */
export const DEAD_LETTER_TOPIC = "orders-dead-letters";

const streams = defineEdgeStreams(ordersTotalsTopology({ deadLetterTopic: DEAD_LETTER_TOPIC }));

/** The application this Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}

export default streams;
