/**
 * Idempotent producers' state in a partition (Kafka's `ProducerStateManager`): each producer's
 * newest epoch and when it was last seen (`producers`), and its last REMEMBERED_BATCHES batches'
 * sequences and offsets (`producer_batches`), so that a retried batch is answered with its first
 * result instead of being appended twice, and a zombie of an older epoch is fenced.
 *
 * The rules are pure (`epochOf`, `sequenceOf`); the class applies them to the stored state inside
 * the append's transaction.
 */
import { sql } from "../../storage/sql";
import type { AppendBatch } from "../append-batch";
import { DuplicateSequenceMismatch, InvalidRecord, OutOfOrderSequence, ProducerFenced } from "../errors";
import { sameEntry, type Entry } from "../record-batch";
import { REMEMBERED_BATCHES, type AppendResult, type ProducerId } from "../types";
import type { PartitionTransactions } from "./transactions";

/** A producer not heard from for this long is forgotten (Kafka's producer id expiration). */
export const PRODUCER_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000;
/** How often expired producers are looked for at most. */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;

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

export class ProducerStateManager {
  private lastPrune = 0;

  constructor(
    private readonly tx: PartitionTransactions,
    private readonly storedEntries: StoredEntries,
  ) {}

  private get db() {
    return this.tx.db;
  }

  /**
   * Applies the idempotent-producer rules. Returns the original result for a retried batch,
   * undefined when the batch is new and may be appended; throws when it must be rejected.
   * A retry is told from a reused sequence by comparing it with the records the log holds (only
   * on this rare path, so appends pay nothing for it): same keys, values, headers, and the same
   * timestamps, or none where the first attempt had none. Records retention already dropped
   * cannot be compared; the rest still are.
   */
  admit(producer: ProducerId, batch: AppendBatch, logStart: number, now: number): AppendResult | undefined {
    const { producerId, epoch, sequence } = producer;
    const known = this.db.one<{ epoch: number }>(sql`SELECT epoch FROM producers WHERE producer_id = ${producerId}`);
    const epochIs = epochOf(producer, known?.epoch);
    this.db.run(sql`INSERT INTO producers (producer_id, epoch, last_seen) VALUES (${producerId}, ${epoch}, ${now})
                    ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_seen = excluded.last_seen`);
    if (epochIs === "new") {
      this.db.run(sql`DELETE FROM producer_batches WHERE producer_id = ${producerId}`);
      return undefined;
    }
    const last = this.db.one<{ last: number | null }>(sql`SELECT MAX(sequence) AS last FROM producer_batches WHERE producer_id = ${producerId}`)?.last;
    if (sequenceOf(producer, last ?? undefined) === "next") return undefined;
    const earlier = this.db.one<{ base_offset: number; count: number }>(
      sql`SELECT base_offset, count FROM producer_batches WHERE producer_id = ${producerId} AND sequence = ${sequence}`,
    );
    if (!earlier) {
      throw new OutOfOrderSequence(`producer ${producerId} sequence ${sequence} is older than the ${REMEMBERED_BATCHES} batches remembered`);
    }
    const mismatch = () => new DuplicateSequenceMismatch(`producer ${producerId} sequence ${sequence} was already used for other records`);
    if (earlier.count !== batch.count) throw mismatch();
    const entries = batch.entries();
    const from = Math.max(earlier.base_offset, logStart);
    for (const { offset, entry } of this.storedEntries(from, earlier.base_offset + earlier.count)) {
      if (!sameEntry(entries[offset - earlier.base_offset]!, entry)) throw mismatch();
    }
    return { baseOffset: earlier.base_offset, count: earlier.count, duplicate: true };
  }

  /** Remembers an appended batch of the producer's, forgetting those older than REMEMBERED_BATCHES. */
  appended(producer: ProducerId, baseOffset: number, count: number): void {
    this.db.run(sql`INSERT INTO producer_batches (producer_id, sequence, base_offset, count)
                    VALUES (${producer.producerId}, ${producer.sequence}, ${baseOffset}, ${count})`);
    this.db.run(sql`DELETE FROM producer_batches
                    WHERE producer_id = ${producer.producerId} AND sequence <= ${producer.sequence - REMEMBERED_BATCHES}`);
  }

  /** Forgets producers not seen for PRODUCER_EXPIRY_MS, at most every PRUNE_EVERY_MS. */
  maybePrune(now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    const cutoff = now - PRODUCER_EXPIRY_MS;
    this.db.run(sql`DELETE FROM producer_batches WHERE producer_id IN
                    (SELECT producer_id FROM producers WHERE last_seen < ${cutoff})`);
    this.db.run(sql`DELETE FROM producers WHERE last_seen < ${cutoff}`);
  }
}
