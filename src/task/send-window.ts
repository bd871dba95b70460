/**
 * How much of the outbox goes to the log at once: a partition's batches sent but whose
 * acknowledgements are not written down yet must stay within what the log remembers for retries
 * (its producer state keeps the last `REMEMBERED_BATCHES` per producer), or a resend after a
 * crash could no longer be answered as a duplicate. Pure.
 */
import { REMEMBERED_BATCHES } from "../log/types";
import { topicPartition } from "../names";

/**
 * The longest prefix of `group` (oldest first) that keeps every partition's sent but unrecorded
 * batches, `unrecorded` included, within what the log remembers for retries. Empty only when
 * some partition is already at the limit: its acknowledgements must be recorded first.
 */
export function sendable<B extends { topic: string; partition: number }>(
  group: readonly B[],
  unrecorded: ReadonlyMap<string, number>,
  limit = REMEMBERED_BATCHES,
): B[] {
  const counts = new Map(unrecorded);
  const window: B[] = [];
  for (const batch of group) {
    const key = topicPartition(batch);
    const count = (counts.get(key) ?? 0) + 1;
    if (count > limit) break;
    counts.set(key, count);
    window.push(batch);
  }
  return window;
}
