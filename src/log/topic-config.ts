/**
 * Topic configurations, with Kafka's names and defaults: how long a partition keeps its records
 * (`retention.ms`, `retention.bytes`) and whether it keeps only the latest record of each key
 * (`cleanup.policy=compact`, with `delete.retention.ms`, `min.compaction.lag.ms`,
 * `max.compaction.lag.ms`). Topics get the defaults Kafka Streams creates them with: changelogs
 * compacted, repartition topics kept until their reader commits past them (Kafka's repartition
 * purge) and otherwise forever, the application's own topics deleted after 7 days — except the
 * topic of a global table, compacted as Kafka asks of it (a task that builds its copy of the table
 * reads the whole topic).
 */

export type CleanupPolicy = "delete" | "compact" | "compact,delete";

/** What a topic is to the application: its configuration defaults follow from it. */
export type TopicKind = "user" | "changelog" | "repartition" | "global-table";

export interface TopicConfig {
  readonly "cleanup.policy": CleanupPolicy;
  /** Records older than this go (policies with `delete`); -1: kept forever. */
  readonly "retention.ms": number;
  /** Oldest batches go while the partition keeps more than this many bytes (policies with `delete`); -1: unbounded. */
  readonly "retention.bytes": number;
  /** How long a tombstone survives compaction. */
  readonly "delete.retention.ms": number;
  /** Records younger than this are never compacted. */
  readonly "min.compaction.lag.ms": number;
  /** A record superseded by a later one of its key is compacted within this long, whatever else is due; -1: no bound. */
  readonly "max.compaction.lag.ms": number;
  /**
   * Edge Streams' repartition purge as a setting: once the application's consumer group commits a
   * position on a partition, records below it go (Kafka Streams deletes them with deleteRecords).
   */
  readonly "purge.on.commit": boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Kafka's broker defaults. */
export const KAFKA_DEFAULTS: TopicConfig = {
  "cleanup.policy": "delete",
  "retention.ms": 7 * DAY_MS,
  "retention.bytes": -1,
  "delete.retention.ms": DAY_MS,
  "min.compaction.lag.ms": 0,
  "max.compaction.lag.ms": -1,
  "purge.on.commit": false,
};

/** The configuration a topic of this kind is created with (Kafka Streams' internal topic configs), with `overrides` on top. */
export function topicConfig(kind: TopicKind, overrides: Partial<TopicConfig> = {}): TopicConfig {
  const byKind: Partial<TopicConfig> =
    kind === "changelog" || kind === "global-table"
      ? { "cleanup.policy": "compact" }
      : kind === "repartition"
        ? { "cleanup.policy": "delete", "retention.ms": -1, "purge.on.commit": true }
        : {};
  return { ...KAFKA_DEFAULTS, ...byKind, ...overrides };
}

export const compacts = (config: TopicConfig): boolean => config["cleanup.policy"] !== "delete";
export const deletes = (config: TopicConfig): boolean => config["cleanup.policy"] !== "compact";

const DURATIONS = ["retention.ms", "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms"] as const;
type NumberKey = (typeof DURATIONS)[number] | "retention.bytes";
const NUMBER_KEYS: readonly NumberKey[] = [...DURATIONS, "retention.bytes"];
const POLICIES: readonly CleanupPolicy[] = ["delete", "compact", "compact,delete"];

export class TopicConfigError extends Error {
  override name = "TopicConfigError";
}

/**
 * Reads settings given as text (the `TOPICS` var): Kafka's keys and value syntax; `delete,compact`
 * is `compact,delete`; -1 means unbounded where Kafka allows it. Throws `TopicConfigError` naming
 * what is wrong.
 */
export function parseTopicConfig(settings: Readonly<Record<string, string>>): Partial<TopicConfig> {
  const config: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(settings)) {
    const value = raw.trim();
    if (key === "cleanup.policy") {
      const policy = value
        .split(",")
        .map((p) => p.trim())
        .sort()
        .join(",");
      if (!POLICIES.includes(policy as CleanupPolicy))
        throw new TopicConfigError(`cleanup.policy is delete, compact or compact,delete; got ${JSON.stringify(raw)}`);
      config[key] = policy;
    } else if ((NUMBER_KEYS as readonly string[]).includes(key)) {
      const n = Number(value);
      const unbounded = key === "retention.ms" || key === "retention.bytes" || key === "max.compaction.lag.ms";
      if (!/^-?[0-9]{1,16}$/.test(value) || !Number.isSafeInteger(n) || n < (unbounded ? -1 : 0)) {
        throw new TopicConfigError(`${key} is ${unbounded ? "-1 or " : ""}a non-negative integer; got ${JSON.stringify(raw)}`);
      }
      config[key] = n;
    } else if (key === "purge.on.commit") {
      if (value !== "true" && value !== "false") throw new TopicConfigError(`purge.on.commit is true or false; got ${JSON.stringify(raw)}`);
      config[key] = value === "true";
    } else {
      throw new TopicConfigError(`unknown topic setting ${JSON.stringify(key)} (known: cleanup.policy, ${NUMBER_KEYS.join(", ")}, purge.on.commit)`);
    }
  }
  return config as Partial<TopicConfig>;
}
