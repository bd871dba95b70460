/**
 * The topic's configuration as a partition keeps it (Kafka's per-log `LogConfig`): given by the
 * producers' side with every append that may create the partition, stored in `partition_meta`'s
 * `config` column only when it changed, read once and then served from memory.
 */
import { sql } from "../../storage/sql";
import type { TopicConfig } from "../topic-config";
import type { PartitionTransactions } from "./transactions";

export class TopicConfigStore {
  private cached: TopicConfig | null | undefined;

  constructor(private readonly tx: PartitionTransactions) {
    tx.onRollback(() => (this.cached = undefined));
  }

  /** The topic's configuration as last given; null before any. */
  current(): TopicConfig | null {
    if (this.cached === undefined) {
      const text = this.tx.db.one<{ config: string | null }>(sql`SELECT config FROM partition_meta WHERE only = 1`)?.config ?? null;
      this.cached = text === null ? null : (JSON.parse(text) as TopicConfig);
    }
    return this.cached;
  }

  /**
   * Records the topic's configuration, in a transaction of its own that first runs `bind` (which
   * binds the object to its partition, creating the meta row the configuration is kept in).
   * Written only when it changed.
   */
  configure(config: TopicConfig, bind: () => unknown): void {
    const text = JSON.stringify(config);
    if (this.cached !== undefined && JSON.stringify(this.cached) === text) return;
    this.tx.run(() => {
      bind();
      this.tx.db.run(sql`UPDATE partition_meta SET config = ${text} WHERE only = 1`);
    });
    this.cached = config;
  }
}
