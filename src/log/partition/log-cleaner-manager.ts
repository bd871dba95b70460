/**
 * When a partition's retention and compaction are due, and where a compaction pass goes next
 * (Kafka's `LogCleanerManager` decides which log is due for cleaning and what of it is cleanable).
 * Pure: from the topic's configuration, the kept range, the cleaner's checkpoint and the clock.
 */
import { compactionDue } from "../compaction";
import { compacts, deletes, localRetention, type TopicConfig } from "../topic-config";
import type { CompactionState } from "./cleaner-checkpoint";

/**
 * A compacted partition that took no append for this long is compacted whatever its dirty ratio:
 * a quiet changelog ends up holding one record per key, so a restore after a quiet period replays
 * the state, not its recent history.
 */
export const QUIET_COMPACTION_MS = 10_000;
/**
 * How often time and size retention are checked at most (Kafka's log.retention.check.interval.ms).
 * Not a period: a check is due only when a row's time is up or the partition grew (see `retentionDueAt`).
 */
export const RETENTION_CHECK_MS = 5 * 60 * 1000;
/** After a failed maintenance step (retention, compaction, tiering), the partition's alarm tries again this much later. */
export const MAINTENANCE_RETRY_MS = 30_000;

/** The kept range, as far as the schedule needs it. */
export interface KeptRange {
  readonly logStart: number;
  readonly logEnd: number;
}

/**
 * When the kept rows' time is up for time retention: no sooner than this, the oldest row it may
 * remove is past `retention.ms` (a time no later than the truth: at worst a check removes nothing
 * and learns the next). Null: no row it may remove; undefined: not known (after a restart).
 */
export type RowsExpireAt = number | null | undefined;

/**
 * When retention is next due: when the oldest row's time is up (`expiresAt`) for time retention,
 * and after the partition grew for size retention (`grew`: appends since the last check, or not
 * known), never sooner than RETENTION_CHECK_MS after the last check. Undefined: not as things
 * stand — a partition that takes no appends and whose rows are young arms nothing.
 */
export function retentionDueAt(config: TopicConfig, state: Pick<CompactionState, "lastRetention">, expiresAt: RowsExpireAt, grew: boolean): number | undefined {
  if (!deletes(config)) return undefined;
  const checked = state.lastRetention + RETENTION_CHECK_MS;
  let due: number | undefined;
  if (config["retention.ms"] >= 0 && expiresAt !== null) due = Math.max(expiresAt ?? checked, checked);
  if (config["retention.bytes"] >= 0 && grew) due = checked;
  return due;
}

/**
 * When tiered storage next moves rows to R2 (see tiering.ts), on retention's cadence: when the
 * oldest local row is past local.retention.ms (`localExpiresAt`, as `RowsExpireAt`), and after the
 * partition grew for local.retention.bytes, never sooner than RETENTION_CHECK_MS after the last
 * retention check. Undefined: the topic is not tiered, or nothing is due as things stand.
 */
export function tieringDueAt(config: TopicConfig, lastRetention: number, localExpiresAt: RowsExpireAt, grew: boolean): number | undefined {
  const local = localRetention(config);
  if (!local) return undefined;
  const checked = lastRetention + RETENTION_CHECK_MS;
  let due: number | undefined;
  if (local.ms >= 0 && localExpiresAt !== null) due = Math.max(localExpiresAt ?? checked, checked);
  if (local.bytes >= 0 && grew) due = checked;
  return due;
}

/** What the schedule knows of the partition beyond its checkpoint. */
export interface ScheduleInputs {
  /** When this object last appended (unknown after a restart). */
  readonly lastAppendAt: number | undefined;
  /** Since when the partition took no append: the last append, or when the object started (a compaction's quiet counts from then, not from each look). */
  readonly quietSince: number;
  /** See `RowsExpireAt`. */
  readonly expiresAt: RowsExpireAt;
}

/**
 * When maintenance (retention, compaction) is next due for a partition that keeps records;
 * undefined: never, as things stand.
 */
export function maintenanceDueAt(config: TopicConfig, range: KeptRange, state: CompactionState, inputs: ScheduleInputs, now: number): number | undefined {
  let due: number | undefined;
  const sooner = (at: number | undefined) => (due = at === undefined ? due : due === undefined ? at : Math.min(due, at));
  const grew = inputs.lastAppendAt === undefined || inputs.lastAppendAt >= state.lastRetention;
  sooner(retentionDueAt(config, state, inputs.expiresAt, grew));
  if (compacts(config)) sooner(compactionDueAt(config, range, state, inputs.quietSince, now));
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
