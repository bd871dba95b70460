/**
 * The outbox: records a task committed locally and the log has not yet acknowledged, one row per
 * batch (a commit's records for one partition). Each batch gets its producer sequence when it is
 * written, in the same transaction as the state it describes, so a resend after a crash is the
 * same batch with the same sequence and the log answers it as a retry (exactly once).
 *
 * The rows are the durable copy. While this object knows every unsent batch — it saw the outbox
 * empty, or cleared it, and wrote every batch since — it also keeps them in memory and sends from
 * there, without reading back and parsing what it has just written. A rolled-back transaction
 * (`forget()`) or a restart makes it read the rows again until it next sees the outbox empty.
 *
 * A batch is stored encoded as the log takes it (`encodeBatch`, src/log/record-batch.ts), so
 * that the same string is the durable copy and what is sent, with the measure that spares the log
 * parsing it again; records that encoding does not carry exactly are stored as a JSON array of the
 * records, and sent as records (for the log to refuse).
 */
import { type Sql, sql } from "../storage/sql";
import { decodeRecords, encodeBatch, joinEncoded, toEntry, type EncodedRecords } from "../log/record-batch";
import { recordBytes } from "../log/records";
import { fitsInOneRow, MAX_ROW_BYTES, splitIntoRows } from "../log/stored-batch";
import type { ProducerRecord, TopicPartition } from "../log/types";

export const CHANGELOG_PHASE = 0;
export const OUTPUT_PHASE = 1;

export interface OutboxBatch extends TopicPartition {
  readonly id: number;
  readonly commitId: number;
  /** `CHANGELOG_PHASE` or `OUTPUT_PHASE`: a commit's changelog batches are sent first. */
  readonly phase: number;
  readonly sequence: number;
  readonly records: ProducerRecord[];
  /** The records encoded by `encodeBatch` (with its measure when the log takes them as they are), when they could be. */
  readonly encoded?: EncodedRecords;
}

/**
 * Encoded size a chunk aims at: well under a row (MAX_ROW_BYTES), as the estimate below counts
 * characters before encoding, and JSON escapes the quotes of JSON values.
 */
const CHUNK_ESTIMATE_CHARS = Math.floor(0.6 * MAX_ROW_BYTES);
/** Brackets, quotes, commas and a timestamp of an encoded entry, beyond its strings. */
const ENTRY_OVERHEAD_CHARS = 24;

/**
 * A batch in stretches that each encode to about a row at most, by the length of their strings:
 * a commit's batch of a busy partition is encoded once, in pieces, not whole first and then again.
 */
export function aboutRowSized(records: readonly ProducerRecord[]): (readonly ProducerRecord[])[] {
  const chunks: (readonly ProducerRecord[])[] = [];
  let start = 0;
  let chars = 0;
  for (let i = 0; i < records.length; i++) {
    // Not validated yet (encoding does that): anything unexpected counts as an empty entry.
    const { key, value, headers } = (records[i] ?? {}) as Partial<ProducerRecord>;
    let size = ENTRY_OVERHEAD_CHARS + (typeof key === "string" ? key.length : 0) + (typeof value === "string" ? value.length : 0);
    if (Array.isArray(headers)) for (const h of headers) size += (h?.key?.length ?? 0) + (h?.value?.length ?? 0) + 6;
    if (chars + size > CHUNK_ESTIMATE_CHARS && i > start) {
      chunks.push(records.slice(start, i));
      start = i;
      chars = 0;
    }
    chars += size;
  }
  if (start === 0) return [records];
  chunks.push(records.slice(start));
  return chunks;
}

type BatchRow = { id: number; commit_id: number; phase: number; topic: string; partition: number; sequence: number; records: string };

export class Outbox {
  /** Every unsent batch in the order written, when this object knows them all; else undefined. */
  private known: OutboxBatch[] | undefined;
  /**
   * Commits up to this one have had batches handed to the log (see `seal`): their batches are
   * what a resend must repeat, so no later commit may join them. In memory: after a restart
   * nothing joins until the outbox is seen empty.
   */
  private sealedThrough = -Infinity;

  constructor(private readonly db: Sql) {}

  /**
   * Adds a batch with the partition's next producer sequence; a batch too big for one row (1 MiB,
   * see stored-batch.ts) becomes several, each with its own sequence, sent in order. Call inside
   * the commit's transaction.
   */
  add(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[]): void {
    for (const chunk of aboutRowSized(records)) this.addChunk(commitId, phase, tp, chunk);
  }

