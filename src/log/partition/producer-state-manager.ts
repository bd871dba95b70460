/**
 * Idempotent producers' state in a partition (Kafka's `ProducerStateManager`): each producer's
 * newest epoch, when it was last seen, and its last REMEMBERED_BATCHES batches' sequences and
 * offsets, so that a retried batch is answered with its first result instead of being appended
 * twice, and a zombie of an older epoch is fenced.
 *
 * As in Kafka, the state lives in memory and costs an append nothing to keep: the appended row
 * carries its producer (see LocalLog), and the state is rebuilt at start-up from a snapshot (the
 * `producers` table, covering offsets below `partition_meta.producers_at`) and the rows after it
 * (see producer-state.ts). The snapshot is written only for the producers changed since the last
 * one, and only when it must be: before rows after it are removed (retention, deleteRecords, a
 * purge, compaction), when producers expire, every SNAPSHOT_EVERY_ROWS rows appended (bounding
 * the replay), and a producer's own row when a retry moves its `lastSeen` (no row is appended).
 * A failed transaction drops the memory; the next call rebuilds it from what storage holds.
 *
 * The rules are pure (`epochOf`, `sequenceOf`, producer-state.ts); the class applies them inside
 * the append's transaction.
 */
import { sql } from "../../storage/sql";
import type { AppendBatch } from "../append-batch";
import { DuplicateSequenceMismatch, InvalidRecord, OutOfOrderSequence, ProducerFenced } from "../errors";
import { sameEntry, type Entry } from "../record-batch";
import { REMEMBERED_BATCHES, type AppendResult, type ProducerId } from "../types";
import {
  expiredProducers,
  fromSnapshotRow,
  loggedBatches,
  toSnapshotRow,
  withBatch,
  type ProducerEntry,
  type ProducerRow,
  type SnapshotRow,
} from "./producer-state";
import type { PartitionTransactions } from "./transactions";

/** A producer not heard from for this long is forgotten (Kafka's producer id expiration). */
export const PRODUCER_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000;
/** How often expired producers are looked for at most. */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** Rows appended after the snapshot before it is taken again: what a start-up replays at most (about). */
export const SNAPSHOT_EVERY_ROWS = 1_000;

/**
 * What a batch's epoch is, given the newest epoch the partition has seen from its producer: a new
 * one (its sequences start afresh at 0: the old epoch's batches can no longer be retried) or the
 * current one. An older epoch is a zombie: `ProducerFenced`.
 */
export function epochOf({ producerId, epoch, sequence }: ProducerId, knownEpoch: number | undefined): "new" | "current" {
  if (knownEpoch !== undefined && epoch < knownEpoch) {
    throw new ProducerFenced(`producer ${producerId} epoch ${epoch} is fenced: epoch ${knownEpoch} has appended`);
  }
  if (knownEpoch !== undefined && epoch === knownEpoch) return "current";
  if (sequence !== 0) throw new OutOfOrderSequence(`producer ${producerId} epoch ${epoch} must start at sequence 0, got ${sequence}`);
  return "new";
}

/**
 * What a batch's sequence is in the current epoch, given the last sequence appended: the next one
 * (appended), an earlier one (a retry, or a sequence reused for other records: compared with what
 * the log holds), or one past the next (`OutOfOrderSequence`: a batch in between was lost).
 */
export function sequenceOf({ producerId, sequence }: ProducerId, lastSequence: number | undefined): "next" | "earlier" {
  const expected = lastSequence === undefined ? 0 : lastSequence + 1;
  if (sequence === expected) return "next";
  if (sequence > expected) throw new OutOfOrderSequence(`producer ${producerId} sent sequence ${sequence}, expected ${expected}`);
  return "earlier";
}

