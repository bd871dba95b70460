/**
 * The topic catalog: every topic is declared with a fixed partition count, in configuration or in
 * code (a topology adds its changelog and repartition topics). Partitions are created on first use.
 */
import { UnknownTopicOrPartition } from "./errors";
import type { TopicPartition } from "./types";

/** Topic names as Kafka allows them: letters, digits, `.`, `_`, `-`; at most 249 characters. */
const legalName = /^[A-Za-z0-9._-]{1,249}$/;

export class TopicCatalog {
  private readonly counts: ReadonlyMap<string, number>;

  constructor(topics: Readonly<Record<string, number>> | ReadonlyMap<string, number>) {
    const entries = topics instanceof Map ? [...topics] : Object.entries(topics);
    for (const [name, partitions] of entries) {
      if (!legalName.test(name) || name === "." || name === "..") throw new Error(`illegal topic name ${JSON.stringify(name)}`);
      if (!Number.isInteger(partitions) || partitions < 1) throw new Error(`topic ${name}: partition count must be a positive integer`);
    }
    this.counts = new Map(entries);
  }

  get all(): ReadonlyMap<string, number> {
    return this.counts;
  }

  has(topic: string): boolean {
    return this.counts.has(topic);
  }

  /** The partition count of a declared topic; `UnknownTopicOrPartition` otherwise. */
  partitions(topic: string): number {
    const count = this.counts.get(topic);
    if (count === undefined) throw new UnknownTopicOrPartition(`unknown topic ${JSON.stringify(topic)}`);
    return count;
  }

  /** Throws `UnknownTopicOrPartition` unless the topic is declared and the partition exists. */
  check(tp: TopicPartition): void {
    const count = this.partitions(tp.topic);
    if (!Number.isInteger(tp.partition) || tp.partition < 0 || tp.partition >= count) {
      throw new UnknownTopicOrPartition(`topic ${JSON.stringify(tp.topic)} has no partition ${tp.partition} (it has ${count})`);
    }
  }

  /** A catalog with more topics declared. */
  with(topics: Readonly<Record<string, number>>): TopicCatalog {
    return new TopicCatalog(new Map([...this.counts, ...Object.entries(topics)]));
  }
}
