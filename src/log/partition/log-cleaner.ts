/**
 * Log compaction (Kafka's `LogCleaner`): each key keeps only its latest record (and a tombstone
 * for `delete.retention.ms`). A pass has two phases, each in transactions of its own so that a
 * crash anywhere loses nothing and leaves a readable partition, the next pass going on from the
 * checkpoint (cleaner-checkpoint.ts):
 *
 * - index: the cleanable records (older than `min.compaction.lag.ms`) are read into the index of
 *   each key's latest offset (offset-map.ts), up to a budget of records per call;
 * - sweep: once the index covers all that is cleanable, the rows below it are rewritten, one per
 *   transaction, keeping only what `sweepRow` (compaction.ts) keeps.
 *
 * The partition's last record always stays (see `sweepRow`), and offsets keep their meaning.
 */
import { sql } from "../../storage/sql";
import { sweepRow, type LatestRecord } from "../compaction";
import type { Entry } from "../record-batch";
import { entryOffset, isTombstone } from "../stored-batch";
import type { TopicConfig } from "../topic-config";
import { storedRow, type BatchRow } from "./batch-rows";
import type { CleanerCheckpoint } from "./cleaner-checkpoint";
import type { FreshRows } from "./fresh-rows";
import type { LogRange } from "./local-log";
import { afterIndexing } from "./log-cleaner-manager";
import type { OffsetMap } from "./offset-map";
import type { PartitionTransactions } from "./transactions";

/** Work one call does at most: records read into the index, and rows rewritten. */
export interface CleanerBudget {
  readonly indexRecords: number;
  readonly sweepRows: number;
}

/** What a call did, and whether more is waiting now (the budget ran out). */
export interface CleanerResult {
  readonly indexed: number;
  readonly compacted: number;
  readonly more: boolean;
}

export class LogCleaner {
  constructor(
    private readonly tx: PartitionTransactions,
    private readonly checkpoint: CleanerCheckpoint,
    private readonly index: OffsetMap,
    private readonly fresh: FreshRows,
    /** Called in the transaction before a row ending at `upTo` is deleted (the producers' snapshot must cover it: see ProducerStateManager). */
    private readonly beforeDeleting: (upTo: number, logEnd: number) => void = () => {},
  ) {}

  private get db() {
    return this.tx.db;
  }

  /** Compaction, in steps within `budget`: index more of the cleanable records, then sweep the rows below the index. */
  compact(range: LogRange, config: TopicConfig, now: number, budget: CleanerBudget): CleanerResult {
    // Never records younger than min.compaction.lag.ms (rows whose records are all older are cleanable).
    const young = this.db.one<{ base: number | null }>(
      sql`SELECT MIN(base_offset) AS base FROM record_batches WHERE max_timestamp > ${now - config["min.compaction.lag.ms"]} AND base_offset + span > ${range.logStart}`,
    )?.base;
    const cleanable = Math.min(range.logEnd, young ?? Infinity);
    // After a start the index is read again (kept in memory for a small section: see offset-map.ts).
    this.index.load(range.logStart, Math.max(this.checkpoint.read(range.logStart).indexedTo, range.logStart));
    // Each key's latest offset read by the index phase, and the rows it parsed: the sweep of this
    // call starts from them instead of reading the index and parsing those rows again.
    const latest = new Map<string, LatestRecord>();
    const parsed = new Map<number, Entry[]>();
    const indexed = this.tx.run(() => this.indexPhase(range, cleanable, now, budget, latest, parsed));
    const compacted = this.sweepPhase(range, config, now, budget, latest, parsed);
    const state = this.checkpoint.read(range.logStart);
    const more = state.sweepCursor !== null || state.indexedTo < cleanable;
    return { indexed, compacted, more };
  }

