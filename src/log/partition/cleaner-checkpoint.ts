/**
 * Where retention and compaction stand in a partition (Kafka's cleaner offset checkpoint): the
 * `compaction` row, read once and then kept in memory (dropped when a transaction fails). The row
 * is written only when what it holds changed, and when retention last ran only when it deleted
 * something (`note`): a check that found nothing is remembered in memory, and after a restart
 * the next check merely comes sooner.
 */
import { sql } from "../../storage/sql";
import type { PartitionTransactions } from "./transactions";

/** Compaction's progress: the index covers offsets below `indexedTo`; a sweep of rows below `sweepTo` stands at `sweepCursor`. */
export type CompactionState = {
  indexedTo: number;
  sweepCursor: number | null;
  sweepTo: number;
  tombstonesDue: number | null;
  /** When retention last ran. */
  lastRetention: number;
  /** Records kept below `sweepTo` after the last sweep: the compacted size the dirty section is weighed against. */
  cleanRecords: number;
};

/** Where a partition that never ran maintenance stands. */
export function initialState(logStart: number): CompactionState {
  return { indexedTo: logStart, sweepCursor: null, sweepTo: logStart, tombstonesDue: null, lastRetention: 0, cleanRecords: 0 };
}

export class CleanerCheckpoint {
  private cached: CompactionState | undefined;

  constructor(private readonly tx: PartitionTransactions) {
    tx.onRollback(() => (this.cached = undefined));
  }

  /** The stored state, or the initial one at `logStart` when none is stored yet. */
  read(logStart: number): CompactionState {
    if (!this.cached) {
      const row = this.tx.db.one<{
        indexed_to: number;
        sweep_cursor: number | null;
        sweep_to: number;
        tombstones_due: number | null;
        last_retention: number;
        clean_records: number;
      }>(sql`SELECT indexed_to, sweep_cursor, sweep_to, tombstones_due, last_retention, clean_records FROM compaction WHERE only = 1`);
      this.cached = row
        ? {
            indexedTo: row.indexed_to,
            sweepCursor: row.sweep_cursor,
            sweepTo: row.sweep_to,
            tombstonesDue: row.tombstones_due,
            lastRetention: row.last_retention,
            cleanRecords: row.clean_records,
          }
        : initialState(logStart);
    }
    return this.cached;
  }

  /** Call inside a transaction. Writes nothing when the stored state is `state` already. */
  write(state: CompactionState): void {
    if (this.cached && sameState(this.cached, state)) return;
    this.tx.db.run(sql`INSERT INTO compaction (only, indexed_to, sweep_cursor, sweep_to, tombstones_due, last_retention, clean_records)
                    VALUES (1, ${state.indexedTo}, ${state.sweepCursor}, ${state.sweepTo}, ${state.tombstonesDue}, ${state.lastRetention}, ${state.cleanRecords})
                    ON CONFLICT (only) DO UPDATE SET indexed_to = excluded.indexed_to, sweep_cursor = excluded.sweep_cursor,
                      sweep_to = excluded.sweep_to, tombstones_due = excluded.tombstones_due, last_retention = excluded.last_retention,
                      clean_records = excluded.clean_records`);
    this.cached = { ...state };
  }

  /** Takes `state` in memory only: what it changes need not outlive the object (a retention check that found nothing). */
  note(state: CompactionState): void {
    this.cached = { ...state };
  }
}

function sameState(a: CompactionState, b: CompactionState): boolean {
  return (
    a.indexedTo === b.indexedTo &&
    a.sweepCursor === b.sweepCursor &&
    a.sweepTo === b.sweepTo &&
    a.tombstonesDue === b.tombstonesDue &&
    a.lastRetention === b.lastRetention &&
    a.cleanRecords === b.cleanRecords
  );
}
