/**
 * The subscription families of `GET /metrics` (docs/subscriptions.md): streams open, the slot
 * limit, events sent, recoveries by kind and subscriptions refused. Per isolate: the numbers of
 * the isolate that answers the scrape (subscription-stream.ts), not of the deployment.
 */
import { family, type Family } from "./prometheus";
import { streamCounters, watchSlots } from "./subscription-stream";

export function subscriptionFamilies(): Family[] {
  const perIsolate = (name: string, type: Family["type"], help: string, samples: Family["samples"]) =>
    family(`subscriptions_${name}`, type, `${help} Per isolate: the one answering this scrape.`, samples);
  return [
    perIsolate("open", "gauge", "Subscriptions (store watches, topic tails, cluster view watches) open now.", [{ labels: {}, value: watchSlots.taken }]),
    perIsolate("limit", "gauge", "Subscriptions an isolate holds at most; past it a new one is refused (503).", [{ labels: {}, value: watchSlots.limit }]),
    perIsolate("events_sent_total", "counter", "Events sent to subscribers (keep-alive comments not counted).", [
      { labels: {}, value: streamCounters.eventsSent },
    ]),
    perIsolate(
      "recoveries_total",
      "counter",
      "Streams that found the log no longer holding where they stood, by kind: snapshot (a stale resume token), resync (a watch behind compaction), gap (a tail skipping offsets gone).",
      Object.entries(streamCounters.recoveries).map(([kind, value]) => ({ labels: { kind }, value })),
    ),
    perIsolate("refused_total", "counter", "Subscriptions refused because every slot was taken, or every slot of the watched key.", [
      { labels: {}, value: streamCounters.refused },
    ]),
  ];
}
