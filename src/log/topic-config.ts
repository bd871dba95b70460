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
  /**
   * Kafka's tiered storage (KIP-405): closed rows of the partition move to the R2 bucket bound as
   * `TIERED_STORAGE` once they are beyond `local.retention.*`; reads below the local part read them
   * there (src/log/remote-log-manager.ts). Never on a compacted topic.
   */
  readonly "remote.storage.enable": boolean;
  /** With remote storage: how long records stay in the partition's own storage; -2: as `retention.ms`. */
  readonly "local.retention.ms": number;
  /** With remote storage: how many bytes the partition keeps in its own storage; -2: as `retention.bytes`. */
  readonly "local.retention.bytes": number;
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
  "remote.storage.enable": false,
  "local.retention.ms": -2,
  "local.retention.bytes": -2,
};

/** The configuration a topic of this kind is created with (Kafka Streams' internal topic configs), with `overrides` on top. */
export function topicConfig(kind: TopicKind, overrides: Partial<TopicConfig> = {}): TopicConfig {
  const byKind: Partial<TopicConfig> =
    kind === "changelog" || kind === "global-table"
      ? { "cleanup.policy": "compact" }
      : kind === "repartition"
        ? { "cleanup.policy": "delete", "retention.ms": -1, "purge.on.commit": true }
        : {};
  return checkTopicConfig({ ...KAFKA_DEFAULTS, ...byKind, ...overrides });
}

/** Whether the partition moves closed rows to remote storage (a configuration stored before tiered storage existed says nothing: no). */
export const tiers = (config: TopicConfig): boolean => config["remote.storage.enable"] === true;

/** What stays local with remote storage (Kafka's rule: -2 is the matching `retention.*`), or undefined without remote storage. */
export function localRetention(config: TopicConfig): { readonly ms: number; readonly bytes: number } | undefined {
  if (!tiers(config)) return undefined;
  const ms = config["local.retention.ms"] ?? -2;
  const bytes = config["local.retention.bytes"] ?? -2;
  return { ms: ms === -2 ? config["retention.ms"] : ms, bytes: bytes === -2 ? config["retention.bytes"] : bytes };
}

/**
 * Refuses what Kafka refuses of tiered storage: remote storage on a compacted topic (compaction
 * rewrites rows in place, which a segment in R2 cannot be), and a local part kept longer or bigger
 * than the whole log. Returns the configuration.
 */
export function checkTopicConfig(config: TopicConfig): TopicConfig {
  if (tiers(config) && compacts(config)) {
    throw new TopicConfigError(
      `remote.storage.enable=true needs cleanup.policy=delete (got ${config["cleanup.policy"]}): a compacted topic stays in the partition's own storage, as in Kafka`,
    );
  }
  for (const unit of ["ms", "bytes"] as const) {
    const local = config[`local.retention.${unit}`] ?? -2;
    const whole = config[`retention.${unit}`];
    if (local === -2) continue;
    if (whole >= 0 && (local < 0 || local > whole)) {
      throw new TopicConfigError(`local.retention.${unit} (${local}) must be -2 or at most retention.${unit} (${whole})`);
    }
  }
  return config;
}

export const compacts = (config: TopicConfig): boolean => config["cleanup.policy"] !== "delete";
export const deletes = (config: TopicConfig): boolean => config["cleanup.policy"] !== "compact";

const DURATIONS = ["retention.ms", "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms", "local.retention.ms"] as const;
type NumberKey = (typeof DURATIONS)[number] | "retention.bytes" | "local.retention.bytes";
const NUMBER_KEYS: readonly NumberKey[] = [...DURATIONS, "retention.bytes", "local.retention.bytes"];
const BOOLEAN_KEYS = ["purge.on.commit", "remote.storage.enable"] as const;
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
      const local = key.startsWith("local.");
      const unbounded = local || key === "retention.ms" || key === "retention.bytes" || key === "max.compaction.lag.ms";
      if (!/^-?[0-9]{1,16}$/.test(value) || !Number.isSafeInteger(n) || n < (local ? -2 : unbounded ? -1 : 0)) {
        const allowed = local ? "-2, -1 or " : unbounded ? "-1 or " : "";
        throw new TopicConfigError(`${key} is ${allowed}a non-negative integer; got ${JSON.stringify(raw)}`);
      }
      config[key] = n;
    } else if ((BOOLEAN_KEYS as readonly string[]).includes(key)) {
      if (value !== "true" && value !== "false") throw new TopicConfigError(`${key} is true or false; got ${JSON.stringify(raw)}`);
      config[key] = value === "true";
    } else {
      throw new TopicConfigError(`unknown topic setting ${JSON.stringify(key)} (known: cleanup.policy, ${[...NUMBER_KEYS, ...BOOLEAN_KEYS].join(", ")})`);
    }
  }
  return config as Partial<TopicConfig>;
}