  /**
   * Reads rows from where the index stands up to `cleanable` into `latest` and the index, within
   * the budget; starts a sweep when due. Returns the records read. Call inside a transaction.
   */
  private indexPhase(
    range: LogRange,
    cleanable: number,
    now: number,
    budget: CleanerBudget,
    latest: Map<string, LatestRecord>,
    parsed: Map<number, Entry[]>,
  ): number {
    const state = this.checkpoint.read(range.logStart);
    let indexedTo = Math.max(state.indexedTo, range.logStart);
    let indexed = 0;
    let cut = false;
    // Rows are read in offset order, so a key's last entry read is its latest: one upsert per key
    // read, not per record (a busy changelog updates the same keys row after row).
    for (const batch of this.db.cursor<BatchRow>(
      sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
          WHERE base_offset >= ${indexedTo} AND base_offset < ${cleanable} ORDER BY base_offset`,
    )) {
      if (indexed >= budget.indexRecords) {
        cut = true;
        break;
      }
      const row = storedRow(batch);
      const entries = this.fresh.take(row.base, batch.records);
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i]!;
        if (entry[0] !== null) latest.set(entry[0], { offset: entryOffset(row, i), tombstone: isTombstone(entry) });
      }
      parsed.set(row.base, entries);
      indexed += row.count;
      indexedTo = row.base + row.span;
    }
    this.index.put(latest);
    // Read to the cleanable point (offsets between rows are ones compaction removed before).
    if (!cut && cleanable !== Infinity) indexedTo = Math.max(indexedTo, cleanable);
    this.index.settle(range.logStart, indexedTo);
    this.checkpoint.write(afterIndexing(state, indexedTo, cleanable, range.logStart, now));
    return indexed;
  }

  /**
   * Rows below the index keep only their keys' latest records (and tombstones until due), up to
   * the budget's rows in one transaction (the checkpoint written once per call, not per row). The index entries looked up are remembered for the
   * rest of this call (nothing else writes the index meanwhile: the call never yields), as the
   * rows below the index share their keys; those the index phase just wrote are known already.
   * Returns the records removed.
   */
  private sweepPhase(
    range: LogRange,
    config: TopicConfig,
    now: number,
    budget: CleanerBudget,
    latest: ReadonlyMap<string, LatestRecord>,
    parsed: ReadonlyMap<number, Entry[]>,
  ): number {
    const known = new Map<string, LatestRecord | null>(latest);
    // Nor the partition's last record, even a tombstone past its time: a restored task resumes
    // from the input position the newest changelog record carries (I5). (Kafka keeps its whole
    // active segment out of compaction; keeping only the last record restores less.)
    const lastOffset = range.logEnd - 1;
    // The rows of one call in one transaction, the checkpoint written once at its end: a crash
    // anywhere undoes the call's rows and checkpoint together (the call never yields).
    return this.tx.run(() => {
      let state = this.checkpoint.read(range.logStart);
      let compacted = 0;
      for (let rows = 0; rows < budget.sweepRows && state.sweepCursor !== null; rows++) {
        const batch = this.db.one<BatchRow>(
          sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
              WHERE base_offset >= ${Math.max(state.sweepCursor, range.logStart)} AND base_offset < ${state.sweepTo} ORDER BY base_offset LIMIT 1`,
        );
        if (!batch) {
          // The sweep is done: what it left is the clean section new records are weighed against.
          const cleanRecords = this.db.one<{ n: number | null }>(sql`SELECT SUM(count) AS n FROM record_batches WHERE base_offset < ${state.sweepTo}`)?.n ?? 0;
          state = { ...state, sweepCursor: null, cleanRecords };
          break;
        }
        const row = storedRow(batch);
        const entries = parsed.get(row.base) ?? (JSON.parse(batch.records) as Entry[]);
        this.index.lookUp(entries, known);
        const sweep = sweepRow(row, entries, (key) => known.get(key) ?? undefined, {
          now,
          deleteRetentionMs: config["delete.retention.ms"],
          lastOffset,
          tombstonesDue: state.tombstonesDue,
        });
        for (const key of sweep.forgotten) {
          this.index.forget(key);
          known.set(key, null);
        }
        const kept = sweep.row;
        if (kept.kind === "deleted") {
          this.beforeDeleting(row.base + row.span, range.logEnd);
          this.db.run(sql`DELETE FROM record_batches WHERE base_offset = ${row.base}`);
        } else if (kept.kind === "thinned") {
          this.db.run(sql`UPDATE record_batches SET count = ${kept.count}, bytes = ${kept.bytes}, max_timestamp = ${kept.maxTimestamp},
                            sizes = ${kept.sizes.buffer as ArrayBuffer}, offsets = ${kept.offsets.buffer as ArrayBuffer}, records = ${kept.records}
                          WHERE base_offset = ${row.base}`);
        }
        state = { ...state, sweepCursor: row.base + row.span, tombstonesDue: sweep.tombstonesDue };
        compacted += sweep.removed;
      }
      this.checkpoint.write(state);
      return compacted;
    });
  }
}
