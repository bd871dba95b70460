/**
 * Compaction's index of each key's latest offset (Kafka's cleaner `OffsetMap`) over the section
 * compaction has read (from the log start to the checkpoint's `indexedTo`), so that a sweep knows
 * which records a later one of their key superseded.
 *
 * Kept in memory while that section holds at most MEMORY_INDEX_RECORDS records: then an index
 * pass writes no row, and after a start (or a failed transaction) the index is read again from
 * the section itself (`load`: rows read, none written). A section beyond that bound is indexed in
 * `latest_keys` (a row per key a pass reads): the in-memory index is written there in the
 * transaction that takes the section past the bound (`settle`), so a section past the bound always
 * has its whole index in the table. Entries the table keeps from before are never newer than the
 * truth (a key's latest offset only grows, and a forgotten key has no records left to sweep), so
 * a stale one only keeps a record longer. Statements are batched under the 100 bound parameters a
 * statement may carry.
 */
import { sql } from "../../storage/sql";
import type { LatestRecord } from "../compaction";
import type { Entry } from "../record-batch";
import { entryOffset, isTombstone } from "../stored-batch";
import { type BatchRow, storedRow } from "./batch-rows";
import type { PartitionTransactions } from "./transactions";

/** The most records the indexed section may hold for its index to be kept in memory only (and read again after a start). */
export const MEMORY_INDEX_RECORDS = 50_000;
/** Rows per upsert: 3 parameters each, under the 100 bound parameters per statement. */
const LATEST_KEYS_PER_STATEMENT = 33;
/** Keys per look-up (one bound parameter each). */
const KEYS_PER_LOOKUP = 100;

export class OffsetMap {
  /** The whole index, while kept in memory (`warm` and not in the table). */
  private memory: Map<string, LatestRecord> | undefined;
  /** Whether the index is whole for the indexed section (in memory, or in the table): false after a start or a failed transaction. */
  private warm = false;

  constructor(private readonly tx: PartitionTransactions) {
    tx.onRollback(() => {
      this.memory = undefined;
      this.warm = false;
    });
  }

  private get db() {
    return this.tx.db;
  }

  /** Whether the index is kept in memory (for tests and the breakdown). */
  get inMemory(): boolean {
    return this.warm && this.memory !== undefined;
  }

  /**
   * Makes the index whole for the section from `logStart` to `indexedTo` (the checkpoint's) after a
   * start: a small section is read again into memory (rows read, none written); a larger one has
   * its index in the table already (see `settle`).
   */
  load(logStart: number, indexedTo: number): void {
    if (this.warm) return;
    if (this.sectionRecords(logStart, indexedTo) <= MEMORY_INDEX_RECORDS) {
      const memory = new Map<string, LatestRecord>();
      // In offset order, so each key's last entry read is its latest.
      for (const batch of this.db.cursor<BatchRow>(
        sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
            WHERE base_offset + span > ${logStart} AND base_offset < ${indexedTo} ORDER BY base_offset`,
      )) {
        const row = storedRow(batch);
        const entries = JSON.parse(batch.records) as Entry[];
        for (let i = 0; i < entries.length; i++) {
          const entry = entries[i]!;
          if (entry[0] !== null) memory.set(entry[0], { offset: entryOffset(row, i), tombstone: isTombstone(entry) });
        }
      }
      this.memory = memory;
    } else {
      this.memory = undefined;
    }
    this.warm = true;
  }

  /** Records kept in the section from `logStart` to `indexedTo`. */
  private sectionRecords(logStart: number, indexedTo: number): number {
    return (
      this.db.one<{ n: number | null }>(sql`SELECT SUM(count) AS n FROM record_batches WHERE base_offset + span > ${logStart} AND base_offset < ${indexedTo}`)
        ?.n ?? 0
    );
  }

  /** Takes each key's latest record (in memory, or upserted into the table). Call after `load`, inside a transaction. */
  put(latest: ReadonlyMap<string, LatestRecord>): void {
    if (this.memory) for (const [key, record] of latest) this.memory.set(key, record);
    else this.upsert(latest);
  }

  /**
   * After the index phase moved the section's end to `indexedTo`, in its transaction: a section
   * past MEMORY_INDEX_RECORDS has its index written to the table (once), and kept there.
   */
  settle(logStart: number, indexedTo: number): void {
    if (!this.memory || this.sectionRecords(logStart, indexedTo) <= MEMORY_INDEX_RECORDS) return;
    this.upsert(this.memory);
    this.memory = undefined;
  }

  private upsert(latest: ReadonlyMap<string, LatestRecord>): void {
    const rows = [...latest];
    for (let at = 0; at < rows.length; at += LATEST_KEYS_PER_STATEMENT) {
      const chunk = rows.slice(at, at + LATEST_KEYS_PER_STATEMENT);
      this.db.run({
        text: `INSERT INTO latest_keys (key, offset, tombstone) VALUES ${Array(chunk.length).fill("(?, ?, ?)").join(", ")}
               ON CONFLICT (key) DO UPDATE SET offset = excluded.offset, tombstone = excluded.tombstone`,
        values: chunk.flatMap(([key, { offset, tombstone }]) => [key, offset, tombstone ? 1 : 0]),
      });
    }
  }

  /**
   * Adds to `known` the entries of the entries' keys it does not hold yet (null: not indexed),
   * KEYS_PER_LOOKUP keys per statement when the index is in the table. Call after `load`.
   */
  lookUp(entries: readonly Entry[], known: Map<string, LatestRecord | null>): void {
    const missing = new Set<string>();
    for (const [key] of entries) if (key !== null && !known.has(key)) missing.add(key);
    if (this.memory) {
      for (const key of missing) known.set(key, this.memory.get(key) ?? null);
      return;
    }
    const keys = [...missing];
    for (let at = 0; at < keys.length; at += KEYS_PER_LOOKUP) {
      const chunk = keys.slice(at, at + KEYS_PER_LOOKUP);
      const query = { text: `SELECT key, offset, tombstone FROM latest_keys WHERE key IN (${Array(chunk.length).fill("?").join(", ")})`, values: chunk };
      for (const key of chunk) known.set(key, null);
      for (const found of this.db.cursor<{ key: string; offset: number; tombstone: number }>(query)) {
        known.set(found.key, { offset: found.offset, tombstone: found.tombstone === 1 });
      }
    }
  }

  /** Forgets a key (its tombstone went). */
  forget(key: string): void {
    this.memory?.delete(key);
    this.db.run(sql`DELETE FROM latest_keys WHERE key = ${key}`);
  }

  /** Forgets the keys whose latest record is below the log start `offset` (it went). */
  forgetBelow(offset: number): void {
    if (this.memory) for (const [key, record] of this.memory) if (record.offset < offset) this.memory.delete(key);
    this.db.run(sql`DELETE FROM latest_keys WHERE offset < ${offset}`);
  }
}
