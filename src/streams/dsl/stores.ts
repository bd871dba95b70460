/**
 * `Stores`: store suppliers for `Materialized.as(...)`, as Kafka's. Only the versioned key-value
 * store needs one here (every other store is described by `Materialized` alone):
 * `Stores.persistentVersionedKeyValueStore(name, historyRetentionMs)` keeps, besides each key's
 * latest row, its older versions for that long in stream time — what a stream-table join with a
 * grace period reads (the row as of each stream record's time), and what makes a table drop
 * out-of-order updates from its joins and aggregations (KIP-914).
 */
import { TopologyError } from "../errors";

export interface VersionedStoreSupplier {
  readonly name: string;
  readonly historyRetentionMs: number;
}

export const Stores = {
  persistentVersionedKeyValueStore(name: string, historyRetentionMs: number): VersionedStoreSupplier {
    if (!Number.isSafeInteger(historyRetentionMs) || historyRetentionMs < 0) {
      throw new TopologyError(`historyRetentionMs must be a non-negative integer, got ${historyRetentionMs}`);
    }
    return { name, historyRetentionMs };
  },
};