  /**
   * The commit a new commit's batches join: the newest one in the outbox while none of its
   * batches has been handed to the log (a lingering send, see `StreamTask`'s `lingerMs`), else
   * `commitId` itself. Joined, the new records extend that commit's batch of the same partition
   * and phase (while it fits in a row) instead of adding one batch, and one append, per commit.
   * A commit's changelog still goes before its output: both phases of the joined commits are
   * sent as one commit's.
   */
  joinableCommit(commitId: number): number {
    if (!this.known || this.known.length === 0) return commitId;
    const newest = this.known.reduce((n, b) => Math.max(n, b.commitId), -Infinity);
    return newest > this.sealedThrough ? newest : commitId;
  }

  /** Batches of commits up to `commitId` go to the log now: nothing joins them from here on. */
  seal(commitId: number): void {
    this.sealedThrough = Math.max(this.sealedThrough, commitId);
  }

  private addChunk(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[]): void {
    const encoded = encodeBatch(records);
    if (encoded !== undefined && this.extend(commitId, phase, tp, records, encoded)) return;
    // The common case: the batch as one row, without taking its records apart again.
    if (encoded === undefined || fitsInOneRow(encoded.text, records.length)) {
      this.addRow(commitId, phase, tp, records, encoded);
      return;
    }
    // Still too big (values that grow a lot when encoded): each half is encoded again until it fits.
    if (records.length > 1) {
      const half = Math.ceil(records.length / 2);
      this.addChunk(commitId, phase, tp, records.slice(0, half));
      this.addChunk(commitId, phase, tp, records.slice(half));
      return;
    }
    // One record too big for a row: refused as a stored row would be.
    const entries = records.map(toEntry);
    const sizes = Uint32Array.from(records, (r) => recordBytes(r.key, r.value, r.headers ?? []));
    let at = 0;
    for (const chunk of splitIntoRows(entries, sizes, encoded.text)) {
      this.addRow(commitId, phase, tp, records.slice(at, at + chunk.entries.length), { text: chunk.records, measure: undefined });
      at += chunk.entries.length;
    }
  }

