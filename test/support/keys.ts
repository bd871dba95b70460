/** Keys chosen by the partition Kafka's default partitioner puts them on, so a test knows its task. */
import { partitionForKey } from "../../src/log/partitioner";

/** `count` keys `<prefix>-<n>` that all land on `partition` of a topic with `partitions` partitions. */
export function keysOn(partition: number, count: number, prefix: string, partitions = 4): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) if (partitionForKey(`${prefix}-${i}`, partitions) === partition) keys.push(`${prefix}-${i}`);
  return keys;
}

export function keyOn(partition: number, prefix: string, partitions = 4): string {
  return keysOn(partition, 1, prefix, partitions)[0]!;
}
