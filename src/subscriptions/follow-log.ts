/**
 * Following log partitions from positions: what a store's watch (watch-loop.ts) and a topic's
 * tail (tail-loop.ts) share (docs/subscriptions.md). Pull, not push: it reads one bounded batch
 * of a partition, hands its records to the follower one at a time — each hand-off waits while the
 * subscriber does not read (the stream's back-pressure) — and only then reads again. So a slow
 * subscriber holds one batch in memory and lags behind in the log, never in a buffer. Offsets
 * keep their meaning, so a record missing between the position and the next one read is gone
 * (compaction, retention): the follower hears of the gap and says how to go on. An idle
 * partition is read again after a wait, backing off (a bounded poll); a stream with nothing to
 * send for a while sends a keep-alive comment.
 */
import { OffsetOutOfRange } from "../log/errors";
import type { FetchBounds, FetchResult, LogRecord, OffsetRange } from "../log/types";

/** The most one read of a partition brings: what a stream holds in memory at most (beside a watch's snapshot). */
export const FOLLOW_FETCH: FetchBounds = { maxRecords: 500, maxBytes: 256 * 1024 };
/** An idle partition is read again after this long, doubling up to `MAX_IDLE_MS`. */
export const MIN_IDLE_MS = 50;
export const MAX_IDLE_MS = 1_000;
/**
 * A stream with nothing to send sends a comment this often: proxies close a response that sends
 * nothing for a while (Cloudflare's after 100 s), and the subscriber would reconnect for nothing.
 */
export const KEEP_ALIVE_MS = 30_000;

/** An event of a stream, as server-sent events carry it (no `event`: a default `message`). */
export interface StreamEvent {
  readonly event?: string;
  readonly data: string;
  readonly id?: string;
  /** Server-sent events' `retry`: how long a browser's EventSource waits before it reconnects (ms). */
  readonly retry?: number;
}

/** How a stream went on when the log no longer held where it stood (counted per isolate: the metrics). */
export type RecoveryKind = "snapshot" | "resync" | "gap";

/** The subscriber's end of a stream. */
export interface StreamPorts {
  /** Sends an event; resolves once the stream took it (waits while the subscriber does not read). */
  send(event: StreamEvent): Promise<void>;
  /** The subscriber went away. */
  closed(): boolean;
  /** Waits `ms`, or less if the subscriber goes away. */
  idle(ms: number): Promise<void>;
  /** Sends a comment (no event): the connection is alive. */
  keepAlive(): Promise<void>;
  /** Milliseconds since some epoch (the keep-alive's clock). */
  now(): number;
  /** A recovery happened (for the metrics). */
  recovered?(kind: RecoveryKind): void;
}

/** The log a stream follows, by partition of its topic. */
export interface FollowedLog {
  fetch(partition: number, offset: number, bounds: FetchBounds): Promise<FetchResult>;
  offsets(partition: number): Promise<OffsetRange>;
}

/** A stream's sending side: remembers whether it sent anything, and when it last did (the keep-alive's clock). */
export class Subscriber {
  sentAny = false;
  lastSentAt: number;

  constructor(readonly ports: StreamPorts) {
    this.lastSentAt = ports.now();
  }

  async send(event: StreamEvent): Promise<void> {
    this.sentAny = true;
    await this.ports.send(event);
    this.lastSentAt = this.ports.now();
  }

  closed(): boolean {
    return this.ports.closed();
  }
}

/** What a follower does once offsets `from` up to `to` of a partition are gone. */
export type AfterGap =
  /** Go on reading from `to`. */
  | "resume"
  /** The follower set new positions: read again from them (what was read past the gap is dropped). */
  | "restart";

export interface Follower {
  readonly partitions: readonly number[];
  /** Where each partition stands: the next offset to read. Advanced past each record before the record is handed over. */
  readonly positions: Map<number, number>;
  /** A record of `partition`, in offset order. */
  record(partition: number, record: LogRecord): Promise<void>;
  /**
   * The partition no longer holds offsets `from` (included) up to `to` (excluded): removed by
   * compaction or retention. `to` is below `from` when the partition ends before the position (a
   * log that started over): then `to` is its end.
   */
  gap(partition: number, from: number, to: number): Promise<AfterGap>;
}

/** One thing a read found at a position: a record that follows it, or offsets that are gone. */
export type LogStep = { readonly record: LogRecord } | { readonly gap: { readonly from: number; readonly to: number } };

/** The steps of `records`, read from `position` of a partition ending at `latest`: each record, and a gap before any record not at the offset expected. */
export function stepsFrom(records: readonly LogRecord[], position: number, latest: number): LogStep[] {
  if (records.length === 0) return latest > position ? [{ gap: { from: position, to: latest } }] : [];
  const steps: LogStep[] = [];
  let expected = position;
  for (const record of records) {
    if (record.offset !== expected) steps.push({ gap: { from: expected, to: record.offset } });
    steps.push({ record });
    expected = record.offset + 1;
  }
  return steps;
}

/** Where a position outside what a partition keeps goes on: its earliest offset below it, its end beyond it; undefined when it is inside. */
export function outsideRange(position: number, { earliest, latest }: OffsetRange): number | undefined {
  if (position < earliest) return earliest;
  if (position > latest) return latest;
  return undefined;
}

/** Follows the log until the subscriber goes away (log errors other than a position out of range end it). */
export async function followLog(follower: Follower, log: FollowedLog, subscriber: Subscriber): Promise<void> {
  const { ports } = subscriber;
  const { positions } = follower;
  let idleMs = MIN_IDLE_MS;
  while (!subscriber.closed()) {
    let read = false;
    rounds: for (const partition of follower.partitions) {
      const position = positions.get(partition) ?? 0;
      let steps: LogStep[];
      try {
        const result = await log.fetch(partition, position, FOLLOW_FETCH);
        steps = stepsFrom(result.records, position, result.latest);
      } catch (error) {
        // Below what retention keeps, or beyond the end of a log that started over.
        if (!(error instanceof OffsetOutOfRange)) throw error;
        const to = outsideRange(position, await log.offsets(partition));
        // The partition moved between the two calls and holds the position now: read it next round.
        steps = to === undefined ? [] : [{ gap: { from: position, to } }];
      }
      for (const step of steps) {
        if (subscriber.closed()) return;
        read = true;
        if ("record" in step) {
          positions.set(partition, step.record.offset + 1);
          await follower.record(partition, step.record);
          continue;
        }
        if ((await follower.gap(partition, step.gap.from, step.gap.to)) === "restart") break rounds;
        positions.set(partition, step.gap.to);
      }
    }
    if (read) idleMs = MIN_IDLE_MS;
    else {
      if (ports.now() - subscriber.lastSentAt >= KEEP_ALIVE_MS) {
        await ports.keepAlive();
        subscriber.lastSentAt = ports.now();
      }
      await ports.idle(idleMs);
      idleMs = Math.min(MAX_IDLE_MS, idleMs * 2);
    }
  }
}
