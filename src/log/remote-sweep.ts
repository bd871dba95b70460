/**
 * The orphan sweep of tiered storage (docs/retention-and-compaction.md#tiered-storage-r2): now and
 * then — once per `intervalMs`, from the partition's maintenance — it lists the partition's prefix
 * in R2 and deletes the objects no segment row names and no note accounts for, once they are
 * older than `graceMs`. Kafka's RemoteLogManager cleans up the same way the segments whose copy
 * never finished.
 *
 * Why objects are orphaned at all: a segment's upload is noted before its put and recorded after
 * it (remote-log-manager.ts), so a crash between the two leaves a note, and the note has the
 * object deleted. But a put still in flight when its object crashed can land after that delete:
 * nothing names that object any more. Each upload writes its own key (segment-format.ts), so
 * such a late put never overwrites a segment; this sweep is what removes it.
 *
 * Why it never deletes a segment: an object is deleted only when, checked synchronously just
 * before the delete, no `remote_segments` row names it and no `remote_deletions` note does. From
 * its put on, an upload's key is noted until the transaction that records its segment drops the
 * note, so it is always one or the other; sweep and tiering run one after the other in the same
 * maintenance chain, and a key is never uploaded twice. The grace period (an hour by default, far
 * longer than a put takes) keeps the sweep off a put that is still landing.
 *
 * Crash at any await converges: the listing and the deletes change nothing the partition keeps
 * (deleting an absent object is no error), and when the sweep is next due is written (one row of
 * the object's KV storage) only once the whole prefix was listed: a crash before sweeps again
 * from the start at the next maintenance. Bounded: one page of at most SWEEP_PAGE objects and one
 * (multi-key) delete per maintenance call; a longer listing goes on at the next call.
 */
import { partitionPrefix } from "./partition/segment-format";
import type { PartitionStore } from "./partition-store";
import type { TopicPartition } from "./types";

/** What the sweep needs of an R2 bucket (an `R2Bucket` binding satisfies it). */
export interface SweepBucket {
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{
    readonly objects: readonly { readonly key: string; readonly uploaded: Date }[];
    readonly truncated: boolean;
    readonly cursor?: string;
  }>;
  delete(keys: string | string[]): Promise<unknown>;
}

/** Where the sweep keeps when it is next due: a Durable Object's synchronous KV (`ctx.storage.kv`). */
export interface SweepCheckpoint {
  get<T>(key: string): T | undefined;
  put<T>(key: string, value: T): void;
}

export interface SweepPolicy {
  /** An object younger than this is never deleted (a put may still be landing). */
  readonly graceMs: number;
  /** A partition's prefix is listed once per interval. */
  readonly intervalMs: number;
}

export const DEFAULT_SWEEP: SweepPolicy = { graceMs: 60 * 60 * 1000, intervalMs: 24 * 60 * 60 * 1000 };
/** Objects listed per maintenance call at most (R2 lists at most 1,000 per call). */
export const SWEEP_PAGE = 1000;
/** The KV key of when the sweep is next due (ms since the epoch). */
export const SWEEP_DUE_KEY = "remote-sweep-due-at";

/** Whether a listed object is an orphan to delete: no segment's and not noted, and older than the grace period. */
export function isOrphan(object: { readonly uploaded: Date }, known: boolean, now: number, graceMs: number): boolean {
  return !known && now - object.uploaded.getTime() > graceMs;
}

export interface SweepStep {
  /** Orphans deleted by this call. */
  readonly deleted: number;
  /** The listing goes on at the next call. */
  readonly more: boolean;
  /** When the sweep is next due (now when `more`); undefined when the partition does not use R2. */
  readonly nextAt: number | undefined;
}

export class OrphanSweep {
  /** Where a sweep under way goes on (in memory: after a restart it starts again). */
  private cursor: string | undefined;
  private dueAt: number | undefined;

  constructor(
    private readonly store: PartitionStore,
    private readonly bucket: SweepBucket,
    private readonly prefix: string,
    private readonly policy: SweepPolicy = DEFAULT_SWEEP,
    private readonly checkpoint?: SweepCheckpoint,
    private readonly crashes?: { reachAfterWrites(point: "sweep:before-object-delete"): Promise<void> },
  ) {}

  /** One step of the sweep, when it is due. Call inside the remote log manager's maintenance (one at a time). */
  async step(tp: TopicPartition, now: number): Promise<SweepStep> {
    if (!this.store.usesRemoteStorage()) return { deleted: 0, more: false, nextAt: undefined };
    // Never swept: due now (a first listing of a new partition's prefix is short).
    this.dueAt ??= this.checkpoint?.get<number>(SWEEP_DUE_KEY) ?? now;
    if (this.cursor === undefined && this.dueAt > now) return { deleted: 0, more: false, nextAt: this.dueAt };
    const page = await this.bucket.list({
      prefix: partitionPrefix(this.prefix, tp.topic, tp.partition),
      limit: SWEEP_PAGE,
      ...(this.cursor === undefined ? {} : { cursor: this.cursor }),
    });
    let orphans = page.objects.filter((object) => isOrphan(object, this.store.remoteObjectKnown(object.key), now, this.policy.graceMs));
    if (orphans.length > 0) {
      await this.crashes?.reachAfterWrites("sweep:before-object-delete");
      // Checked again after the await, right before the delete: no await between the check and the request.
      orphans = orphans.filter((object) => !this.store.remoteObjectKnown(object.key));
      if (orphans.length > 0) await this.bucket.delete(orphans.map((object) => object.key));
    }
    if (page.truncated && page.cursor !== undefined) {
      this.cursor = page.cursor;
      return { deleted: orphans.length, more: true, nextAt: now };
    }
    this.cursor = undefined;
    this.dueAt = now + this.policy.intervalMs;
    this.checkpoint?.put(SWEEP_DUE_KEY, this.dueAt);
    return { deleted: orphans.length, more: false, nextAt: this.dueAt };
  }
}
