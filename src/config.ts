/**
 * Configuration from Worker vars and secrets (`wrangler.toml [vars]`, `.dev.vars`,
 * `wrangler dev --var`), parsed once per request into typed settings with the defaults of docs/configuration.md.
 */
import { z } from "zod";
import { parseTopicConfig, topicConfig } from "./log/topic-config";
import { MAX_RESTORE_SHARDS, type RestoreShardsSetting } from "./restore/sharding";
import { parsePlacements, type Placement } from "./placements";
import type { TopicSpec } from "./log/topics";
import { setLogLevel } from "./util/logging";
import { ConfigError } from "./config-error";

const onOff = z.enum(["on", "off"]);
const count = (fallback: number, min: number) => z.coerce.number().int().min(min).default(fallback);

const schema = z.object({
  /**
   * Credentials (secrets), each one token or a comma-separated list of them (two at once while one
   * is rotated): the all-powerful API token, and tokens with one role each (workers/api/credentials.ts).
   */
  API_TOKEN: z.string().optional(),
  ADMIN_TOKEN: z.string().optional(),
  PRODUCE_TOKEN: z.string().optional(),
  READ_TOKEN: z.string().optional(),
  LOG_TOKEN: z.string().optional(),
  ENVIRONMENT: z.string().default("production"),
  /** Placements: `name`, `name:locationHint` or `name:locationHint:jurisdiction`, comma-separated (src/placements.ts). */
  PLACEMENTS: z
    .string()
    .default("a,b")
    .transform((s, ctx) => {
      try {
        return parsePlacements(s);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    }),
  NUM_STANDBYS: count(0, 0),
  /** A warm instance this close to the changelog's end may take over as active (Kafka's acceptable.recovery.lag). */
  ACCEPTABLE_RECOVERY_LAG: count(10_000, 0),
  /**
   * A restore batch's bounds: most records, and most bytes (a batch takes at least one record). Each
   * batch costs two RPCs and a transaction whatever its size, so batches are large; the bytes bound
   * keeps one within memory and one transaction's reasonable time.
   */
  RESTORE_BATCH_RECORDS: count(10_000, 1),
  RESTORE_BATCH_BYTES: count(1 << 20, 1),
  /**
   * Batches a restore round reads beyond the first into one restore window, compacted in memory
   * (each key's latest record) and applied as one batch of at most RESTORE_BATCH_BYTES: a history
   * of many records per key costs the instance its keys (src/restore/compacted-window.ts). 0: one
   * batch per round, as fetched.
   */
  RESTORE_READ_AHEAD: count(4, 0),
  /**
   * The least time between two rounds of a restore worker that its standbys' changelogs' growth
   * brings: a standby is fed at most this often, each time with every append since (one fetch,
   * one batch, its store's rows once per update rather than per commit of a busy task). A
   * restoration, or a standby behind by more than a batch, goes on at once. 0: at every growth.
   */
  STANDBY_UPDATE_INTERVAL_MS: count(1_000, 0),
  /** Restore workers per placement: a number, or `auto` (one per 128 tasks, up to 32). */
  RESTORE_SHARDS: z
    .string()
    .default("auto")
    .transform((s, ctx): RestoreShardsSetting => {
      const text = s.trim();
      if (text === "auto") return "auto";
      if (/^[0-9]{1,4}$/.test(text) && Number(text) >= 1 && Number(text) <= MAX_RESTORE_SHARDS) return Number(text);
      ctx.addIssue({ code: "custom", message: `"${s}" is not auto or a whole number from 1 to ${MAX_RESTORE_SHARDS}` });
      return z.NEVER;
    }),
  /** Each task's record cache, in bytes (Kafka's statestore.cache.max.bytes); 0 sends every update on at once. */
  STATESTORE_CACHE_MAX_BYTES: count(10 * 1024 * 1024, 0),
  /**
   * Kafka's `commit.interval.ms` (100 ms, its default under exactly-once): a busy task lets input
   * gather this long before its next commit (the record cache's window). An idle task processes
   * each arrival at once. (Input offsets go to the group once owed 10 s: RECORD_OWED_MS.)
   */
  COMMIT_INTERVAL_MS: count(100, 0),
  /**
   * Kafka Streams' producer `linger.ms` (100 ms): while a task commits often, its commits' output
   * and changelog records go to the log together at most this often; after a quiet spell, at once.
   */
  LINGER_MS: count(100, 0),
  /**
   * Ingest's producer `linger.ms` (src/ingest/gather.ts): while a partition takes at least 1,000
   * records a second from an isolate's ingest requests, its appends go at most one per linger, each
   * holding every request's records that arrived meanwhile (sooner once they hold 16 KiB; not after
   * a linger no request joined, for a second). Either way appends gather behind one in flight to the
   * same partition, and an append of a partition not streaming goes at once. 0: no pacing. 100:
   * Kafka Streams' producer default, as LINGER_MS; with standbys fed once a second it keeps a
   * stream's cost within issue #33's goal at half the wait of 200 (docs/scale.md).
   */
  INGEST_LINGER_MS: count(100, 0),
  /** The first back-off of the `"retry"` uncaught-error policy; it doubles per failure, up to 60 s. */
  RETRY_BACKOFF_MS: count(1000, 1),
  FAULT_INJECTION: onOff.default("off"),
  /** The least severe log lines written: `debug`, `info`, `warn` or `error`. */
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  MAX_BODY_BYTES: count(1024 * 1024, 1),
  /** WebSocket subscriptions one subscription hub holds at most, and per key (docs/subscriptions.md). */
  HUB_MAX_SOCKETS: count(10_000, 1),
  HUB_MAX_SOCKETS_PER_KEY: count(1_000, 1),
  LOG_BACKEND: z.enum(["durable", "upstash"]).default("durable"),
  UPSTASH_KAFKA_REST_URL: z.string().url().optional(),
  UPSTASH_KAFKA_REST_USERNAME: z.string().optional(),
  UPSTASH_KAFKA_REST_PASSWORD: z.string().optional(),
  UPSTASH_TIMEOUT_MS: count(10_000, 1),
  /**
   * Extra topics to declare, separated by commas: `name=partitions`, optionally with Kafka topic
   * settings in parentheses, separated by spaces (e.g. `audit=3,clicks=8(retention.ms=3600000)`,
   * `users=4(cleanup.policy=compact)`). Without settings a topic has Kafka's defaults.
   */
  TOPICS: z
    .string()
    .default("")
    .transform((s, ctx) => {
      const topics: Record<string, TopicSpec> = {};
      for (const entry of splitTopLevel(s)) {
        const match = /^([A-Za-z0-9._-]{1,249})=([1-9][0-9]{0,4})(?:\((.*)\))?$/s.exec(entry);
        if (!match) {
          ctx.addIssue({ code: "custom", message: `"${entry}" is not name=partitions or name=partitions(setting=value ...)` });
          return z.NEVER;
        }
        const settings: Record<string, string> = {};
        for (const setting of (match[3] ?? "").split(/\s+/).filter(Boolean)) {
          const eq = setting.indexOf("=");
          if (eq <= 0) {
            ctx.addIssue({ code: "custom", message: `topic ${match[1]}: "${setting}" is not setting=value` });
            return z.NEVER;
          }
          settings[setting.slice(0, eq)] = setting.slice(eq + 1);
        }
        try {
          topics[match[1]!] = { partitions: Number(match[2]), config: topicConfig("user", parseTopicConfig(settings)) };
        } catch (error) {
          ctx.addIssue({ code: "custom", message: `topic ${match[1]}: ${error instanceof Error ? error.message : String(error)}` });
          return z.NEVER;
        }
      }
      return topics;
    }),
});

/** The vars a Worker may set (every one optional; the defaults are the schema's): strings, as Worker vars are. */
export type ConfigVars = { readonly [K in keyof z.input<typeof schema>]?: string };

export type Config = Readonly<Omit<z.infer<typeof schema>, "PLACEMENTS">> & {
  /** The configured placements' names, in order. */
  readonly PLACEMENTS: readonly string[];
  /** The configured placements, with their location hints and jurisdictions. */
  readonly placements: readonly Placement[];
  /** True under `wrangler dev` / tests with `ENVIRONMENT=development`: an unset token is tolerated. */
  readonly localDevelopment: boolean;
};

export { ConfigError };

const cache = new WeakMap<object, Config>();

/** Parses the vars of `env` (bindings that are not strings are left out); throws `ConfigError` naming every bad variable. Cached per env object. */
export function readConfig(env: object): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string" && v !== ""));
  const parsed = schema.safeParse(vars);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  const config = parsed.data;
  if (config.LOG_BACKEND === "upstash" && (!config.UPSTASH_KAFKA_REST_URL || !config.UPSTASH_KAFKA_REST_USERNAME || !config.UPSTASH_KAFKA_REST_PASSWORD)) {
    throw new ConfigError("invalid configuration: LOG_BACKEND=upstash needs UPSTASH_KAFKA_REST_URL, _USERNAME and _PASSWORD");
  }
  const result: Config = {
    ...config,
    PLACEMENTS: config.PLACEMENTS.map((p) => p.name),
    placements: config.PLACEMENTS,
    localDevelopment: config.ENVIRONMENT === "development",
  };
  // Every entry point reads the configuration before it logs: this is where the level is set.
  setLogLevel(result.LOG_LEVEL);
  cache.set(env, result);
  return result;
}

/**
 * A whole-number var of the application's own (one its topology is built from, such as the
 * default example's `PARTITIONS`): `fallback` when unset or empty; a `ConfigError` naming the var
 * when it is not a whole number from `min` to `max`.
 */
export function intVar(env: object, name: string, fallback: number, { min = 1, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {}): number {
  const raw = (env as Record<string, unknown>)[name];
  if (raw === undefined || raw === "") return fallback;
  const text = typeof raw === "string" ? raw.trim() : String(raw);
  const value = /^-?[0-9]{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`invalid configuration: ${name}: ${JSON.stringify(raw)} is not a whole number from ${min} to ${max}`);
  }
  return value;
}

/** Splits at commas outside parentheses (a setting's value may hold one: `cleanup.policy=compact,delete`). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth = Math.max(0, depth - 1);
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter(Boolean);
}
