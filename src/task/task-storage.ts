/**
 * Typed access to a task instance's storage (see schema.ts): identity and lifecycle, checkpoints,
 * input positions — the task's book (task-book.ts), which the outbox shares. One owner: only
 * `StreamTask` holds this object, and every write it makes runs inside a storage transaction
 * together with the state it describes. The book is changed in memory and written as one row when
 * the transaction ends (`flush`): a commit writes one row for all of its bookkeeping (issue #33).
 */
import { migrate } from "../storage/migrations";
import { Sql, sql, type StorageLike } from "../storage/sql";
import type { TopicPartition } from "../log/types";
import { taskMigrations } from "./schema";
import { advancePartitionTimes, advancePositions, noteCommitted, setCheckpoint, type TaskBook, type TaskMeta } from "./task-book";
import { readBook, writeBook } from "./task-book-row";
import { topicPartition } from "../names";

/** Input positions by `<topic>/<partition>`: the next offset to process. */
export type InputPositions = Record<string, number>;

export type { TaskMeta };

export class TaskStorage {
  readonly db: Sql;
  /** Told when in-memory copies of the tables may no longer match them (see `onReset`). */
  private readonly resetListeners: (() => void)[] = [];
  /** Told when a transaction is about to commit, or a nested one to begin (see `onFlush`). */
  private readonly flushListeners: (() => void)[] = [];
  private depth = 0;
  /**
   * The book as last read or written, with the changes of the open transaction (undefined: not
   * known, read it). Every commit, fetch, send and report reads it; only this object writes it.
   */
  private loaded: TaskBook | undefined;
  /** The book changed in the open transaction: it is written when the transaction ends. */
  private changed = false;

