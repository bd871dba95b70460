/**
 * Checkpoint rules (invariant I1), as pure functions: for every changelog partition of a task
 * instance, the checkpointed offset `o` means the store reflects every changelog record below `o`
 * and nothing else. The task and the restore path only ever write checkpoints computed here.
 *
 * There is deliberately no rule for "the checkpoint on close": closing (clean or dirty, while
 * restoring or running) writes nothing new, because the stored checkpoint only ever moves by the
 * rules below, inside the transaction that changes the store. No offset is remembered anywhere
 * else, so none can outlive a wipe and reappear in a checkpoint.
 */
/** What one changelog partition of a task instance knows right now. */
export interface ChangelogProgress {
  /** The incarnation of the store: bumped by every wipe. */
  readonly incarnation: number;
  /** Offset below which the store reflects the changelog (null after a wipe, before any restore). */
  readonly checkpoint: number | null;
}

/** The log acknowledged a changelog batch sent by the incarnation `incarnation`. */
export interface ChangelogAck {
  readonly incarnation: number;
  /** One past the offset of the batch's last record. */
  readonly endOffset: number;
}

/**
 * After an acknowledged changelog send: the store of this incarnation wrote those records before
 * sending them, so it reflects the changelog up to the batch's end. An acknowledgement for another
 * incarnation (the store was wiped while the batch was in flight) changes nothing.
 */
export function checkpointAfterAck(progress: ChangelogProgress, ack: ChangelogAck): number | null {
  if (ack.incarnation !== progress.incarnation) return progress.checkpoint;
  return Math.max(progress.checkpoint ?? 0, ack.endOffset);
}

/** A batch of changelog records applied by restoration, read at `fromOffset` for `incarnation`. */
export interface RestoredBatch {
  readonly incarnation: number;
  readonly fromOffset: number;
  /** One past the last offset the batch covers. */
  readonly nextOffset: number;
  /** The changelog's earliest kept offset when the batch was read: where restoring from nothing starts. */
  readonly earliest: number;
}

/**
 * Whether a restore batch may be applied (I4): only at the current restored position and for the
 * current incarnation. Anything else — a duplicate, a late or reordered delivery, a batch read
 * before a wipe — is a no-op.
 */
export function canApplyRestoreBatch(progress: ChangelogProgress, batch: RestoredBatch): boolean {
  const position = progress.checkpoint ?? batch.earliest;
  return batch.incarnation === progress.incarnation && batch.fromOffset === position && batch.nextOffset >= batch.fromOffset;
}

/** The checkpoint after applying an admissible restore batch: exactly the restored position. */
export function checkpointAfterRestore(progress: ChangelogProgress, batch: RestoredBatch): number | null {
  return canApplyRestoreBatch(progress, batch) ? batch.nextOffset : progress.checkpoint;
}
