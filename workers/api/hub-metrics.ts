/**
 * The subscription hubs' families of `GET /metrics` (docs/subscriptions.md, *Metrics*): per
 * changelog partition listed on the page, and per partition whose hub follows it for a tail, its hub's sockets held, events pushed, changelog reads,
 * sockets dropped (too slow, resync) and refused over a limit (src/subscriptions/hub-counters.ts).
 * One call per such partition on the page (the hub answers from memory: no read, no
 * row); none when the Worker has no hub binding or its log does not wake readers (no hub then
 * holds a socket). A hub that does not answer is left out.
 */
import type { TopicPartition } from "../../src/log/types";
import { topicPartition } from "../../src/names";
import type { HubMetrics } from "../../src/subscriptions/hub-counters";
import type { Host } from "../../platform/host";
import { family, type Family } from "./prometheus";

/**
 * The partitions among `partitions` whose hub's series are listed: the changelog partitions of the
 * application's stores (a hub may follow them for store watches), and those of `subscribed` (whose
 * hub follows them now: a tail's), in page order.
 */
function hubbed(host: Host, partitions: readonly TopicPartition[], subscribed: readonly TopicPartition[]): TopicPartition[] {
  if (!host.log.capabilities.wakesReaders) return [];
  const changelogs = new Set(host.application.topology.subtopologies.flatMap((s) => s.stores.map((store) => store.changelogTopic)));
  const tailed = new Set(subscribed.map(topicPartition));
  return partitions.filter((tp) => changelogs.has(tp.topic) || tailed.has(topicPartition(tp)));
}

export async function hubFamilies(host: Host, partitions: readonly TopicPartition[], subscribed: readonly TopicPartition[] = []): Promise<Family[]> {
  const hubFamily = (name: string, type: Family["type"], help: string) => family(`hub_${name}`, type, help);
  const sockets = hubFamily("sockets", "gauge", "WebSocket subscriptions the changelog partition's subscription hub holds now.");
  const pushed = hubFamily(
    "events_pushed_total",
    "counter",
    "Messages the hub sent to its sockets (snapshots and changes), since the hub first counted (saved: an eviction or crash never lowers it).",
  );
  const reads = hubFamily("reads_total", "counter", "Changelog reads the hub made (each serves all of its sockets), since the hub first counted.");
  const drops = hubFamily(
    "drops_total",
    "counter",
    "Sockets that lost their place, by reason: slow (a full window for 30 s, closed 4008), resync (compaction or retention overtook it: a fresh snapshot, or closed 4009); since the hub first counted.",
  );
  const refused = hubFamily(
    "refused_total",
    "counter",
    "Sockets the hub refused (503), by the limit reached: hub (HUB_MAX_SOCKETS) or key (HUB_MAX_SOCKETS_PER_KEY); since the hub first counted.",
  );
  const started = hubFamily("start_time_seconds", "gauge", "When the hub first counted (Unix seconds; kept across its evictions and crashes).");
  const listed = hubbed(host, partitions, subscribed);
  const answers = await Promise.allSettled(listed.map(async (tp) => (await host.subscriptionHub(tp)?.metrics()) as HubMetrics | undefined));
  answers.forEach((answer, i) => {
    if (answer.status !== "fulfilled" || !answer.value) return;
    const m = answer.value;
    const labels = { topic: listed[i]!.topic, partition: String(listed[i]!.partition) };
    sockets.samples.push({ labels, value: m.sockets });
    pushed.samples.push({ labels, value: m.pushed });
    reads.samples.push({ labels, value: m.reads });
    for (const [reason, value] of Object.entries(m.drops)) drops.samples.push({ labels: { ...labels, reason }, value });
    for (const [limit, value] of Object.entries(m.refused)) refused.samples.push({ labels: { ...labels, limit }, value });
    started.samples.push({ labels, value: m.since / 1000 });
  });
  return [sockets, pushed, reads, drops, refused, started];
}