  constructor(readonly storage: StorageLike) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() => migrate(this.db, taskMigrations));
  }

  /**
   * Registers a listener called whenever what is in memory may disagree with storage: a
   * transaction rolled back (its writes are undone, while copies made during it remain) or the
   * state was cleared. Caches of the tables (store entries, outbox batches) drop themselves there.
   */
  onReset(listener: () => void): void {
    this.resetListeners.push(listener);
  }

  /**
   * Registers a listener that writes what it holds back for the open transaction: called at the
   * end of every transaction, before it commits, and before a nested one begins (so that a nested
   * rollback loses only the nested transaction's writes).
   */
  onFlush(listener: () => void): void {
    this.flushListeners.push(listener);
  }

  /** Whether a transaction of this object is open (writes may be held until it ends). */
  get inTransaction(): boolean {
    return this.depth > 0;
  }

  private reset(): void {
    this.loaded = undefined;
    this.changed = false;
    for (const listener of this.resetListeners) listener();
  }

  private flush(): void {
    for (const listener of this.flushListeners) listener();
    // Last: the listeners may change the book too.
    if (this.changed) {
      writeBook(this.db, this.loaded!);
      this.changed = false;
    }
  }

  /**
   * Runs `fn` in one storage transaction; when it throws, everything it wrote is rolled back.
   * Every transaction of the task's tables goes through here (see `onReset`, `onFlush`).
   */
  transaction<T>(fn: () => T): T {
    if (this.depth > 0) this.flush();
    try {
      return this.storage.transactionSync(() => {
        this.depth++;
        try {
          const result = fn();
          this.flush();
          return result;
        } finally {
          this.depth--;
        }
      });
    } catch (error) {
      this.reset();
      throw error;
    }
  }

  /** The book, to read (the outbox reads its batches here). */
  book(): TaskBook {
    this.loaded ??= readBook(this.db);
    return this.loaded;
  }

  /**
   * Changes the book: written when the open transaction ends, or in a transaction of its own
   * outside one.
   */
  edit<T>(change: (book: TaskBook) => T): T {
    if (this.depth === 0) return this.transaction(() => this.edit(change));
    const result = change(this.book());
    this.changed = true;
    return result;
  }

  meta(): TaskMeta | undefined {
    return this.book().meta;
  }

  /** Writes the meta; a meta without a failure has no failure position. */
  writeMeta(written: TaskMeta): void {
    const failedAt = written.failure === null ? null : (written.failedAt ?? null);
    const meta: TaskMeta = {
      ...written,
      failedAt,
      skips: written.skips ?? [],
      lastReset: written.lastReset ?? null,
      processedBefore: written.processedBefore ?? 0,
    };
    this.edit((book) => {
      book.meta = meta;
    });
  }

  checkpoints(): ReadonlyMap<string, number> {
    return new Map([...this.book().checkpoints].map(([key, c]) => [key, c.offset]));
  }

  checkpoint(tp: TopicPartition): number | null {
    return this.book().checkpoints.get(topicPartition(tp))?.offset ?? null;
  }

  /**
   * Per changelog, the records applied by the latest restoration (since the last wipe, which
   * clears them with the checkpoints, or assignment, see `resetReplayed`).
   */
  replayed(): Map<string, number> {
    return new Map([...this.book().checkpoints].map(([key, c]) => [key, c.replayed]));
  }

  addReplayed(tp: TopicPartition, records: number): void {
    if (!this.book().checkpoints.has(topicPartition(tp))) return;
    this.edit((book) => {
      book.checkpoints.get(topicPartition(tp))!.replayed += records;
    });
  }

  resetReplayed(): void {
    if ([...this.book().checkpoints.values()].every((c) => c.replayed === 0)) return;
    this.edit((book) => {
      for (const c of book.checkpoints.values()) c.replayed = 0;
    });
  }

  writeCheckpoint(tp: TopicPartition, offset: number): void {
    this.edit((book) => setCheckpoint(book, tp, offset));
  }

  /**
   * Input records processed and committed by this instance, over its incarnations: a durable
   * total (the count rides on the positions commits write anyway, see `writePositions`).
   */
  processedTotal(): number {
    let total = this.meta()?.processedBefore ?? 0;
    for (const entry of this.book().inputs.values()) total += entry.processed;
    return total;
  }

  positions(): InputPositions {
    const positions: InputPositions = {};
    for (const [key, entry] of this.book().inputs) positions[key] = entry.offset;
    return positions;
  }

  /**
   * Moves input positions forward (never back); with `processed`, adds the records a commit
   * processed in each partition to its count.
   */
  writePositions(positions: InputPositions, processed: Readonly<Record<string, number>> = {}): void {
    this.edit((book) => advancePositions(book, positions, processed));
  }

  /**
   * Per input partition, the offset the application's consumer group is known to hold for it
   * (committed by this instance, or found in the log when restoration completed). Positions above
   * it are processed but not yet committed: the instance commits them before it reports lag 0 and
   * before a wipe, or records that wrote no store would be processed again after one.
   */
  committedPositions(): InputPositions {
    const committed: InputPositions = {};
    for (const [key, entry] of this.book().inputs) if (entry.committed !== null) committed[key] = entry.committed;
    return committed;
  }

  /** Notes that the group holds these offsets now (a committed offset only grows). */
  writeCommitted(positions: InputPositions): void {
    this.edit((book) => noteCommitted(book, positions));
  }

  /**
   * Per input topic, the partition time committed with the input position (Kafka commits it in
   * the offset's metadata): the largest timestamp extracted from the task's partition of it.
   */
  partitionTimes(): Record<string, number> {
    const times: Record<string, number> = {};
    for (const entry of this.book().inputs.values()) if (entry.partitionTime >= 0) times[entry.topic] = entry.partitionTime;
    return times;
  }

  /** Records partition times with the positions written in the same transaction (they never go back). */
  writePartitionTimes(partition: number, times: Readonly<Record<string, number>>): void {
    this.edit((book) => advancePartitionTimes(book, partition, times));
  }

  /** A wipe: the stores' content, checkpoints and input positions go; identity stays. */
  clearState(): void {
    // The book keeps the open transaction's changes; caches of the stores drop themselves.
    for (const listener of this.resetListeners) listener();
    this.db.run(sql`DELETE FROM kv_pages`);
    this.edit((book) => {
      book.checkpoints.clear();
      book.inputs.clear();
    });
  }
}
