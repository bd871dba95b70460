/**
 * The topic catalog: every topic is declared with a fixed partition count and a configuration, in
 * code (a topology adds its changelog and repartition topics) or with the `TOPICS` var.
 * Partitions are created on first use.
 */
import { UnknownTopicOrPartition } from "./errors";
import { topicConfig, type TopicConfig } from "./topic-config";
import type { TopicPartition } from "./types";

/** Topic names as Kafka allows them: letters, digits, `.`, `_`, `-`; at most 249 characters. */
const legalName = /^[A-Za-z0-9._-]{1,249}$/;

/** A topic as declared: its partition count, and its configuration (Kafka's defaults where not given). */
export interface TopicSpec {
  readonly partitions: number;
  readonly config: TopicConfig;
}

/** A declaration: a partition count alone (a topic of the application's, with Kafka's defaults), or a whole spec. */
export type TopicDeclaration = number | TopicSpec;

export class TopicCatalog {
  private readonly specs: ReadonlyMap<string, TopicSpec>;
  private readonly counts: ReadonlyMap<string, number>;

  constructor(topics: Readonly<Record<string, TopicDeclaration>> | ReadonlyMap<string, TopicDeclaration>) {
    const entries = topics instanceof Map ? [...topics] : Object.entries(topics);
    const specs = new Map<string, TopicSpec>();
    for (const [name, declared] of entries) {
      const spec = typeof declared === "number" ? { partitions: declared, config: topicConfig("user") } : declared;
      if (!legalName.test(name) || name === "." || name === "..") throw new Error(`illegal topic name ${JSON.stringify(name)}`);
      if (!Number.isInteger(spec.partitions) || spec.partitions < 1) throw new Error(`topic ${name}: partition count must be a positive integer`);
      specs.set(name, spec);
    }
    this.specs = specs;
    this.counts = new Map([...specs].map(([name, spec]) => [name, spec.partitions]));
  }

  get all(): ReadonlyMap<string, number> {
    return this.counts;
  }

  has(topic: string): boolean {
    return this.specs.has(topic);
  }

  /** The partition count of a declared topic; `UnknownTopicOrPartition` otherwise. */
  partitions(topic: string): number {
    return this.spec(topic).partitions;
  }

  /** The configuration of a declared topic; `UnknownTopicOrPartition` otherwise. */
  config(topic: string): TopicConfig {
    return this.spec(topic).config;
  }

  private spec(topic: string): TopicSpec {
    const spec = this.specs.get(topic);
    if (spec === undefined) throw new UnknownTopicOrPartition(`unknown topic ${JSON.stringify(topic)}`);
    return spec;
  }

  /** Throws `UnknownTopicOrPartition` unless the topic is declared and the partition exists. */
  check(tp: TopicPartition): void {
    const count = this.partitions(tp.topic);
    if (!Number.isInteger(tp.partition) || tp.partition < 0 || tp.partition >= count) {
      throw new UnknownTopicOrPartition(`topic ${JSON.stringify(tp.topic)} has no partition ${tp.partition} (it has ${count})`);
    }
  }

  /** A catalog with more topics declared (a topic declared again takes the new declaration). */
  with(topics: Readonly<Record<string, TopicDeclaration>>): TopicCatalog {
    return new TopicCatalog(new Map<string, TopicDeclaration>([...this.specs, ...Object.entries(topics)]));
  }
}