export function checkProducerId(producer: ProducerId): void {
  if (typeof producer.producerId !== "string" || producer.producerId.length === 0 || producer.producerId.length > 512) {
    throw new InvalidRecord("producerId must be a string of 1 to 512 characters");
  }
  if (!Number.isSafeInteger(producer.epoch) || producer.epoch < 0) throw new InvalidRecord("producer epoch must be a non-negative integer");
  if (!Number.isSafeInteger(producer.sequence) || producer.sequence < 0) {
    throw new InvalidRecord("producer sequence must be a non-negative integer");
  }
}

/** The stored entries of offsets `from` up to `to` (exclusive), in order (see LocalLog's `storedEntries`). */
export type StoredEntries = (from: number, to: number) => Iterable<{ offset: number; entry: Entry }>;

/** The state in memory: the entries, those changed since their row was written, and the snapshot's offset. */
interface Loaded {
  readonly entries: Map<string, ProducerEntry>;
  readonly dirty: Set<string>;
  /** Rows below this offset are in the snapshot. */
  coveredTo: number;
  /** Rows at or after `coveredTo` (replayed, then appended). */
  rowsAfter: number;
}

export class ProducerStateManager {
  private lastPrune = 0;
  private loaded: Loaded | undefined;

  constructor(
    private readonly tx: PartitionTransactions,
    private readonly storedEntries: StoredEntries,
  ) {
    tx.onRollback(() => (this.loaded = undefined));
  }

  private get db() {
    return this.tx.db;
  }

  /** The state, rebuilt from the snapshot and the rows after it on first use (and after a failed transaction). */
  private state(): Loaded {
    if (this.loaded) return this.loaded;
    const entries = new Map<string, ProducerEntry>();
    for (const row of this.db.all<SnapshotRow>(sql`SELECT producer_id, epoch, last_seen, last_base, batches FROM producers`)) {
      entries.set(row.producer_id, fromSnapshotRow(row));
    }
    const coveredTo = this.db.one<{ producers_at: number }>(sql`SELECT producers_at FROM partition_meta WHERE only = 1`)?.producers_at ?? 0;
    const dirty = new Set<string>();
    const rows = this.db.all<ProducerRow>(
      sql`SELECT base_offset, span, append_time, producer_id, producer_epoch, base_sequence FROM record_batches
          WHERE base_offset >= ${coveredTo} ORDER BY base_offset`,
    );
    for (const batch of loggedBatches(rows)) {
      const before = entries.get(batch.producerId);
      const after = withBatch(before, batch);
      if (after !== before) {
        entries.set(batch.producerId, after);
        dirty.add(batch.producerId);
      }
    }
    this.loaded = { entries, dirty, coveredTo, rowsAfter: rows.length };
    return this.loaded;
  }

  /** What the partition knows of a producer now (undefined: nothing, or forgotten). */
  entry(producerId: string): ProducerEntry | undefined {
    return this.state().entries.get(producerId);
  }

  /**
   * Applies the idempotent-producer rules. Returns the original result for a retried batch,
   * undefined when the batch is new and may be appended; throws when it must be rejected.
   * A retry is told from a reused sequence by comparing it with the records the log holds (only
   * on this rare path, so appends pay nothing for it): same keys, values, headers, and the same
   * timestamps, or none where the first attempt had none. Records retention already dropped
   * cannot be compared; the rest still are. A retry counts as the producer being seen: its row
   * is written (the only write a retry makes).
   */
  admit(producer: ProducerId, batch: AppendBatch, logStart: number, now: number): AppendResult | undefined {
    const { producerId, sequence } = producer;
    const state = this.state();
    const known = state.entries.get(producerId);
    if (epochOf(producer, known?.epoch) === "new") return undefined;
    const current = known!;
    if (sequenceOf(producer, current.batches.at(-1)?.sequence) === "next") return undefined;
    const earlier = current.batches.find((b) => b.sequence === sequence);
    if (!earlier) {
      throw new OutOfOrderSequence(`producer ${producerId} sequence ${sequence} is older than the ${REMEMBERED_BATCHES} batches remembered`);
    }
    const mismatch = () => new DuplicateSequenceMismatch(`producer ${producerId} sequence ${sequence} was already used for other records`);
    if (earlier.count !== batch.count) throw mismatch();
    const entries = batch.entries();
    const from = Math.max(earlier.base, logStart);
    for (const { offset, entry } of this.storedEntries(from, earlier.base + earlier.count)) {
      if (!sameEntry(entries[offset - earlier.base]!, entry)) throw mismatch();
    }
    if (now > current.lastSeen) {
      state.entries.set(producerId, { ...current, lastSeen: now });
      this.writeRow(state, producerId);
    }
    return { baseOffset: earlier.base, count: earlier.count, duplicate: true };
  }

