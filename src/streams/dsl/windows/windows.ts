/**
 * `Windows`: what every window type of an aggregation says about itself (Kafka's `Windows<W>`,
 * which here `SlidingWindows` and `SessionWindows` implement as well). The grouped and cogrouped
 * streams ask it everything that differs between window types: which store keeps the results, how
 * long they are kept at least, when a window is final, and the processor that aggregates into it.
 * A new window type is one class implementing this interface: `windowedBy` takes it by its
 * `storeKind` (`WindowStoreWindows` or `SessionStoreWindows`), so no other file names it.
 *
 * Grace is the time, in stream time, a window keeps accepting out-of-order records after it ends;
 * once stream time has passed a window's close time the window is final and records for it are
 * late (dropped, counted). Stream time is the largest timestamp the operator has seen (kept in its
 * store).
 */
import { TopologyError } from "../../errors";
import type { AnySupplier } from "../../topology/graph";
import type { Window } from "../../windowed";
import type { OldValues } from "../change";
import type { EmitStrategy } from "../emit-strategy";
import type { Aggregation } from "../processors";

export interface Windows {
  /**
   * The store an aggregation keeps its results in: a window store, or a session store for windows
   * that grow and merge with the records (which also makes the stream a `SessionWindowedKStream`).
   */
  readonly storeKind: "window" | "session";
  readonly graceMs: number;
  /** The shortest retention that keeps every open window: the default of `Materialized.retentionMs`. */
  readonly minRetentionMs: number;
  /** Stream time from which the window is final. */
  closeTime(window: Window): number;
  /** The processor folding each record into its windows' aggregates, kept in `aggregation.storeName`. */
  aggregateProcessor<K, V, VA>(aggregation: WindowAggregation<K, V, VA>): AnySupplier;
}

/** Windows kept in a window store (time and sliding windows): `windowedBy` makes a `TimeWindowedKStream` of them. */
export interface WindowStoreWindows extends Windows {
  readonly storeKind: "window";
}

/** Windows kept in a session store, which grow and merge with the records: `windowedBy` makes a `SessionWindowedKStream` of them. */
export interface SessionStoreWindows extends Windows {
  readonly storeKind: "session";
}

/** What an aggregation over windows folds, and where: the same for every window type. */
export interface WindowAggregation<K, V, VA> {
  readonly storeName: string;
  /** How long windows are kept (at least `minRetentionMs`, see `windowRetention`). */
  readonly retentionMs: number;
  readonly oldValues: OldValues;
  /** When results are forwarded; default on every update. */
  readonly emit?: EmitStrategy;
  /** Folds a record's value into its window's aggregate (undefined: the window has none yet). */
  readonly step: Aggregation<K, V, VA>;
  /** For windows that merge (sessions): how the aggregates of merged windows combine. */
  readonly merge?: WindowMerge<K, VA>;
}

/** Merged sessions' aggregate: `initializer()`, combined with each session's aggregate by `merger` (Kafka's `Merger`). */
export interface WindowMerge<K, VA> {
  readonly initializer: () => VA;
  readonly merger: (key: K, left: VA, right: VA) => VA;
}

/** How long a windowed store keeps windows: `Materialized.retentionMs`, at least as long as they stay open. */
export function windowRetention(windows: Windows, materialized: { readonly retentionMs?: number }): number {
  const retentionMs = materialized.retentionMs ?? windows.minRetentionMs;
  if (!Number.isSafeInteger(retentionMs) || retentionMs < windows.minRetentionMs) {
    throw new TopologyError(`retention ${retentionMs} ms is shorter than the windows stay open (${windows.minRetentionMs} ms)`);
  }
  return retentionMs;
}

/** A duration given to a window type, checked: an integer of milliseconds, at least `min`. */
export function checkDuration(what: string, ms: number, min: number): number {
  if (!Number.isSafeInteger(ms) || ms < min) throw new TopologyError(`${what} must be an integer of milliseconds >= ${min}, got ${ms}`);
  return ms;
}
