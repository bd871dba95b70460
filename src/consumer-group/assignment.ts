/**
 * Partition assignment among a group's live instances: deterministic, so every call computes the
 * same answer from the same membership without storing it. Per topic, the instances subscribed to
 * it are sorted by name and partition p goes to the (p mod n)-th of them (round robin).
 */
import type { TopicPartition } from "../log/types";

export interface Subscriber {
  readonly instance: string;
  readonly topics: readonly string[];
}

/** Each instance's partitions, sorted by topic then partition; instances without any map to []. */
export function assignPartitions(members: readonly Subscriber[], partitionCounts: ReadonlyMap<string, number>): Map<string, TopicPartition[]> {
  const assignment = new Map<string, TopicPartition[]>();
  const sorted = [...members].sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
  for (const member of sorted) assignment.set(member.instance, []);
  const topics = [...new Set(sorted.flatMap((m) => m.topics))].sort();
  for (const topic of topics) {
    const count = partitionCounts.get(topic);
    if (count === undefined) continue;
    const subscribers = sorted.filter((m) => m.topics.includes(topic));
    for (let partition = 0; partition < count; partition++) {
      assignment.get(subscribers[partition % subscribers.length]!.instance)!.push({ topic, partition });
    }
  }
  return assignment;
}
