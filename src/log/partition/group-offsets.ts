/**
 * Consumer groups' committed offsets in a partition (the group coordinator's offset store, Kafka's
 * `OffsetMetadataManager`): one `committed_offsets` row per group, with the epoch of the committer
 * that owns it. Once a committer with an epoch (a task instance) owns a group's offsets, commits
 * from an older epoch — or from anyone without one — are fenced.
 *
 * The rules are pure (`checkCommit`, `committerEpoch`); the class applies them to the stored rows.
 */
import { sql } from "../../storage/sql";
import { InvalidRecord, OffsetOutOfRange, ProducerFenced } from "../errors";
import type { CommittedOffset } from "../types";
import { checkOffset } from "./local-log";
import type { PartitionTransactions } from "./transactions";

export function checkGroup(group: string): void {
  if (typeof group !== "string" || group.length === 0 || group.length > 255) {
    throw new InvalidRecord("a consumer group id is a string of 1 to 255 characters");
  }
}

/** Whether a commit is well formed (before anything is read): its group, offset, metadata and epoch. */
export function checkCommit(group: string, committed: CommittedOffset): void {
  checkGroup(group);
  checkOffset(committed.offset);
  if (typeof committed.metadata !== "string") throw new InvalidRecord("metadata must be a string");
  const epoch = committed.epoch ?? null;
  if (epoch !== null && (!Number.isSafeInteger(epoch) || epoch < 0)) throw new InvalidRecord("a commit's epoch must be a non-negative integer");
}

/**
 * The epoch the group's row keeps after a commit from `epoch` (null: a committer without one),
 * `held` the epoch it holds now: the commit's, or the held one for a commit without an epoch
 * while none is held. A commit from an older epoch, or without one once an epoch holds the
 * group, is `ProducerFenced`: only the current owner moves the offsets.
 */
export function committerEpoch(group: string, epoch: number | null, held: number | null): number | null {
  if (held !== null && (epoch === null || epoch < held)) {
    throw new ProducerFenced(`group ${group}: a commit ${epoch === null ? "without an epoch" : `from epoch ${epoch}`} is fenced by epoch ${held}`);
  }
  return epoch ?? held;
}

export class GroupOffsets {
  constructor(private readonly tx: PartitionTransactions) {}

  private get db() {
    return this.tx.db;
  }

  /** Stores a checked commit (see `checkCommit`) at `now`, `logEnd` being the partition's end offset. Call inside a transaction. */
  commit(group: string, committed: CommittedOffset, logEnd: number, now: number): void {
    if (committed.offset > logEnd) {
      throw new OffsetOutOfRange(`cannot commit offset ${committed.offset}: the end offset is ${logEnd}`);
    }
    const held = this.db.one<{ epoch: number | null }>(sql`SELECT epoch FROM committed_offsets WHERE group_id = ${group}`)?.epoch ?? null;
    const kept = committerEpoch(group, committed.epoch ?? null, held);
    this.db.run(sql`INSERT INTO committed_offsets (group_id, offset, metadata, committed_at, epoch)
                    VALUES (${group}, ${committed.offset}, ${committed.metadata}, ${now}, ${kept})
                    ON CONFLICT (group_id) DO UPDATE SET offset = excluded.offset,
                      metadata = excluded.metadata, committed_at = excluded.committed_at, epoch = excluded.epoch`);
  }

  committed(group: string): CommittedOffset | null {
    const row = this.db.one<{ offset: number; metadata: string; epoch: number | null }>(
      sql`SELECT offset, metadata, epoch FROM committed_offsets WHERE group_id = ${group}`,
    );
    if (!row) return null;
    return row.epoch === null ? { offset: row.offset, metadata: row.metadata } : { offset: row.offset, metadata: row.metadata, epoch: row.epoch };
  }

  /**
   * Whether the partition's task readers are behind `logEnd` (their lag is what a lost wake-up
   * would leave): "behind" when the committer with an epoch (a task instance) has not committed
   * the end offset, "unknown" when no such committer has committed at all (a changelog, or input
   * not yet read), else "caught-up".
   */
  readers(logEnd: number): "behind" | "unknown" | "caught-up" {
    const committed = this.db.one<{ offset: number | null }>(sql`SELECT MAX(offset) AS offset FROM committed_offsets WHERE epoch IS NOT NULL`)?.offset;
    if (committed === null || committed === undefined) return "unknown";
    return committed < logEnd ? "behind" : "caught-up";
  }
}
