/**
 * The SQL of a task instance's book (task-book.ts): its one row in `task_book`, and the outbox
 * batches spilled to rows of their own in `outbox_spill` when the book's row would pass the cap.
 */
import { topicPartition } from "../names";
import { type Sql, sql } from "../storage/sql";
import type { RecordOrigin } from "../streams/errors";
import type { AppliedReset } from "./input-reset";
import type { TaskRole, TaskState } from "./state";
import { type BookBatch, decodeBook, emptyBook, planRow, type TaskBook, type TaskMeta } from "./task-book";

export function readBook(db: Sql): TaskBook {
  const row = db.one<{ header: string; batches: string }>(sql`SELECT header, batches FROM task_book WHERE only = 1`);
  return row ? decodeBook(row) : emptyBook();
}

/**
 * Writes the book: first the batches it spills (a row each), then its row; the spilled batches
 * are marked so in `book` (their records stay in memory).
 */
export function writeBook(db: Sql, book: TaskBook): void {
  const { row, spill } = planRow(book);
  if (spill.length > 0) {
    const ids = new Set(spill.map((b) => b.id));
    for (const batch of spill) db.run(sql`INSERT INTO outbox_spill (id, records) VALUES (${batch.id}, ${batch.text!})`);
    book.batches = book.batches.map((b) => (ids.has(b.id) ? { ...b, spilled: true, bytes: 0 } : b));
  }
  db.run(sql`INSERT INTO task_book (only, header, batches) VALUES (1, ${row.header}, ${row.batches})
             ON CONFLICT (only) DO UPDATE SET header = excluded.header, batches = excluded.batches`);
}

/** The records of a spilled batch. */
export function readSpilled(db: Sql, id: number): string {
  const row = db.one<{ records: string }>(sql`SELECT records FROM outbox_spill WHERE id = ${id}`);
  if (!row) throw new Error(`outbox batch ${id} is missing from outbox_spill`);
  return row.records;
}

/** Rewrites a spilled batch's records (a repair after a refusal). */
export function rewriteSpilled(db: Sql, id: number, records: string): void {
  db.run(sql`UPDATE outbox_spill SET records = ${records} WHERE id = ${id}`);
}

/** Removes a spilled batch's row (acknowledged, repaired away, or the outbox cleared). */
export function removeSpilled(db: Sql, batch: Pick<BookBatch, "id" | "spilled">): void {
  if (batch.spilled) db.run(sql`DELETE FROM outbox_spill WHERE id = ${batch.id}`);
}

/**
 * Migration 8: the tables the book replaces (task_meta, checkpoints, input_positions,
 * producer_sequences, outbox), carried into it. Outbox rows keep their ids and sequences; each
 * moves to a row of its own in `outbox_spill` (as written by the version before, it may be as big
 * as a row), and leaves with its acknowledgement.
 */
export function carryTablesIntoBook(db: Sql): void {
  db.script(`
    CREATE TABLE task_book (only INTEGER PRIMARY KEY CHECK (only = 1), header TEXT NOT NULL, batches TEXT NOT NULL);
    CREATE TABLE outbox_spill (id INTEGER PRIMARY KEY, records TEXT NOT NULL);
  `);
  const book = emptyBook();
  const meta = db.one<MetaRow>(sql`SELECT * FROM task_meta WHERE only = 1`);
  if (meta) book.meta = metaOf(meta);
  for (const c of db.all<{ topic: string; partition: number; offset: number; replayed: number }>(
    sql`SELECT topic, partition, offset, replayed FROM checkpoints`,
  ))
    book.checkpoints.set(topicPartition(c), { ...c });
  for (const i of db.all<{ topic: string; partition: number; offset: number; committed: number | null; processed: number; partition_time: number }>(
    sql`SELECT topic, partition, offset, committed, processed, partition_time FROM input_positions`,
  ))
    book.inputs.set(topicPartition(i), {
      topic: i.topic,
      partition: i.partition,
      offset: i.offset,
      committed: i.committed,
      processed: i.processed,
      partitionTime: i.partition_time,
    });
  for (const s of db.all<{ topic: string; partition: number; next: number }>(sql`SELECT topic, partition, next FROM producer_sequences`))
    book.sequences.set(topicPartition(s), { tp: { topic: s.topic, partition: s.partition }, next: s.next });
  for (const b of db.all<{ id: number; commit_id: number; phase: number; topic: string; partition: number; sequence: number }>(
    sql`SELECT id, commit_id, phase, topic, partition, sequence FROM outbox ORDER BY id`,
  )) {
    book.batches.push({
      id: b.id,
      commitId: b.commit_id,
      phase: b.phase,
      topic: b.topic,
      partition: b.partition,
      sequence: b.sequence,
      text: undefined,
      bytes: 0,
      spilled: true,
    });
    book.nextBatchId = b.id + 1;
  }
  db.run(sql`INSERT INTO outbox_spill (id, records) SELECT id, records FROM outbox`);
  // Ids are never taken again (the outbox's ids were AUTOINCREMENT).
  const last = db.one<{ seq: number }>(sql`SELECT seq FROM sqlite_sequence WHERE name = 'outbox'`)?.seq ?? 0;
  book.nextBatchId = Math.max(book.nextBatchId, last + 1);
  if (book.meta || book.checkpoints.size > 0 || book.inputs.size > 0 || book.batches.length > 0 || book.sequences.size > 0) writeBook(db, book);
  db.script(`DROP TABLE task_meta; DROP TABLE checkpoints; DROP TABLE input_positions; DROP TABLE producer_sequences; DROP TABLE outbox;`);
}

type MetaRow = {
  task_id: string;
  placement: string;
  role: TaskRole;
  state: TaskState;
  epoch: number;
  incarnation: number;
  next_commit: number;
  failure: string | null;
  shutdown_requested: number;
  failed_topic: string | null;
  failed_partition: number | null;
  failed_offset: number | null;
  skips: string;
  last_reset: string | null;
  processed_before: number;
};

function metaOf(row: MetaRow): TaskMeta {
  return {
    taskId: row.task_id,
    placement: row.placement,
    role: row.role,
    state: row.state,
    epoch: row.epoch,
    incarnation: row.incarnation,
    nextCommit: row.next_commit,
    failure: row.failure,
    shutdownRequested: row.shutdown_requested === 1,
    failedAt:
      row.failure === null || row.failed_topic === null || row.failed_partition === null || row.failed_offset === null
        ? null
        : { topic: row.failed_topic, partition: row.failed_partition, offset: row.failed_offset },
    skips: JSON.parse(row.skips) as RecordOrigin[],
    lastReset: row.last_reset === null ? null : (JSON.parse(row.last_reset) as AppliedReset),
    processedBefore: row.processed_before,
  };
}
