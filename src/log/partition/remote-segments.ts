/**
 * The partition's segments in remote storage (Kafka's remote log metadata): a `remote_segments`
 * row per object in R2, and `remote_deletions`, the objects whose segment retention removed but
 * whose delete in R2 may not have happened yet (a crash between the two leaves the key here, and
 * the next maintenance deletes it again: deleting an absent object is no error). The highest
 * remote offset is kept in memory: it tells, on every fetch, where the local part begins.
 *
 * Methods that write are called inside the caller's transaction (see transactions.ts).
 */
import { sql } from "../../storage/sql";
import type { RemoteExtent } from "./tiering";
import type { PartitionTransactions } from "./transactions";

/** A segment in remote storage. */
export type RemoteSegment = RemoteExtent & {
  readonly records: number;
  readonly object_key: string;
};

export class RemoteSegments {
  /** The last remote offset (-1: none), as last read or written; undefined until read. */
  private lastOffset: number | undefined;
  /** Objects still to delete (in memory once read: maintenance is due while any is). */
  private pending: number | undefined;

  constructor(private readonly tx: PartitionTransactions) {
    tx.onRollback(() => {
      this.lastOffset = undefined;
      this.pending = undefined;
    });
  }

  private get db() {
    return this.tx.db;
  }

  /** The first offset the partition keeps locally, for a log starting at `logStart`. */
  localStart(logStart: number): number {
    this.lastOffset ??= this.db.one<{ last: number | null }>(sql`SELECT MAX(last_offset) AS last FROM remote_segments`)?.last ?? -1;
    return Math.max(logStart, this.lastOffset + 1);
  }

  /** The segment holding `offset`, if a remote one does. */
  at(offset: number): RemoteSegment | undefined {
    return (
      this.db.one<RemoteSegment>(
        sql`SELECT * FROM remote_segments WHERE base_offset <= ${offset} AND last_offset >= ${offset} ORDER BY base_offset DESC LIMIT 1`,
      ) ?? undefined
    );
  }

  /** The segments from `offset` on, oldest first, read lazily. */
  from(offset: number): Iterable<RemoteSegment> {
    return this.db.cursor<RemoteSegment>(sql`SELECT * FROM remote_segments WHERE last_offset >= ${offset} ORDER BY base_offset`);
  }

  /** How many segments, records and bytes remote storage holds from `offset` on (a segment the log start cuts counts whole). */
  totals(offset: number): { segments: number; records: number; bytes: number } {
    const row = this.db.one<{ segments: number; records: number | null; bytes: number | null }>(
      sql`SELECT COUNT(*) AS segments, SUM(records) AS records, SUM(bytes) AS bytes FROM remote_segments WHERE last_offset >= ${offset}`,
    );
    return { segments: row?.segments ?? 0, records: row?.records ?? 0, bytes: row?.bytes ?? 0 };
  }

  /** When the oldest segment's newest record and arrival were (time retention's due time); null: no segment. */
  oldestTime(offset: number): number | null {
    return (
      this.db.one<{ at: number }>(
        sql`SELECT MAX(max_timestamp, max_append_time) AS at FROM remote_segments WHERE last_offset >= ${offset} ORDER BY base_offset LIMIT 1`,
      )?.at ?? null
    );
  }

  add(segment: RemoteSegment): void {
    this.db.run(sql`INSERT OR REPLACE INTO remote_segments (base_offset, last_offset, records, bytes, max_timestamp, max_append_time, object_key)
                    VALUES (${segment.base_offset}, ${segment.last_offset}, ${segment.records}, ${segment.bytes},
                            ${segment.max_timestamp}, ${segment.max_append_time}, ${segment.object_key})`);
    this.lastOffset = Math.max(this.lastOffset ?? -1, segment.last_offset);
  }

  /** The log start moved up to `offset`: segments wholly below it go, their objects to delete. */
  dropBelow(offset: number): void {
    const gone = this.db.all<{ object_key: string }>(sql`SELECT object_key FROM remote_segments WHERE last_offset < ${offset}`);
    if (gone.length === 0) return;
    for (const { object_key } of gone) this.toDelete(object_key);
    this.db.run(sql`DELETE FROM remote_segments WHERE last_offset < ${offset}`);
  }

  /** An object to delete from remote storage (a removed segment's, or one a tiering wrote and then gave up). */
  toDelete(key: string): void {
    this.db.run(sql`INSERT OR IGNORE INTO remote_deletions (object_key) VALUES (${key})`);
    this.pending = undefined;
  }

  /** Objects still to delete, at most `limit`. */
  deletions(limit: number): string[] {
    return this.db.all<{ object_key: string }>(sql`SELECT object_key FROM remote_deletions LIMIT ${limit}`).map((r) => r.object_key);
  }

  /**
   * Whether the object `key` is one this partition accounts for: a segment's (its row, found by the
   * base offset its key names), or noted (an upload under way, an object to delete). A key whose
   * base cannot be read counts as known: the sweep deletes only what it can tell is no segment's.
   */
  knows(key: string, base: number | undefined): boolean {
    if (base === undefined) return true;
    return (
      this.db.one(sql`SELECT 1 AS known FROM remote_segments WHERE base_offset = ${base} AND object_key = ${key}`) !== undefined ||
      this.db.one(sql`SELECT 1 AS known FROM remote_deletions WHERE object_key = ${key}`) !== undefined
    );
  }

  /** Whether the partition has a segment in remote storage. */
  any(): boolean {
    return this.db.one(sql`SELECT 1 AS known FROM remote_segments LIMIT 1`) !== undefined;
  }

  /** Whether any object waits to be deleted. */
  deletionsPending(): boolean {
    this.pending ??= this.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM remote_deletions`)?.n ?? 0;
    return this.pending > 0;
  }

  /** The object is gone from remote storage. */
  deleted(key: string): void {
    this.db.run(sql`DELETE FROM remote_deletions WHERE object_key = ${key}`);
    this.pending = undefined;
  }
}
