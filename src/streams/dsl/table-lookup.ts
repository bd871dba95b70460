/**
 * Reading a table's current row, with its timestamp, from the store that materializes it — what
 * Kafka calls a table's value getter. Tables from windowed aggregations are keyed by `Windowed<K>`
 * and live in window or session stores: their row is the value of that exact window (a session's
 * timestamp is its end, as Kafka's session value getter says), so windowed tables join like any.
 * A versioned table's row can also be read as of a time (`versionedLookup`): what a stream-table
 * join reads for a stream record, at the record's timestamp (KIP-914).
 */
import { TopologyError } from "../errors";
import type { ProcessorContext } from "../processor";
import type { ValueAndTimestamp } from "../state/key-value-store";
import type { StoreKind } from "../state/store-kind";
import type { GraphNode } from "../topology/graph";
import type { Windowed } from "../windowed";
import { keyValueStoreOf, sessionStoreOf, versionedStoreOf, windowStoreOf } from "./processors";

/** A table as joins read it: the node after which its store is up to date, the store, and how to read a row. */
export interface MaterializedTable {
  readonly node: GraphNode;
  readonly storeName: string;
  readonly lookup: TableLookup;
  /** Set when the store is versioned: its rows can be read as of a time (`lookupAsOf`). */
  readonly historyRetentionMs?: number;
  readonly lookupAsOf?: VersionedLookup;
}

export type TableLookup = (context: ProcessorContext<unknown, unknown>, key: unknown) => ValueAndTimestamp<unknown> | undefined;

export function tableLookup(kind: StoreKind, storeName: string): TableLookup {
  switch (kind) {
    case "key-value":
      return (context, key) => keyValueStoreOf<unknown, unknown>(context, storeName).getWithTimestamp(key);
    case "window":
      return (context, key) => {
        const { key: inner, window } = key as Windowed<unknown>;
        return windowStoreOf<unknown, unknown>(context, storeName).getWithTimestamp(inner, window);
      };
    case "session":
      return (context, key) => {
        const { key: inner, window } = key as Windowed<unknown>;
        const value = sessionStoreOf<unknown, unknown>(context, storeName).fetchSession(inner, window);
        return value === undefined ? undefined : { value, timestamp: window.end };
      };
    case "buffer":
      throw new TopologyError(`store ${JSON.stringify(storeName)} is a buffer, not a table`);
  }
}

export type VersionedLookup = (context: ProcessorContext<unknown, unknown>, key: unknown, asOf: number) => ValueAndTimestamp<unknown> | undefined;

export function versionedLookup(storeName: string, historyRetentionMs: number): VersionedLookup {
  return (context, key, asOf) => {
    const record = versionedStoreOf<unknown, unknown>(context, storeName, historyRetentionMs).getAsOf(key, asOf);
    return record && { value: record.value, timestamp: record.timestamp };
  };
}
