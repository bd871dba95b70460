/**
 * When a partition's retention and compaction are due, and where a compaction pass goes next
 * (Kafka's `LogCleanerManager` decides which log is due for cleaning and what of it is cleanable).
 * Pure: from the topic's configuration, the kept range, the cleaner's checkpoint and the clock.
 */
import { compactionDue } from "../compaction";
import { compacts, deletes, type TopicConfig } from "../topic-config";
import type { CompactionState } from "./cleaner-checkpoint";

/**
 * A compacted partition that took no append for this long is compacted whatever its dirty ratio:
 * a quiet changelog ends up holding one record per key, so a restore after a quiet period replays
 * the state, not its recent history.
 */
export const QUIET_COMPACTION_MS = 10_000;
/** How often time and size retention are checked at most (Kafka's log.retention.check.interval.ms). */
export const RETENTION_CHECK_MS = 5 * 60 * 1000;

/** The kept range, as far as the schedule needs it. */
export interface KeptRange {
  readonly logStart: number;
  readonly logEnd: number;
}

/**
 * When maintenance (retention, compaction) is next due for a partition that keeps records;
 * undefined: never, as things stand. `lastAppendAt` is when this object last appended (unknown
 * after a restart).
 */
export function maintenanceDueAt(
  config: TopicConfig,
  range: KeptRange,
  state: CompactionState,
  lastAppendAt: number | undefined,
  now: number,
): number | undefined {
  let due: number | undefined;
  const sooner = (at: number | undefined) => (due = at === undefined ? due : due === undefined ? at : Math.min(due, at));
  if (deletes(config) && (config["retention.ms"] >= 0 || config["retention.bytes"] >= 0)) sooner(state.lastRetention + RETENTION_CHECK_MS);
  if (compacts(config)) sooner(compactionDueAt(config, range, state, lastAppendAt, now));
  return due;
}

/**
 * When compaction is next due: at once while a sweep is under way, or when Kafka's dirty ratio
 * is reached; when a tombstone's time is up; once the partition has been quiet for
 * QUIET_COMPACTION_MS with records not yet compacted; within max.compaction.lag.ms of them.
 */
export function compactionDueAt(
  config: TopicConfig,
  range: Pick<KeptRange, "logEnd">,
  state: CompactionState,
  lastAppendAt: number | undefined,
  now: number,
): number | undefined {
  if (state.sweepCursor !== null) return now;
  const dirty = range.logEnd - state.indexedTo;
  if (compactionDue(dirty, state.cleanRecords)) return now;
  let due = state.tombstonesDue ?? undefined;
  if (dirty > 0) {
    const quiet = (lastAppendAt ?? now) + QUIET_COMPACTION_MS;
    due = due === undefined ? quiet : Math.min(due, quiet);
    if (config["max.compaction.lag.ms"] >= 0) due = Math.min(due, now + config["max.compaction.lag.ms"]);
  }
  return due;
}

/**
 * The checkpoint after the index phase read up to `indexedTo`. A sweep starts once the index
 * covers all that is `cleanable` (one sweep per pass, as Kafka cleans the dirty section it has
 * mapped), when that is more than the last sweep covered or a tombstone's time is up; it sweeps
 * from the log start to the index's end.
 */
export function afterIndexing(state: CompactionState, indexedTo: number, cleanable: number, logStart: number, now: number): CompactionState {
  let { sweepCursor, sweepTo, tombstonesDue } = state;
  if (sweepCursor === null && indexedTo >= cleanable && (indexedTo > sweepTo || (tombstonesDue !== null && tombstonesDue <= now))) {
    sweepCursor = logStart;
    sweepTo = indexedTo;
    tombstonesDue = null;
  }
  return { ...state, indexedTo, sweepCursor, sweepTo, tombstonesDue };
}
