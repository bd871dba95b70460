/**
 * The outbox: records a task committed locally and the log has not yet acknowledged, one batch
 * per commit and partition. Each batch gets its producer sequence when it is written, in the same
 * transaction as the state it describes, so a resend after a crash is the same batch with the same
 * sequence and the log answers it as a retry (exactly once).
 *
 * The batches live in the task's book (task-book.ts): inline in its one row, which every commit
 * writes anyway, or — when the row would pass the cap — each in a row of its own. Adding a batch
 * and removing an acknowledged one write no row of their own; the book's next write carries them.
 * Records decoded from a batch are kept in memory by batch id until a rollback (`forget()`).
 *
 * A batch is stored encoded as the log takes it (`encodeBatch`, src/log/record-batch.ts), so
 * that the same string is the durable copy and what is sent, with the measure that spares the log
 * parsing it again; records that encoding does not carry exactly are stored as a JSON array of the
 * records, and sent as records (for the log to refuse).
 */
import { decodeRecords, encodeBatch, joinEncoded, toEntry, type EncodedRecords } from "../log/record-batch";
import { recordBytes } from "../log/records";
import { topicPartition } from "../names";
import { fitsInOneRow, MAX_ROW_BYTES, splitIntoRows } from "../log/stored-batch";
import type { ProducerRecord, TopicPartition } from "../log/types";
import { type BookBatch, inlineBatch, takeSequence } from "./task-book";
import { readSpilled, removeSpilled, rewriteSpilled } from "./task-book-row";
import type { TaskStorage } from "./task-storage";

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
export const ENTRY_OVERHEAD_CHARS = 24;

/**
 * A batch in stretches that each encode to about a row at most, by the length of their strings:
 * a commit's batch of a busy partition is encoded once, in pieces, not whole first and then again.
 */
