/**
 * A task instance's book: everything it keeps about itself — identity and lifecycle (the meta),
 * per changelog partition the checkpoint (I1), per input partition the position, partition time,
 * records processed and the offset the group holds, per partition written the next producer
 * sequence, and the outbox's batches — as one value, stored as ONE row (`task_book`, see
 * task-book-row.ts). A commit changes many of these at once; SQLite bills a row written whatever
 * it holds (up to the row cap), so the book is written once per transaction, not once per fact
 * (issue #33). Pure: the rules and the row's encoding, no storage.
 *
 * The row holds two columns: a JSON header (everything but the batches' records) and the inline
 * batches' encoded records, concatenated; the header gives each inline batch's length. A batch
 * that would take the row over MAX_ROW_BYTES is spilled to a row of its own (`outbox_spill`) when
 * the book is written (`planRow`), and stays there until the log acknowledged it.
 */
import { utf8Length } from "../log/records";
import { MAX_ROW_BYTES } from "../log/stored-batch";
import type { TopicPartition } from "../log/types";
import { parseTopicPartition, topicPartition } from "../names";
import type { RecordOrigin } from "../streams/errors";
import type { AppliedReset } from "./input-reset";
import type { TaskRole, TaskState } from "./state";

export interface TaskMeta {
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  readonly state: TaskState;
  /** The coordinator's epoch for this assignment (I3). */
  readonly epoch: number;
  /** Bumped by every wipe: the store's generation (I1, I4). */
  readonly incarnation: number;
  readonly nextCommit: number;
  /** Why processing stopped, when it did (an uncaught error, fencing, an application shutdown). */
  readonly failure: string | null;
  /**
   * The input record processing stopped at, when a record caused the failure; null (or absent)
   * otherwise, and always null without a failure (`writeMeta` sees to it).
   */
  readonly failedAt?: RecordOrigin | null;
  /**
   * Records an operator asked to pass over (`POST /admin/tasks/:id/skip`) that processing has not
   * passed yet: never processed; each leaves with the commit that moves its partition past it.
   */
  readonly skips?: readonly RecordOrigin[];
  /** The last input reset the instance applied (the coordinator repeats a reset until told; it is applied once). */
  readonly lastReset?: AppliedReset | null;
  /** Records processed by the incarnations before the last wipe (which deletes the rows counting them). */
  readonly processedBefore?: number;
  /**
   * The failure must stop the whole application (`"shutdown-application"`), and the coordinator
   * has not confirmed it knows yet. Durable, so a crash in between cannot lose the request.
   */
  readonly shutdownRequested: boolean;
}

/** Per changelog partition: the offset below which the store reflects the changelog, and the records the latest restoration applied. */
export interface CheckpointEntry extends TopicPartition {
  offset: number;
  replayed: number;
}

/** Per input partition: the next offset to process, the offset the group holds, records processed, partition time (-1: not known). */
export interface InputEntry extends TopicPartition {
  offset: number;
  committed: number | null;
  processed: number;
  partitionTime: number;
}

/** An outbox batch as the book keeps it: its records encoded (`text`), inline in the row or in a row of its own. */
export interface BookBatch extends TopicPartition {
  readonly id: number;
  readonly commitId: number;
  /** 0: changelog, 1: output (see outbox.ts). */
  readonly phase: number;
  readonly sequence: number;
  /** The stored records; undefined for a spilled batch not read yet. */
  readonly text: string | undefined;
  /** UTF-8 bytes of `text` (0 for a spilled batch: it takes no room in the book's row). */
  readonly bytes: number;
  /** Stored in a row of its own (`outbox_spill`), by id. */
  readonly spilled: boolean;
}

export interface TaskBook {
  meta: TaskMeta | undefined;
  readonly checkpoints: Map<string, CheckpointEntry>;
  readonly inputs: Map<string, InputEntry>;
  /** The next producer sequence per partition written, for the current producer epoch. */
  readonly sequences: Map<string, { readonly tp: TopicPartition; next: number }>;
  /** Unacknowledged batches, in the order written (ids grow). */
  batches: BookBatch[];
  nextBatchId: number;
}

export function emptyBook(): TaskBook {
  return { meta: undefined, checkpoints: new Map(), inputs: new Map(), sequences: new Map(), batches: [], nextBatchId: 1 };
}

/** The stored form: the header and the inline batches' records, concatenated. */
export interface BookRow {
  readonly header: string;
  readonly batches: string;
}

type HeaderBatch = [id: number, commitId: number, phase: number, topic: string, partition: number, sequence: number, length: number];
interface Header {
  readonly meta: TaskMeta | null;
  readonly checkpoints: [topic: string, partition: number, offset: number, replayed: number][];
  readonly inputs: [topic: string, partition: number, offset: number, committed: number | null, processed: number, time: number][];
  readonly sequences: [topic: string, partition: number, next: number][];
  /** Length -1: spilled. */
  readonly batches: HeaderBatch[];
  readonly nextBatchId: number;
}

/** Room kept in the row beyond the header as measured (the spilled batches' lengths shrink it, never grow it). */
const ROW_MARGIN_BYTES = 64;

/** What writing the book takes: the row, and the batches to spill first (each to a row of its own). */
export interface RowPlan {
  readonly row: BookRow;
  readonly spill: readonly BookBatch[];
}

/**
 * Lays out the book's row: batches stay inline, oldest first, while the row stays within `cap`;
 * a batch that would take it over is spilled (once spilled, a batch stays so). The header alone
 * is assumed to fit (its size is bounded by the task's partitions).
 */
