/**
 * The Worker: clicks keyed by page are counted per page (store `clicks-per-page`, queryable at
 * GET /stores/clicks-per-page/keys/:page) and every new count is published on topic `click-counts`.
 */
import { defineEdgeStreams, Materialized, Serdes, StreamsBuilder } from "edge-streams";

export interface Click {
  readonly user: string;
}

const builder = new StreamsBuilder();
builder
  .stream("clicks", { key: Serdes.string(), value: Serdes.json<Click>() })
  .groupByKey()
  .count(Materialized.as("clicks-per-page"))
  .toStream()
  .to("click-counts");

// A click that cannot be read stops its task by default (Kafka's LogAndFailExceptionHandler). To send
// such records to a dead-letter topic with Kafka's error headers and go on, declare the topic and say so:
//   builder.build({ applicationId: "clicks", topics: { clicks: 2, "click-counts": 2, "click-dead-letters": 1 },
//     deadLetterQueueTopic: "click-dead-letters", onDeserializationError: "continue" })
const streams = defineEdgeStreams(builder.build({ applicationId: "clicks", topics: { clicks: 2, "click-counts": 2 } }));

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}
export class SubscriptionHub extends streams.SubscriptionHub {}

export default streams;
