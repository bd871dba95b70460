/**
 * Tiered storage's asynchronous half (Kafka's `RemoteLogManager`, KIP-405): it writes the segments
 * a partition moves to R2, deletes the objects of segments retention removed, and reads records
 * below the local part back from R2. The partition's own bookkeeping is synchronous, in
 * `PartitionStore` (src/log/partition/tiered-log.ts); every step here is an await between two of
 * its transactions, so a crash at any of them converges:
 *
 * - tiering: note the object's key in `remote_deletions`, put the object, then record it (its row
 *   in, the note and the local rows out, one transaction). Each upload has a key of its own (the
 *   base offset and a fresh id). A crash after the put leaves an object no row names, and its note;
 *   the next tiering puts the segment again under a new key and records it, and the note has the
 *   first object deleted. Nothing is lost (the rows stay until the transaction), nothing is
 *   doubled (one row per segment, keyed by its base offset).
 * - deletion: retention removes the segment's row and notes its object to delete (one
 *   transaction), then the object is deleted and the note dropped. A crash between leaves the note:
 *   the next maintenance (due at once while any is left) deletes it again.
 * - the orphan sweep (remote-sweep.ts): a put that lands after its note was processed (it was in
 *   flight when its object crashed) leaves an object nothing names; once a day the partition's
 *   prefix is listed and such objects older than an hour are deleted.
 */
import type { CrashPoints } from "../util/crash-points";
import type { EncodedFetch } from "./record-batch";
import type { PartitionStore } from "./partition-store";
import { LogUnavailable } from "./errors";
import { takeFromRows } from "./partition/fetch-rows";
import { positiveInteger } from "./partition/local-log";
import type { RemoteSegment } from "./partition/remote-segments";
import { decodeSegment, encodeSegment, segmentKey, type SegmentBatch } from "./partition/segment-format";
import { DEFAULT_SWEEP, OrphanSweep, type SweepBucket, type SweepCheckpoint, type SweepPolicy } from "./remote-sweep";
import type { FetchBounds, TopicPartition } from "./types";

/** What tiered storage needs of an R2 bucket (an `R2Bucket` binding satisfies it). */
export interface SegmentBucket extends SweepBucket {
  put(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<{ text(): Promise<string> } | null>;
}

/**
 * Where a crash can be planned (tests): after a segment's put, before its transaction; after
 * retention removed a row, before its object's delete; after the sweep found orphans, before it
 * deletes them.
 */
export type TieringCrashPoint = "tiering:after-put" | "retention:before-object-delete" | "sweep:before-object-delete";

/** Segments written per maintenance call at most; when that many went, more may be due at once. */
export const SEGMENTS_PER_CALL = 4;
/** Objects deleted per maintenance call at most. */
const DELETIONS_PER_CALL = 50;

export interface TieringResult {
  /** Segments written to R2 and recorded. */
  readonly tiered: number;
  /** Local rows they held (each deleted: a row written). */
  readonly rowsMoved: number;
  /** Objects deleted from R2 (of segments retention removed, of uploads never recorded). */
  readonly objectsDeleted: number;
  /** Orphans the sweep deleted. */
  readonly orphansDeleted: number;
  /** More is due at once. */
  readonly more: boolean;
  /** When maintenance is next due for R2's sake: now when `more`, else the next sweep (undefined: the partition does not use R2). */
  readonly nextAt: number | undefined;
}

export class RemoteLogManager {
  /** The last segment read, parsed (one at most: a reader catching up reads it through many fetches). */
  private cached: { key: string; batches: SegmentBatch[] } | undefined;
  private running: Promise<TieringResult> | undefined;
  private readonly sweep: OrphanSweep;

  /**
   * `prefix` begins every object key (the application's id: one bucket may serve several
   * applications); `checkpoint` keeps when the orphan sweep is next due (the object's KV; without
   * it, in memory).
   */
  constructor(
    private readonly store: PartitionStore,
    private readonly bucket: SegmentBucket,
    private readonly prefix: string,
    private readonly crashes?: CrashPoints<TieringCrashPoint>,
    checkpoint?: SweepCheckpoint,
    sweep: SweepPolicy = DEFAULT_SWEEP,
  ) {
    this.sweep = new OrphanSweep(store, bucket, prefix, sweep, checkpoint, crashes);
  }

