/**
 * Fetches a partition made for its readers as it appended: the wake-up after an append carries
 * the fetch a caught-up reader would make next (from the append's first offset, taken at once),
 * so the reader processes it without a round trip back to the partition. A push is only an
 * earlier fetch: a reader uses one when it would fetch from exactly there with bounds that take
 * no fewer records, and soon after it came; otherwise it fetches as always. Kept in memory; lost
 * with a restart.
 */
import { decodeFetch, type EncodedFetch } from "./record-batch";
import type { AppendResult, FetchBounds, FetchResult, TopicPartition } from "./types";
import { topicPartition } from "../names";

/** What a wake-up after an append carries: the partition's fetch from `from` with `bounds`, which reached the end of the log. */
export interface PushedFetch {
  readonly tp: TopicPartition;
  readonly from: number;
  readonly bounds: FetchBounds;
  readonly fetch: EncodedFetch;
}

/** What every wake-up of a task reader tells besides its push: the partition, and its end as the wake-up left. */
export interface WakeTold {
  readonly tp: TopicPartition;
  readonly end: number;
}

/** A partition pushes the records it just appended when they are at most this many bytes (a reader's default fetch takes 1 MiB). */
export const PUSH_MAX_BYTES = 256 * 1024;

/** Pushes kept per partition: wake-ups may overtake each other, and one may come during a run. */
const KEPT_PER_PARTITION = 4;

/**
 * A push older than this is not used: it stands for a fetch made when it was, and records may
 * have gone since (retention, `deleteRecordsBefore`) — a reader that waited that long fetches.
 */
export const PUSH_MAX_AGE_MS = 1_000;

/**
 * What a partition pushes after `appended`: its fetch from the append's first offset, made at
 * once (nothing else can have been appended), when it takes the whole append within
 * `PUSH_MAX_BYTES`; undefined otherwise (readers fetch as always).
 */
export function pushAfterAppend(
  tp: TopicPartition,
  appended: AppendResult,
  fetchEncoded: (tp: TopicPartition, offset: number, bounds: FetchBounds) => EncodedFetch,
): PushedFetch | undefined {
  return pushFrom(tp, appended.baseOffset, appended.count, fetchEncoded);
}

/**
 * What a partition pushes for the `count` records from `from` to its end (the appends a held
 * wake-up gathered, src/log/wake-linger.ts; one append for `pushAfterAppend`): its fetch from
 * there, when it takes them all within `PUSH_MAX_BYTES` and reaches the end; undefined otherwise.
 */
export function pushFrom(
  tp: TopicPartition,
  from: number,
  count: number,
  fetchEncoded: (tp: TopicPartition, offset: number, bounds: FetchBounds) => EncodedFetch,
): PushedFetch | undefined {
  if (count <= 0) return undefined;
  const bounds = { maxRecords: count, maxBytes: PUSH_MAX_BYTES };
  const fetch = fetchEncoded(tp, from, bounds);
  return fetch.nextOffset === fetch.latest ? { tp: { topic: tp.topic, partition: tp.partition }, from, bounds, fetch } : undefined;
}

/** A push and when it was received. */
interface Kept {
  readonly push: PushedFetch;
  readonly at: number;
}

/**
 * Whether `push` holds exactly what a fetch from `from` with `bounds` would have returned when
 * it was made: the push reached the end of the log, and its bounds take no more than `bounds`
 * (every record it took fits them, and no record it left out was there to take).
 */
function answers(push: PushedFetch, from: number, bounds: FetchBounds): boolean {
  return (
    push.from === from && push.fetch.nextOffset === push.fetch.latest && push.bounds.maxBytes <= bounds.maxBytes && push.bounds.maxRecords <= bounds.maxRecords
  );
}

/** A reader's pushed fetches, per input partition (see the module's comment). */
export class PushedFetches {
  private readonly byPartition = new Map<string, Kept[]>();

  /** Keeps `push`, received at `now` (the newest few per partition). */
  offer(push: PushedFetch, now: number): void {
    const key = topicPartition(push.tp);
    const kept = (this.byPartition.get(key) ?? []).filter((p) => p.push.from !== push.from);
    kept.push({ push, at: now });
    if (kept.length > KEPT_PER_PARTITION) kept.shift();
    this.byPartition.set(key, kept);
  }

  /**
   * The fetch from `from` with `bounds`, if a push answers it (it is used once); pushes the
   * reader has passed are dropped, and those still ahead of it are kept.
   */
  take(tp: TopicPartition, from: number, bounds: FetchBounds, now: number): FetchResult | undefined {
    const key = topicPartition(tp);
    const kept = this.byPartition.get(key);
    if (!kept) return undefined;
    const fresh = kept.filter((p) => now - p.at <= PUSH_MAX_AGE_MS);
    const ahead = fresh.filter((p) => p.push.from > from);
    const here = fresh.find((p) => p.push.from === from)?.push;
    if (ahead.length > 0) this.byPartition.set(key, ahead);
    else this.byPartition.delete(key);
    return here && answers(here, from, bounds) ? decodeFetch(here.fetch) : undefined;
  }

  /** Forgets every push (the reader's positions start again: a wipe). */
  clear(): void {
    this.byPartition.clear();
  }

  /** Pushes kept (tests). */
  get size(): number {
    let n = 0;
    for (const kept of this.byPartition.values()) n += kept.length;
    return n;
  }
}
