/**
 * Lag in time: the age of the oldest input record an instance has not processed yet, what an
 * alert wants (records waiting say how much, not for how long). Computed from what the instance's
 * fetches saw, without calling the log: a fetch from the instance's processed position returns,
 * first, the oldest record waiting there (its `head`). Between a commit and the next fetch (a
 * moment, under a backlog) the head is the one before, an upper bound when records are stamped
 * in the order they are appended. Timestamps are the records' own (the producer's, or the log's
 * append time when it gave none), so records stamped in the past look old. Pure.
 */
import type { TopicPartition } from "../log/types";
import { topicPartition } from "../names";

/** The first record a fetch from the processed position returned: where it is and when it was stamped. */
export interface InputHead {
  readonly offset: number;
  readonly timestamp: number;
}

/**
 * The timestamp of the oldest record known to wait in `partitions` (not processed: at or after the
 * position, before the end); null when none is known to wait.
 */
export function oldestWaiting(
  partitions: readonly TopicPartition[],
  positions: Readonly<Record<string, number>>,
  ends: ReadonlyMap<string, number>,
  heads: ReadonlyMap<string, InputHead>,
): number | null {
  let oldest: number | null = null;
  for (const tp of partitions) {
    const key = topicPartition(tp);
    const position = positions[key] ?? 0;
    const end = ends.get(key);
    const head = heads.get(key);
    if (end === undefined || end <= position || !head || head.offset > position) continue;
    if (oldest === null || head.timestamp < oldest) oldest = head.timestamp;
  }
  return oldest;
}

/** How long the oldest waiting record has waited at `now` (0 when none waits; a timestamp in the future counts as now). */
export function ageMs(oldest: number | null, now: number): number {
  return oldest === null ? 0 : Math.max(0, now - oldest);
}
