/**
 * The connectors example's application (README.md): events from the Queue `connectors-events`
 * into topic `events` (tiered to R2 by wrangler.toml's `TOPICS`), aggregated per user into
 * `activity`, which is delivered to a webhook (signed) and to the Queue `connectors-activity`.
 * The Worker consumes that Queue too, into topic `activity-received`: a stand-in for the
 * downstream consumer a real deployment would have, so what the Queue sink sent can be read.
 */
import { defineEdgeStreams } from "edge-streams";
import { connectorsTopology } from "./topology";

/** The Queue the events arrive on (its producer binding: `EVENTS_QUEUE`, used by the demo route). */
export const EVENTS_QUEUE = "connectors-events";
/** The Queue `activity` is delivered to (its producer binding: `ACTIVITY_QUEUE`). */
export const ACTIVITY_QUEUE = "connectors-activity";
/** Where the Worker keeps what it consumed from `connectors-activity`: one record per message, keyed by the message's id. */
export const ACTIVITY_RECEIVED = "activity-received";

export const streams = defineEdgeStreams(connectorsTopology(), {
  extraTopics: { [ACTIVITY_RECEIVED]: 1 },
  queues: {
    // Each message's body is an event; its field `user` is the key (so a user's events share a partition).
    [EVENTS_QUEUE]: { topic: "events", key: "user" },
    [ACTIVITY_QUEUE]: { topic: ACTIVITY_RECEIVED, key: (_body: unknown, message: { id: string }) => message.id },
  },
  sinks: {
    // Every update of a user's activity POSTed to the URL in the var ACTIVITY_WEBHOOK_URL, signed with ACTIVITY_WEBHOOK_SECRET.
    "activity-webhook": { topic: "activity", urlVar: "ACTIVITY_WEBHOOK_URL", secret: "ACTIVITY_WEBHOOK_SECRET" },
    // …and sent to the Queue bound as ACTIVITY_QUEUE, one message per record.
    "activity-queue": { topic: "activity", queue: "ACTIVITY_QUEUE" },
  },
});

/** The application the Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;