  /**
   * Takes a batch of the producer's just appended at `baseOffset` (its row carries the producer:
   * nothing is written for it here), and a row appended without one into the count of rows after
   * the snapshot. `logEnd` is the end after the append: every SNAPSHOT_EVERY_ROWS rows the
   * snapshot is taken there.
   */
  appended(producer: ProducerId | undefined, baseOffset: number, count: number, rows: number, now: number, logEnd: number): void {
    const state = this.state();
    if (producer) {
      const { producerId, epoch, sequence } = producer;
      state.entries.set(producerId, withBatch(state.entries.get(producerId), { producerId, epoch, sequence, base: baseOffset, count, appendTime: now }));
      state.dirty.add(producerId);
    }
    state.rowsAfter += rows;
    if (state.rowsAfter >= SNAPSHOT_EVERY_ROWS) this.snapshot(state, logEnd, true);
  }

  /**
   * Before rows below `offset` are removed: if some of them are after the snapshot, the
   * snapshot is taken at `logEnd`. Returns the snapshot's new offset for the caller to store in
   * `partition_meta` (it writes that row anyway: LocalLog's `advanceStart`), or undefined when
   * it stands.
   */
  beforeRemovingBelow(offset: number, logEnd: number): number | undefined {
    const state = this.state();
    if (offset <= state.coveredTo) return undefined;
    this.snapshot(state, logEnd, false);
    return logEnd;
  }

  /** `beforeRemovingBelow`, storing the snapshot's offset itself (compaction deleting a row). */
  coverBelow(offset: number, logEnd: number): void {
    const state = this.state();
    if (offset > state.coveredTo) this.snapshot(state, logEnd, true);
  }

  /** Forgets producers not seen for PRODUCER_EXPIRY_MS, at most every PRUNE_EVERY_MS; `logEnd` is where the snapshot then stands. */
  maybePrune(now: number, logEnd: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    const state = this.state();
    const expired = expiredProducers(state.entries, now, PRODUCER_EXPIRY_MS);
    if (expired.length === 0) return;
    for (const producerId of expired) {
      state.entries.delete(producerId);
      state.dirty.delete(producerId);
      this.db.run(sql`DELETE FROM producers WHERE producer_id = ${producerId}`);
    }
    // The snapshot moves past their batches, so no replay brings them back.
    this.snapshot(state, logEnd, true);
  }

  /** Writes the changed producers' rows; the snapshot then covers the rows below `logEnd` (stored in meta by `writeMeta` or the caller). */
  private snapshot(state: Loaded, logEnd: number, writeMeta: boolean): void {
    for (const producerId of state.dirty) this.writeRow(state, producerId);
    state.coveredTo = logEnd;
    state.rowsAfter = 0;
    if (writeMeta) this.db.run(sql`UPDATE partition_meta SET producers_at = ${logEnd} WHERE only = 1`);
  }

  private writeRow(state: Loaded, producerId: string): void {
    const entry = state.entries.get(producerId);
    state.dirty.delete(producerId);
    if (!entry) return;
    const row = toSnapshotRow(producerId, entry);
    this.db.run(sql`INSERT INTO producers (producer_id, epoch, last_seen, last_base, batches)
                    VALUES (${row.producer_id}, ${row.epoch}, ${row.last_seen}, ${row.last_base}, ${row.batches})
                    ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_seen = excluded.last_seen,
                      last_base = excluded.last_base, batches = excluded.batches`);
  }
}
