/**
 * The synchronous half of tiered storage (Kafka's KIP-405) inside a partition: which local rows
 * make the next remote segment, recording a segment once its object is in R2 (its row in, the
 * local rows out, in one transaction), where reads below the local part go, and the part of
 * retention that removes remote segments. The asynchronous half — R2 itself — is
 * src/log/remote-log-manager.ts.
 */
import { sql } from "../../storage/sql";
import { localRetention, type TopicConfig } from "../topic-config";
import type { LocalLog, LogRange } from "./local-log";
import type { RemoteSegment, RemoteSegments } from "./remote-segments";
import type { SegmentBatch, SegmentHeader } from "./segment-format";
import { remoteRetentionStart, rowsToTier, type TierableRow } from "./tiering";
import type { PartitionTransactions } from "./transactions";

/** The rows of the next segment, read whole. */
export interface SegmentToTier {
  readonly header: Omit<SegmentHeader, "batches">;
  readonly batches: SegmentBatch[];
}

export class TieredLog {
  constructor(
    private readonly tx: PartitionTransactions,
    private readonly log: LocalLog,
    readonly segments: RemoteSegments,
  ) {}

  private get db() {
    return this.tx.db;
  }

  /** The oldest local rows beyond `local.retention.*`, as one segment; undefined when none is. */
  next(range: LogRange, config: TopicConfig, now: number): SegmentToTier | undefined {
    const local = localRetention(config);
    if (!local) return undefined;
    const localStart = this.segments.localStart(range.logStart);
    // The newest row stays (the active segment), whatever its age.
    const rows = this.db.cursor<TierableRow>(
      sql`SELECT base_offset, span, bytes, max_timestamp, append_time FROM record_batches
          WHERE base_offset + span > ${localStart} AND base_offset < (SELECT MAX(base_offset) FROM record_batches) ORDER BY base_offset`,
    );
    const count = rowsToTier(rows, local, this.log.kept(localStart).bytes, now);
    if (count === 0) return undefined;
    const batches = this.db.all<SegmentBatch>(
      sql`SELECT base_offset, count, span, bytes, append_time, max_timestamp, sizes, offsets, records, producer_id, producer_epoch, base_sequence
          FROM record_batches WHERE base_offset + span > ${localStart} ORDER BY base_offset LIMIT ${count}`,
    );
    const last = batches[batches.length - 1]!;
    return {
      header: { topic: range.topic, partition: range.partition, base: batches[0]!.base_offset, last: last.base_offset + last.span - 1 },
      batches,
    };
  }

  /**
   * Records a segment whose object is in R2: its row in, the local rows it holds out, and the note
   * to delete its object (written before the put) dropped. Refused (false) when those rows are no
   * longer the oldest local ones as they were read (the log start moved meanwhile): the object is
   * then left to delete. Call inside a transaction.
   */
  record(range: LogRange, tiered: SegmentToTier, key: string): boolean {
    const { base, last } = tiered.header;
    const local = this.db.one<{ rows: number; first: number | null; end: number | null }>(
      sql`SELECT COUNT(*) AS rows, MIN(base_offset) AS first, MAX(base_offset + span) AS end FROM record_batches WHERE base_offset <= ${last}`,
    );
    if (local?.rows !== tiered.batches.length || local.first !== base || local.end !== last + 1) {
      this.segments.toDelete(key);
      return false;
    }
    let records = 0;
    let bytes = 0;
    let maxTimestamp = 0;
    let maxAppendTime = 0;
    for (const b of tiered.batches) {
      records += b.count;
      bytes += b.bytes;
      maxTimestamp = Math.max(maxTimestamp, b.max_timestamp);
      maxAppendTime = Math.max(maxAppendTime, b.append_time);
    }
    this.segments.add({
      base_offset: base,
      last_offset: last,
      records,
      bytes,
      max_timestamp: maxTimestamp,
      max_append_time: maxAppendTime,
      object_key: key,
    });
    this.log.removeBelow(range, last + 1);
    // The note written before the put (PartitionStore.segmentUploading): the object is a segment's now.
    this.segments.deleted(key);
    return true;
  }

  /** The remote segment holding `offset`, when `offset` is kept and below the local part. */
  segmentFor(range: LogRange, offset: number): RemoteSegment | undefined {
    if (offset < range.logStart || offset >= this.segments.localStart(range.logStart)) return undefined;
    return this.segments.at(offset);
  }

  /**
   * Retention over remote segments (Kafka deletes remote segments by the same retention.ms and
   * retention.bytes): the log start moves past the oldest ones due, whose objects are then left to
   * delete (RemoteSegments' `dropBelow`). Returns whether segments remain (then the local rows,
   * younger, keep). Call inside a transaction.
   */
  applyRetention(range: LogRange, config: TopicConfig, now: number): { deleted: number; remaining: boolean } {
    if (this.segments.localStart(range.logStart) === range.logStart) return { deleted: 0, remaining: false };
    const total = this.segments.totals(range.logStart).bytes + this.log.kept(this.segments.localStart(range.logStart)).bytes;
    const start = remoteRetentionStart(this.segments.from(range.logStart), config, total, now);
    let deleted = 0;
    if (start !== undefined) {
      const before = this.segments.totals(range.logStart).records;
      this.log.advanceStart(range, start);
      deleted = before - this.segments.totals(range.logStart).records;
    }
    return { deleted, remaining: this.segments.localStart(range.logStart) > range.logStart };
  }

  /** When the oldest local row a tiering may move is past `local.retention.ms`; null: none is. */
  localExpiresAt(range: LogRange, config: TopicConfig): number | null {
    const local = localRetention(config);
    if (!local || local.ms < 0) return null;
    const oldest = this.db.one<{ at: number | null }>(
      sql`SELECT MIN(MAX(max_timestamp, append_time)) AS at FROM record_batches
          WHERE base_offset + span > ${this.segments.localStart(range.logStart)} AND base_offset < (SELECT MAX(base_offset) FROM record_batches)`,
    )?.at;
    return oldest === null || oldest === undefined ? null : oldest + local.ms + 1;
  }
}
