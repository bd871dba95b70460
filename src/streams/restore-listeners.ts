/**
 * What an application may be told about its stores' restoration and standby updates (Kafka
 * Streams' `StateRestoreListener` and `StandbyUpdateListener`), per changelog partition and store.
 * Part of the library's API, given with the application's options; the restore worker calls them.
 */
import type { TopicPartition } from "../log/types";

/** Kafka Streams' StateRestoreListener, per changelog partition and store. */
export interface RestoreListener {
  onRestoreStart?(tp: TopicPartition, store: string, startOffset: number, endOffset: number): void;
  onBatchRestored?(tp: TopicPartition, store: string, batchEndOffset: number, numRestored: number): void;
  onRestoreEnd?(tp: TopicPartition, store: string, totalRestored: number): void;
  /** Restoration stopped before the end (the instance was revoked, closed or wiped). */
  onRestoreSuspended?(tp: TopicPartition, store: string, totalRestored: number): void;
}

/** Kafka Streams' StandbyUpdateListener. */
export interface StandbyUpdateListener {
  onUpdateStart?(tp: TopicPartition, store: string, startOffset: number): void;
  onBatchLoaded?(tp: TopicPartition, store: string, batchEndOffset: number, batchSize: number, currentEndOffset: number): void;
  onUpdateSuspended?(tp: TopicPartition, store: string, storeOffset: number, currentEndOffset: number, reason: "promoted" | "migrated"): void;
}
