/**
 * What tiered storage moves and deletes (Kafka's RemoteLogManager decides which closed segments to
 * copy and which remote segments retention removes). Pure: from rows and segments as read.
 */
import type { TopicConfig } from "../topic-config";

/** A segment holds at most this many bytes of records (a few MB: one R2 put, one read a fetch below the local part pays for). */
export const SEGMENT_MAX_BYTES = 4 * 1024 * 1024;
/** … and at most this many stored rows. */
export const SEGMENT_MAX_ROWS = 2_000;

/** A local row as tiering sees it, oldest first. */
export type TierableRow = {
  readonly base_offset: number;
  readonly span: number;
  readonly bytes: number;
  readonly max_timestamp: number;
  readonly append_time: number;
};

/** A remote segment as retention sees it, oldest first. */
export type RemoteExtent = {
  readonly base_offset: number;
  readonly last_offset: number;
  readonly bytes: number;
  readonly max_timestamp: number;
  readonly max_append_time: number;
};

/**
 * How many of the oldest local rows make the next segment: rows beyond local retention — older
 * than `ms` (both their records' timestamps and their arrival, as retention judges a row), or
 * while the local part keeps more than `bytes` — up to a segment's size. `rows` excludes the
 * newest row, which never moves (Kafka never tiers the active segment). 0: nothing to move.
 */
export function rowsToTier(rows: Iterable<TierableRow>, local: { readonly ms: number; readonly bytes: number }, localBytes: number, now: number): number {
  let over = local.bytes >= 0 ? localBytes - local.bytes : 0;
  const cutoff = local.ms >= 0 ? now - local.ms : undefined;
  let taken = 0;
  let bytes = 0;
  for (const row of rows) {
    const old = cutoff !== undefined && row.max_timestamp < cutoff && row.append_time < cutoff;
    if (!old && over <= 0) break;
    if (taken > 0 && (taken >= SEGMENT_MAX_ROWS || bytes + row.bytes > SEGMENT_MAX_BYTES)) break;
    taken++;
    bytes += row.bytes;
    over -= row.bytes;
  }
  return taken;
}

/**
 * Where retention puts the log start while remote segments hold its oldest records: past the
 * oldest segments, whole, while they are past `retention.ms` (their newest record and arrival) or
 * the log (`totalBytes`, remote and local) keeps more than `retention.bytes`. Undefined: none goes.
 */
export function remoteRetentionStart(segments: Iterable<RemoteExtent>, config: TopicConfig, totalBytes: number, now: number): number | undefined {
  const cutoff = config["retention.ms"] >= 0 ? now - config["retention.ms"] : undefined;
  let over = config["retention.bytes"] >= 0 ? totalBytes - config["retention.bytes"] : 0;
  let start: number | undefined;
  for (const segment of segments) {
    const old = cutoff !== undefined && segment.max_timestamp < cutoff && segment.max_append_time < cutoff;
    if (!old && over <= 0) break;
    over -= segment.bytes;
    start = segment.last_offset + 1;
  }
  return start;
}
