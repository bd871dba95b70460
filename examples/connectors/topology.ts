/**
 * The connectors example's topology (README.md): per user, how many events and the sum of their
 * amounts, kept in store `activity` and published on topic `activity`. Events arrive from a
 * Cloudflare Queue (app.ts), `activity` leaves to a webhook and to a Queue.
 */
import { Materialized, Serdes, StreamsBuilder, type Topology } from "edge-streams";
import { z } from "zod";

/** An event as the Queue's messages carry it: `{"user": "ada", "action": "buy", "amount": 12}`. */
export const Event = z.object({ user: z.string().min(1), action: z.string().min(1), amount: z.number().finite().default(0) });
export type Event = z.infer<typeof Event>;

/** A user's activity so far. */
export interface Activity {
  readonly events: number;
  readonly amount: number;
}

export const CONNECTORS_APPLICATION_ID = "connectors";
/** Partitions of `events` and `activity` (the wrangler.toml's `TOPICS` names `events` again, with the same count, to tier it). */
export const CONNECTORS_PARTITIONS = 4;
/** Where an event the topology cannot read, and a Queue message that cannot become one, go (Kafka's dead letters). */
export const DEAD_LETTER_TOPIC = "events-dead-letters";

/** A user's activity with one more event. */
export function addEvent(_user: string, event: Event, activity: Activity): Activity {
  return { events: activity.events + 1, amount: activity.amount + event.amount };
}

/** events → group by user → aggregate into `activity` → topic `activity`. One subtopology, tasks 0_0 … 0_3. */
export function connectorsTopology(): Topology {
  const builder = new StreamsBuilder();
  builder
    .stream("events", { key: Serdes.string(), value: Serdes.json(Event) })
    .groupByKey()
    .aggregate<Activity>(() => ({ events: 0, amount: 0 }), addEvent, Materialized.as("activity", { value: Serdes.json<Activity>() }))
    .toStream()
    .to("activity");
  return builder.build({
    applicationId: CONNECTORS_APPLICATION_ID,
    topics: { events: CONNECTORS_PARTITIONS, activity: CONNECTORS_PARTITIONS, [DEAD_LETTER_TOPIC]: 1 },
    deadLetterQueueTopic: DEAD_LETTER_TOPIC,
    onDeserializationError: "continue",
    onProcessingError: "continue",
  });
}
