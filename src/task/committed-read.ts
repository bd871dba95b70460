/**
 * A subscription's snapshot (docs/subscriptions.md): what a store has committed, and the offset
 * of its changelog partition that state is exactly the fold of. The store's committed state is
 * what SQLite holds (never the held writes of a deferred commit, nor the record cache); it equals
 * the changelog below an offset once no changelog batch of that partition is waiting in the
 * outbox unacknowledged (the commit wrote the store and the batch in one transaction, I2, and only
 * this instance appends to the partition, I3). The offset is then the checkpoint (I1) advanced by
 * the acknowledgements the instance has not written down yet (outbox-sender.ts, `Owed`).
 */

/** What one changelog partition of the instance stands at, for `committedOffset`. */
export interface ChangelogStanding {
  /** The stored checkpoint (I1): the store reflects the changelog below it; null before any. */
  readonly checkpoint: number | null;
  /** Ends of the partition's batches the log acknowledged that the instance has not written down yet. */
  readonly ackedEnds: readonly number[];
  /** Changelog batches of the partition in the outbox without an acknowledgement (sent or not). */
  readonly waiting: number;
}

/**
 * The changelog offset the committed store reflects exactly; `"waiting"` while a changelog batch
 * of its partition waits for the log (the store holds writes the changelog may not have yet), and
 * null when the store reflects nothing of it (no checkpoint and nothing acknowledged: the
 * changelog holds nothing of this store, read it from its earliest offset).
 */
export function committedOffset({ checkpoint, ackedEnds, waiting }: ChangelogStanding): number | null | "waiting" {
  if (waiting > 0) return "waiting";
  return ackedEnds.reduce<number | null>((at, end) => Math.max(at ?? 0, end), checkpoint);
}