  /** Moves what local retention lets go to R2 and deletes the objects left to delete; one call at a time. */
  maintain(tp: TopicPartition, now: number): Promise<TieringResult> {
    // A second caller (the alarm while an operator's call runs) waits for the first, then goes on.
    const previous = this.running ?? Promise.resolve(undefined);
    const next = previous.then(
      () => this.run(tp, now),
      () => this.run(tp, now),
    );
    this.running = next;
    return next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
  }

  private async run(tp: TopicPartition, now: number): Promise<TieringResult> {
    let tiered = 0;
    let rowsMoved = 0;
    let attempts = 0;
    for (; attempts < SEGMENTS_PER_CALL; attempts++) {
      const segment = this.store.segmentToTier(tp, now);
      if (!segment) break;
      const key = segmentKey(this.prefix, tp.topic, tp.partition, segment.header.base, crypto.randomUUID());
      // Noted for deletion first: should the segment's transaction never come, the object is not left behind.
      this.store.segmentUploading(key);
      await this.bucket.put(key, encodeSegment(segment.header, segment.batches));
      await this.crashes?.reachAfterWrites("tiering:after-put");
      if (this.store.segmentTiered(tp, segment, key)) {
        tiered++;
        rowsMoved += segment.batches.length;
      }
    }
    let objectsDeleted = 0;
    const deletions = this.store.remoteDeletions(DELETIONS_PER_CALL);
    for (const key of deletions) {
      await this.crashes?.reachAfterWrites("retention:before-object-delete");
      await this.bucket.delete(key);
      this.store.remoteDeleted(key);
      if (this.cached?.key === key) this.cached = undefined;
      objectsDeleted++;
    }
    const swept = await this.sweep.step(tp, now);
    const more = attempts === SEGMENTS_PER_CALL || deletions.length === DELETIONS_PER_CALL || swept.more;
    return { tiered, rowsMoved, objectsDeleted, orphansDeleted: swept.deleted, more, nextAt: more ? now : swept.nextAt };
  }

  /**
   * A fetch from `offset`: below the local part, from the remote segment holding it (the records
   * of that one segment within the bounds, as Kafka serves a remote fetch from one segment; the
   * next fetch goes on from where it stopped); otherwise the local fetch.
   */
  async fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<EncodedFetch> {
    const segment = this.store.remoteSegmentFor(tp, offset);
    if (!segment) return this.store.fetchEncoded(tp, offset, bounds);
    const maxRecords = positiveInteger(bounds.maxRecords, "maxRecords");
    const maxBytes = positiveInteger(bounds.maxBytes, "maxBytes");
    const batches = await this.read(segment);
    const taken = takeFromRows(batches, offset, maxRecords, maxBytes, bounds.uncut === true);
    // The range as it is now: the read awaited, and retention may have moved the start meanwhile.
    const { earliest, latest } = this.store.offsets(tp);
    return { batches: taken.batches, nextOffset: taken.nextOffset ?? segment.last_offset + 1, earliest, latest };
  }

  /** The first offset whose record's timestamp is at or after `timestamp`, the remote segments included. */
  async offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number> {
    const segment = this.store.remoteSegmentForTimestamp(tp, timestamp);
    if (segment) {
      const { earliest } = this.store.offsets(tp);
      for (const batch of await this.read(segment)) {
        const entries = JSON.parse(batch.records) as [unknown, unknown, number | null][];
        const offsets = batch.offsets ? new Uint32Array(batch.offsets) : undefined;
        for (let i = 0; i < entries.length; i++) {
          const offset = batch.base_offset + (offsets ? offsets[i]! : i);
          if (offset >= earliest && (entries[i]![2] ?? batch.append_time) >= timestamp) return offset;
        }
      }
    }
    return this.store.offsetForTimestamp(tp, timestamp);
  }

  private async read(segment: RemoteSegment): Promise<SegmentBatch[]> {
    if (this.cached?.key === segment.object_key) return this.cached.batches;
    const object = await this.bucket.get(segment.object_key);
    if (!object) throw new LogUnavailable(`remote segment ${segment.object_key} is missing from the bucket`);
    const { batches } = decodeSegment(await object.text());
    this.cached = { key: segment.object_key, batches };
    return batches;
  }
}
