/**
 * Time and size retention (Kafka's `UnifiedLog.deleteOldSegments`): records past `retention.ms`
 * or beyond `retention.bytes` go, whole rows, oldest first, by moving the log start up. The
 * decisions are pure (`timeRetentionStart`, `sizeRetentionStart`); `LogRetention` reads what they
 * need and applies them.
 */
import { sql } from "../../storage/sql";
import { compacts, type TopicConfig } from "../topic-config";
import type { CleanerCheckpoint } from "./cleaner-checkpoint";
import type { LocalLog, LogRange } from "./local-log";
import type { PartitionTransactions } from "./transactions";

/** A stored row's extent and size, oldest first. */
export interface RowExtent {
  readonly base_offset: number;
  readonly span: number;
  readonly bytes: number;
}

/**
 * Where time retention puts the log start: at the first row still young (`firstYoung`, undefined
 * when none is), never past the log end nor past the row `newest` a compacted topic keeps.
 */
export function timeRetentionStart(logStart: number, logEnd: number, firstYoung: number | undefined, newest: number): number {
  return Math.max(logStart, Math.min(firstYoung ?? logEnd, newest));
}

/**
 * Where size retention puts the log start: past the oldest rows from `start` on while the
 * partition keeps `over` bytes more than retention.bytes, never past the row `newest`.
 */
export function sizeRetentionStart(start: number, over: number, newest: number, rows: Iterable<RowExtent>): number {
  for (const row of rows) {
    if (over <= 0 || row.base_offset >= newest) break;
    over -= row.bytes;
    start = Math.max(start, row.base_offset + row.span);
  }
  return start;
}

export class LogRetention {
  constructor(
    private readonly tx: PartitionTransactions,
    private readonly log: LocalLog,
    private readonly checkpoint: CleanerCheckpoint,
  ) {}

  private get db() {
    return this.tx.db;
  }

  /**
   * When the oldest row time retention may remove is past `retention.ms` (see `RowsExpireAt` in
   * log-cleaner-manager.ts): a row goes once both its records' timestamps and its arrival are that
   * old; a compacted topic's newest row never goes. Null: no such row.
   */
  expiresAt(range: LogRange, config: TopicConfig): number | null {
    if (config["retention.ms"] < 0) return null;
    const newest = compacts(config)
      ? (this.db.one<{ base: number | null }>(sql`SELECT MAX(base_offset) AS base FROM record_batches`)?.base ?? range.logEnd)
      : range.logEnd;
    const oldest = this.db.one<{ at: number | null }>(
      sql`SELECT MIN(MAX(max_timestamp, append_time)) AS at FROM record_batches WHERE base_offset + span > ${range.logStart} AND base_offset < ${newest}`,
    )?.at;
    // It goes once older than retention.ms: a millisecond after its time plus retention.ms.
    return oldest === null || oldest === undefined ? null : oldest + config["retention.ms"] + 1;
  }

  /** Applies retention at `now`; returns the records that went. Call inside a transaction. */
  apply(range: LogRange, config: TopicConfig, now: number): number {
    const state = this.checkpoint.read(range.logStart);
    // A compacted topic keeps its newest row whatever its age: it holds the newest record, whose
    // input position a restored task resumes from (I5).
    const newest = compacts(config)
      ? (this.db.one<{ base: number | null }>(sql`SELECT MAX(base_offset) AS base FROM record_batches`)?.base ?? range.logEnd)
      : range.logEnd;
    let start = range.logStart;
    if (config["retention.ms"] >= 0) {
      const cutoff = now - config["retention.ms"];
      // A row goes once both its records' timestamps and its arrival are older than retention.ms:
      // records appended just now with old timestamps stay a while (as in Kafka's active segment).
      const kept = this.db.one<{ base: number | null }>(
        sql`SELECT MIN(base_offset) AS base FROM record_batches WHERE (max_timestamp >= ${cutoff} OR append_time >= ${cutoff}) AND base_offset + span > ${range.logStart}`,
      )?.base;
      start = timeRetentionStart(start, range.logEnd, kept ?? undefined, newest);
    }
    if (config["retention.bytes"] >= 0) {
      const over = this.log.kept(range.logStart).bytes - config["retention.bytes"];
      const rows = this.db.cursor<{ base_offset: number; span: number; bytes: number }>(
        sql`SELECT base_offset, span, bytes FROM record_batches WHERE base_offset + span > ${start} ORDER BY base_offset`,
      );
      start = sizeRetentionStart(start, over, newest, rows);
    }
    start = Math.min(start, range.logEnd);
    // When it ran is stored only with what it deleted (see CleanerCheckpoint's `note`).
    if (start > range.logStart) this.checkpoint.write({ ...state, lastRetention: now });
    else this.checkpoint.note({ ...state, lastRetention: now });
    return this.log.advanceStart(range, start);
  }
}