export function aboutRowSized(records: readonly ProducerRecord[]): (readonly ProducerRecord[])[] {
  const chunks: (readonly ProducerRecord[])[] = [];
  let start = 0;
  let chars = 0;
  for (let i = 0; i < records.length; i++) {
    const size = estimatedChars(records[i]);
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

/** What a record counts for in `aboutRowSized` (the record collector counts the same as it gathers a batch). */
export function estimatedChars(record: ProducerRecord | undefined): number {
  // Not validated yet (encoding does that): anything unexpected counts as an empty entry.
  const { key, value, headers } = (record ?? {}) as Partial<ProducerRecord>;
  let size = ENTRY_OVERHEAD_CHARS + (typeof key === "string" ? key.length : 0) + (typeof value === "string" ? value.length : 0);
  if (Array.isArray(headers)) for (const h of headers) size += (h?.key?.length ?? 0) + (h?.value?.length ?? 0) + 6;
  return size;
}

/** A batch's records, decoded (and encoded as the log takes them, when they can be). */
interface Decoded {
  readonly records: ProducerRecord[];
  readonly encoded: EncodedRecords | undefined;
}

export class Outbox {
  /** Records of batches by id, as written or read (dropped with a rollback: ids may be taken again). */
  private decoded = new Map<number, Decoded>();
  /**
   * Commits up to this one have had batches handed to the log (see `seal`): their batches are
   * what a resend must repeat, so no later commit may join them. In memory: whatever was in the
   * book when it was read again (a restart, a rollback) counts as sealed.
   */
  private sealedThrough = -Infinity;
  /** The book is read again before the next look at it (a restart, a rollback): seal what it holds. */
  private reread = true;

  constructor(private readonly storage: TaskStorage) {}

  /** The book's batches (sealing those of a book read again). */
  private batches(): readonly BookBatch[] {
    const batches = this.storage.book().batches;
    if (this.reread) {
      this.reread = false;
      for (const b of batches) this.sealedThrough = Math.max(this.sealedThrough, b.commitId);
    }
    return batches;
  }

  /**
   * Adds a batch with the partition's next producer sequence; a batch too big for one row (1 MiB,
   * see stored-batch.ts) becomes several, each with its own sequence, sent in order. Call inside
   * the commit's transaction. `estimated`: the records' `estimatedChars` summed, when the caller
   * counted them as it gathered them.
   */
  add(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], estimated?: number): void {
    // A batch estimated (`estimatedChars`, summed by the caller) within a chunk is one chunk: no pass over it here.
    const chunks = estimated !== undefined && estimated <= CHUNK_ESTIMATE_CHARS ? [records] : aboutRowSized(records);
    // Only the first chunk may extend a batch written before: the others are apart by their size.
    let first = true;
    for (const chunk of chunks) {
      this.addChunk(commitId, phase, tp, chunk, first);
      first = false;
    }
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
    const batches = this.batches();
    if (batches.length === 0) return commitId;
    const newest = batches.reduce((n, b) => Math.max(n, b.commitId), -Infinity);
    return newest > this.sealedThrough ? newest : commitId;
  }

  /** Batches of commits up to `commitId` go to the log now: nothing joins them from here on. */
  seal(commitId: number): void {
    this.sealedThrough = Math.max(this.sealedThrough, commitId);
  }

  private addChunk(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], mayExtend = false): void {
    const encoded = encodeBatch(records);
    if (encoded !== undefined && mayExtend && this.extend(commitId, phase, tp, records, encoded)) return;
    // The common case: the batch as one row, without taking its records apart again.
    if (encoded === undefined || fitsInOneRow(encoded.text, records.length)) {
      this.addBatch(commitId, phase, tp, records, encoded);
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
      this.addBatch(commitId, phase, tp, records.slice(at, at + chunk.entries.length), { text: chunk.records, measure: undefined });
      at += chunk.entries.length;
    }
  }

  /**
   * Appends the records to the commit's unsealed batch of this partition and phase when there is
   * one (encoded, inline in the book's row, and the last of that partition) and the whole still
   * fits in a row.
   */
  private extend(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], encoded: EncodedRecords): boolean {
    if (commitId <= this.sealedThrough || records.length === 0) return false;
    const batches = this.batches();
    let index = batches.length - 1;
    while (index >= 0 && (batches[index]!.topic !== tp.topic || batches[index]!.partition !== tp.partition)) index--;
    const batch = batches[index];
    if (!batch || batch.commitId !== commitId || batch.phase !== phase || batch.spilled) return false;
    const known = this.decode(batch);
    if (!known.encoded || known.records.length === 0) return false;
    // A string's UTF-8 length is at least its length: most batches too big to join stop here, unscanned.
    if (known.encoded.text.length + encoded.text.length > MAX_ROW_BYTES) return false;
    const joined = joinEncoded(known.encoded, encoded);
    const count = known.records.length + records.length;
    if (!fitsInOneRow(joined.text, count)) return false;
    this.storage.edit((book) => {
      book.batches[index] = inlineBatch({ ...batch, text: joined.text }, joined.bytes);
    });
    this.decoded.set(batch.id, { records: [...known.records, ...records], encoded: joined });
    return true;
  }

  private addBatch(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[], encoded: EncodedRecords | undefined): void {
    this.batches();
    this.storage.edit((book) => {
      const sequence = takeSequence(book, tp);
      const id = book.nextBatchId++;
      const text = encoded?.text ?? JSON.stringify(records);
      book.batches.push(inlineBatch({ id, commitId, phase, topic: tp.topic, partition: tp.partition, sequence, text }, encoded?.bytes));
      this.decoded.set(id, { records: records as ProducerRecord[], encoded });
    });
  }

  /** A batch's records: as written or read before, else from the book (or its own row). */
  private decode(batch: BookBatch): Decoded {
    let known = this.decoded.get(batch.id);
    if (!known) {
      const text = batch.text ?? readSpilled(this.storage.db, batch.id);
      const records = decodeRecords(text);
      // Stored encoded, unless the records could not be (or the batch predates encoded batches).
      const again = encodeBatch(records);
      known = { records, encoded: again?.text === text ? again : undefined };
      this.decoded.set(batch.id, known);
    }
    return known;
  }

  private toOutboxBatch(batch: BookBatch): OutboxBatch {
    const { records, encoded } = this.decode(batch);
    const { id, commitId, phase, topic, partition, sequence } = batch;
    return { id, commitId, phase, topic, partition, sequence, records, encoded };
  }

  /**
   * The oldest commit's batches of its earliest unsent phase — the next group to send together —
   * leaving out the batches in `skip` (sent already by the caller).
   */
  nextGroup(skip: ReadonlySet<number> = new Set()): OutboxBatch[] {
    const batches = this.batches();
    let head: BookBatch | undefined;
    for (const batch of batches) {
      if (skip.has(batch.id)) continue;
      if (!head || batch.commitId < head.commitId || (batch.commitId === head.commitId && batch.phase < head.phase)) head = batch;
    }
    if (!head) return [];
    return batches.filter((b) => !skip.has(b.id) && b.commitId === head.commitId && b.phase === head.phase).map((b) => this.toOutboxBatch(b));
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
    const stored = this.batches().find((b) => b.id === batch.id);
    if (!stored) return false;
    this.decoded.delete(batch.id);
    this.storage.edit((book) => {
      if (keep.length > 0) {
        const text = encodeBatch(keep)?.text ?? JSON.stringify(keep);
        if (stored.spilled) rewriteSpilled(this.storage.db, stored.id, text);
        book.batches = book.batches.map((b) => (b.id !== stored.id ? b : stored.spilled ? { ...b, text } : inlineBatch({ ...b, text })));
        return;
      }
      removeSpilled(this.storage.db, stored);
      book.batches = book.batches
        .filter((b) => b.id !== stored.id)
        .map((b) => (b.topic === stored.topic && b.partition === stored.partition && b.sequence > stored.sequence ? { ...b, sequence: b.sequence - 1 } : b));
      const next = book.sequences.get(topicPartition(stored));
      if (next) next.next--;
    });
    for (const { tp, records } of deadLetters) this.add(batch.commitId, OUTPUT_PHASE, tp, records);
    return true;
  }

  /** An acknowledged batch leaves the outbox (with the book's next write; a spilled one's row now). */
  remove(id: number): void {
    const stored = this.batches().find((b) => b.id === id);
    if (!stored) return;
    this.storage.edit((book) => {
      removeSpilled(this.storage.db, stored);
      book.batches = book.batches.filter((b) => b.id !== id);
    });
    this.decoded.delete(id);
  }

  isEmpty(): boolean {
    return this.batches().length === 0;
  }

  pendingBatches(): number {
    return this.batches().length;
  }

  /** Drops every unsent batch and restarts sequences: only with a new producer epoch (a wipe or a new assignment). */
  clear(): void {
    const batches = this.batches();
    if (batches.length === 0 && this.storage.book().sequences.size === 0) return;
    this.storage.edit((book) => {
      for (const batch of batches) removeSpilled(this.storage.db, batch);
      book.batches = [];
      book.sequences.clear();
    });
    this.decoded.clear();
  }

  /** Stops trusting what is in memory (a transaction that wrote or removed batches rolled back): the book is read again. */
  forget(): void {
    this.decoded.clear();
    this.reread = true;
  }
}
