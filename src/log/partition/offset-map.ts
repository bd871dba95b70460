/**
 * Compaction's index of each key's latest offset (Kafka's cleaner `OffsetMap`), kept in
 * `latest_keys` up to the point compaction has read, so that a sweep knows which records a later
 * one of their key superseded. Statements are batched under the 100 bound parameters a statement
 * may carry.
 */
import { sql } from "../../storage/sql";
import type { LatestRecord } from "../compaction";
import type { Entry } from "../record-batch";
import type { PartitionTransactions } from "./transactions";

/** Rows per upsert: 3 parameters each, under the 100 bound parameters per statement. */
const LATEST_KEYS_PER_STATEMENT = 33;
/** Keys per look-up (one bound parameter each). */
const KEYS_PER_LOOKUP = 100;

export class OffsetMap {
  constructor(private readonly tx: PartitionTransactions) {}

  private get db() {
    return this.tx.db;
  }

  /** Upserts each key's latest record, LATEST_KEYS_PER_STATEMENT rows per statement. */
  put(latest: ReadonlyMap<string, LatestRecord>): void {
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
   * KEYS_PER_LOOKUP keys per statement.
   */
  lookUp(entries: readonly Entry[], known: Map<string, LatestRecord | null>): void {
    const missing = new Set<string>();
    for (const [key] of entries) if (key !== null && !known.has(key)) missing.add(key);
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
    this.db.run(sql`DELETE FROM latest_keys WHERE key = ${key}`);
  }

  /** Forgets the keys whose latest record is below the log start `offset` (it went). */
  forgetBelow(offset: number): void {
    this.db.run(sql`DELETE FROM latest_keys WHERE offset < ${offset}`);
  }
}