  /**
   * Appends the records to the commit's unsealed batch of this partition and phase when there is
   * one (encoded, and the last of that partition) and the whole still fits in a row.
   */
  private extend(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], encoded: EncodedRecords): boolean {
    if (!this.known || commitId <= this.sealedThrough || records.length === 0) return false;
    let index = this.known.length - 1;
    while (index >= 0 && (this.known[index]!.topic !== tp.topic || this.known[index]!.partition !== tp.partition)) index--;
    const batch = this.known[index];
    if (!batch || batch.commitId !== commitId || batch.phase !== phase || !batch.encoded || batch.records.length === 0) return false;
    // A string's UTF-8 length is at least its length: most batches too big to join stop here, unscanned.
    if (batch.encoded.text.length + encoded.text.length > MAX_ROW_BYTES) return false;
    const joined = joinEncoded(batch.encoded, encoded);
    const count = batch.records.length + records.length;
    if (!fitsInOneRow(joined.text, count)) return false;
    this.db.run(sql`UPDATE outbox SET records = ${joined.text} WHERE id = ${batch.id}`);
    this.known[index] = { ...batch, records: [...batch.records, ...records], encoded: joined };
    return true;
  }

  private addRow(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], encoded: EncodedRecords | undefined): void {
    const next = this.db.one<{ next: number }>(sql`SELECT next FROM producer_sequences WHERE topic = ${tp.topic} AND partition = ${tp.partition}`)?.next ?? 0;
    this.db.run(sql`INSERT INTO producer_sequences (topic, partition, next) VALUES (${tp.topic}, ${tp.partition}, ${next + 1})
                    ON CONFLICT (topic, partition) DO UPDATE SET next = excluded.next`);
    const [row] = this.db.all<{ id: number }>(sql`INSERT INTO outbox (commit_id, phase, topic, partition, sequence, records)
                    VALUES (${commitId}, ${phase}, ${tp.topic}, ${tp.partition}, ${next}, ${encoded?.text ?? JSON.stringify(records)}) RETURNING id`);
    this.known?.push({ id: row!.id, commitId, phase, topic: tp.topic, partition: tp.partition, sequence: next, records: records as ProducerRecord[], encoded });
  }

  /**
   * The oldest commit's batches of its earliest unsent phase — the next group to send together —
   * leaving out the batches in `skip` (sent already by the caller).
   */
  nextGroup(skip: ReadonlySet<number> = new Set()): OutboxBatch[] {
    if (this.known) {
      let head: OutboxBatch | undefined;
      for (const batch of this.known) {
        if (skip.has(batch.id)) continue;
        if (!head || batch.commitId < head.commitId || (batch.commitId === head.commitId && batch.phase < head.phase)) head = batch;
      }
      return head ? this.known.filter((b) => !skip.has(b.id) && b.commitId === head.commitId && b.phase === head.phase) : [];
    }
    const pending = this.db
      .all<{ id: number; commit_id: number; phase: number }>(sql`SELECT id, commit_id, phase FROM outbox ORDER BY commit_id, phase, id`)
      .filter((row) => !skip.has(row.id));
    const head = pending[0];
    if (!head) return [];
    const ids = new Set(pending.filter((r) => r.commit_id === head.commit_id && r.phase === head.phase).map((r) => r.id));
    return this.db
      .all<BatchRow>(
        sql`SELECT id, commit_id, phase, topic, partition, sequence, records FROM outbox
            WHERE commit_id = ${head.commit_id} AND phase = ${head.phase} ORDER BY id`,
      )
      .filter((row) => ids.has(row.id))
      .map((row) => {
        const records = decodeRecords(row.records);
        // Stored encoded, unless the records could not be (or the row predates encoded batches).
        const again = encodeBatch(records);
        const encoded = again?.text === row.records ? again : undefined;
        return { id: row.id, commitId: row.commit_id, phase: row.phase, topic: row.topic, partition: row.partition, sequence: row.sequence, records, encoded };
      });
  }

  /**
   * Replaces a batch the log refused (see refused-records.ts), inside the caller's transaction:
   * with the records it takes, at the same sequence (the log never took that sequence), or, when
   * none is left, by nothing — the partition's later batches, none of which the log can have taken
   * after a refused one, move down a sequence each, as Kafka's producer adjusts the sequences
   * behind a failed batch. Dead letters join the batch's commit as output batches with their
   * partitions' next sequences. False when the batch is gone already (a wipe).
   */
  repair(batch: OutboxBatch, keep: readonly ProducerRecord[], deadLetters: readonly { tp: TopicPartition; records: readonly ProducerRecord[] }[]): boolean {
    if (!this.db.one(sql`SELECT 1 AS one FROM outbox WHERE id = ${batch.id}`)) return false;
    if (keep.length > 0) {
      this.db.run(sql`UPDATE outbox SET records = ${encodeBatch(keep)?.text ?? JSON.stringify(keep)} WHERE id = ${batch.id}`);
    } else {
      this.db.run(sql`DELETE FROM outbox WHERE id = ${batch.id}`);
      this.db.run(
        sql`UPDATE outbox SET sequence = sequence - 1 WHERE topic = ${batch.topic} AND partition = ${batch.partition} AND sequence > ${batch.sequence}`,
      );
      this.db.run(sql`UPDATE producer_sequences SET next = next - 1 WHERE topic = ${batch.topic} AND partition = ${batch.partition}`);
    }
    // Read back from the rows from here on (the batches changed under the copy in memory).
    this.known = undefined;
    for (const { tp, records } of deadLetters) this.add(batch.commitId, OUTPUT_PHASE, tp, records);
    return true;
  }

  remove(id: number): void {
    this.db.run(sql`DELETE FROM outbox WHERE id = ${id}`);
    if (this.known) this.known = this.known.filter((b) => b.id !== id);
  }

  isEmpty(): boolean {
    if (this.known) return this.known.length === 0;
    const empty = !this.db.one(sql`SELECT 1 AS one FROM outbox LIMIT 1`);
    // From here on, this object writes every batch there is: it can keep them.
    if (empty) this.known = [];
    return empty;
  }

  pendingBatches(): number {
    if (this.known) return this.known.length;
    return this.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM outbox`)?.n ?? 0;
  }

  /** Drops every unsent batch and restarts sequences: only with a new producer epoch (a wipe or a new assignment). */
  clear(): void {
    this.db.run(sql`DELETE FROM outbox`);
    this.db.run(sql`DELETE FROM producer_sequences`);
    this.known = [];
  }

  /** Stops trusting the copy in memory (a transaction that wrote or removed batches rolled back). */
  forget(): void {
    this.known = undefined;
  }
}