export function planRow(book: TaskBook, cap = MAX_ROW_BYTES): RowPlan {
  const budget = cap - ROW_MARGIN_BYTES - utf8Length(encodeHeader(book, new Set()));
  const spill: BookBatch[] = [];
  let used = 0;
  for (const batch of book.batches) {
    if (batch.spilled) continue;
    if (used + batch.bytes <= budget) used += batch.bytes;
    else spill.push(batch);
  }
  const spilled = new Set(spill.map((b) => b.id));
  const inline = book.batches.filter((b) => !b.spilled && !spilled.has(b.id)).map((b) => b.text!);
  return { row: { header: encodeHeader(book, spilled), batches: inline.join("") }, spill };
}

function encodeHeader(book: TaskBook, spilling: ReadonlySet<number>): string {
  const header: Header = {
    meta: book.meta ?? null,
    checkpoints: [...book.checkpoints.values()].map((c) => [c.topic, c.partition, c.offset, c.replayed]),
    inputs: [...book.inputs.values()].map((i) => [i.topic, i.partition, i.offset, i.committed, i.processed, i.partitionTime]),
    sequences: [...book.sequences.values()].map(({ tp, next }) => [tp.topic, tp.partition, next]),
    batches: book.batches.map((b) => [b.id, b.commitId, b.phase, b.topic, b.partition, b.sequence, b.spilled || spilling.has(b.id) ? -1 : b.text!.length]),
    nextBatchId: book.nextBatchId,
  };
  return JSON.stringify(header);
}

/** The book a row holds (spilled batches without their records: read them by id when needed). */
export function decodeBook(row: BookRow): TaskBook {
  const header = JSON.parse(row.header) as Header;
  const book = emptyBook();
  book.meta = header.meta ?? undefined;
  for (const [topic, partition, offset, replayed] of header.checkpoints)
    book.checkpoints.set(topicPartition({ topic, partition }), { topic, partition, offset, replayed });
  for (const [topic, partition, offset, committed, processed, partitionTime] of header.inputs)
    book.inputs.set(topicPartition({ topic, partition }), { topic, partition, offset, committed, processed, partitionTime });
  for (const [topic, partition, next] of header.sequences) book.sequences.set(topicPartition({ topic, partition }), { tp: { topic, partition }, next });
  let at = 0;
  for (const [id, commitId, phase, topic, partition, sequence, length] of header.batches) {
    if (length < 0) {
      book.batches.push({ id, commitId, phase, topic, partition, sequence, text: undefined, bytes: 0, spilled: true });
      continue;
    }
    const text = row.batches.slice(at, at + length);
    at += length;
    book.batches.push({ id, commitId, phase, topic, partition, sequence, text, bytes: utf8Length(text), spilled: false });
  }
  if (at !== row.batches.length) throw new Error(`the task's book row is inconsistent: ${row.batches.length - at} characters of batches left over`);
  book.nextBatchId = header.nextBatchId;
  return book;
}

/**
 * A new inline batch (placed by `planRow` when the book is next written). `bytes`: its text's
 * UTF-8 bytes when the caller knows them (see `EncodedRecords.bytes`), else counted here.
 */
export function inlineBatch(fields: Omit<BookBatch, "bytes" | "spilled">, bytes?: number): BookBatch {
  return { ...fields, bytes: bytes ?? utf8Length(fields.text!), spilled: false };
}

// The rules of the book's entries (as the tables' SQL had them).

/** Moves input positions forward (never back), adding the records processed in each to its count. */
export function advancePositions(book: TaskBook, positions: Readonly<Record<string, number>>, processed: Readonly<Record<string, number>> = {}): void {
  for (const [key, offset] of Object.entries(positions)) {
    const count = processed[key] ?? 0;
    const entry = book.inputs.get(key);
    if (entry) {
      entry.offset = Math.max(entry.offset, offset);
      entry.processed += count;
    } else book.inputs.set(key, { ...parseKey(key), offset, committed: null, processed: count, partitionTime: -1 });
  }
}

/** Notes offsets the group holds (a committed offset only grows; an unknown partition starts there). */
export function noteCommitted(book: TaskBook, positions: Readonly<Record<string, number>>): void {
  for (const [key, offset] of Object.entries(positions)) {
    const entry = book.inputs.get(key);
    if (entry) entry.committed = Math.max(entry.committed ?? 0, offset);
    else book.inputs.set(key, { ...parseKey(key), offset, committed: offset, processed: 0, partitionTime: -1 });
  }
}

/** Partition times of the task's input partitions already positioned (they never go back). */
export function advancePartitionTimes(book: TaskBook, partition: number, times: Readonly<Record<string, number>>): void {
  for (const [topic, time] of Object.entries(times)) {
    const entry = book.inputs.get(topicPartition({ topic, partition }));
    if (entry) entry.partitionTime = Math.max(entry.partitionTime, time);
  }
}

export function setCheckpoint(book: TaskBook, tp: TopicPartition, offset: number): void {
  const key = topicPartition(tp);
  const entry = book.checkpoints.get(key);
  if (entry) entry.offset = offset;
  else book.checkpoints.set(key, { topic: tp.topic, partition: tp.partition, offset, replayed: 0 });
}

/** Takes the partition's next producer sequence. */
export function takeSequence(book: TaskBook, tp: TopicPartition): number {
  const key = topicPartition(tp);
  const entry = book.sequences.get(key) ?? { tp: { topic: tp.topic, partition: tp.partition }, next: 0 };
  book.sequences.set(key, entry);
  return entry.next++;
}

function parseKey(key: string): TopicPartition {
  const tp = parseTopicPartition(key);
  if (!tp) throw new Error(`not a partition: ${key}`);
  return tp;
}
