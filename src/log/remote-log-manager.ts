/**
 * Tiered storage's asynchronous half (Kafka's `RemoteLogManager`, KIP-405): it writes the segments
 * a partition moves to R2, deletes the objects of segments retention removed, and reads records
 * below the local part back from R2. The partition's own bookkeeping is synchronous, in
 * `PartitionStore` (src/log/partition/tiered-log.ts); every step here is an await between two of
 * its transactions, so a crash at any of them converges:
 *
 * - tiering: note the object's key in `remote_deletions`, put the object, then record it (its row
 *   in, the note and the local rows out, one transaction). A crash after the put leaves an object
 *   no row names, and its note; the next tiering starts from the same base offset, so it writes the
 *   same key, overwrites it and drops the note. Should the rows have changed meanwhile (the log
 *   start moved past them), the next tiering writes another key and the note has the orphan
 *   deleted. Nothing is lost (the rows stay until the transaction), nothing is doubled (one row per
 *   segment, keyed by its base offset), and no object outlives its last reference.
 * - deletion: retention removes the segment's row and notes its object to delete (one
 *   transaction), then the object is deleted and the note dropped. A crash between leaves the note:
 *   the next maintenance (due at once while any is left) deletes it again.
 */
import type { CrashPoints } from "../util/crash-points";
import type { EncodedFetch } from "./record-batch";
import type { PartitionStore } from "./partition-store";
import { LogUnavailable } from "./errors";
import { takeFromRows } from "./partition/fetch-rows";
import { positiveInteger } from "./partition/local-log";
import type { RemoteSegment } from "./partition/remote-segments";
import { decodeSegment, encodeSegment, segmentKey, type SegmentBatch } from "./partition/segment-format";
import type { FetchBounds, TopicPartition } from "./types";

/** What tiered storage needs of an R2 bucket (an `R2Bucket` binding satisfies it). */
export interface SegmentBucket {
  put(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<{ text(): Promise<string> } | null>;
  delete(key: string): Promise<unknown>;
}

/** Where a crash can be planned (tests): after a segment's put, before its transaction; after retention removed a row, before its object's delete. */
export type TieringCrashPoint = "tiering:after-put" | "retention:before-object-delete";

/** Segments written per maintenance call at most; when that many went, more may be due at once. */
export const SEGMENTS_PER_CALL = 4;
/** Objects deleted per maintenance call at most. */
const DELETIONS_PER_CALL = 50;

export interface TieringResult {
  /** Segments written to R2 and recorded. */
  readonly tiered: number;
  /** Local rows they held (each deleted: a row written). */
  readonly rowsMoved: number;
  /** Objects deleted from R2. */
  readonly objectsDeleted: number;
  /** More is due at once. */
  readonly more: boolean;
}

export class RemoteLogManager {
  /** The last segment read, parsed (one at most: a reader catching up reads it through many fetches). */
  private cached: { key: string; batches: SegmentBatch[] } | undefined;
  private running: Promise<TieringResult> | undefined;

  /** `prefix` begins every object key (the application's id: one bucket may serve several applications). */
  constructor(
    private readonly store: PartitionStore,
    private readonly bucket: SegmentBucket,
    private readonly prefix: string,
    private readonly crashes?: CrashPoints<TieringCrashPoint>,
  ) {}

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
      const key = segmentKey(this.prefix, tp.topic, tp.partition, segment.header.base);
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
    return { tiered, rowsMoved, objectsDeleted, more: attempts === SEGMENTS_PER_CALL || deletions.length === DELETIONS_PER_CALL };
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
    const taken = takeFromRows(batches, offset, maxRecords, maxBytes);
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
