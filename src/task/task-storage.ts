/**
 * Typed access to a task instance's tables (see schema.ts): identity and lifecycle, checkpoints,
 * input positions. One owner: only `StreamTask` holds this object, and every write it makes runs
 * inside a storage transaction together with the state it describes.
 */
import { migrate } from "../storage/migrations";
import { Sql, sql, type StorageLike } from "../storage/sql";
import type { TopicPartition } from "../log/types";
import type { RecordOrigin } from "../streams/errors";
import type { AppliedReset } from "./input-reset";
import { type InputPositions } from "./record-collector";
import { taskMigrations } from "./schema";
import type { TaskRole, TaskState } from "./state";
import { parseTopicPartition, topicPartition } from "../names";

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

type InputRow = { offset: number; committed: number | null; processed: number };

export class TaskStorage {
  readonly db: Sql;
  /** Told when in-memory copies of the tables may no longer match them (see `onReset`). */
  private readonly resetListeners: (() => void)[] = [];
  /** Told when a transaction is about to commit, or a nested one to begin (see `onFlush`). */
  private readonly flushListeners: (() => void)[] = [];
  private depth = 0;
  /** The meta row as last read or written (null: not known, read it). */
  private cachedMeta: TaskMeta | undefined | null = null;
  /**
   * The checkpoints as last read or written, and the input positions as last read (null: not
   * known, read them). Every commit, fetch, send and report reads them; only this object writes them.
   */
  private cachedCheckpoints: Map<string, number> | null = null;
  private cachedInputs: Map<string, InputRow> | null = null;

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
    this.cachedMeta = null;
    this.cachedCheckpoints = null;
    this.cachedInputs = null;
    for (const listener of this.resetListeners) listener();
  }

  private flush(): void {
    for (const listener of this.flushListeners) listener();
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

  meta(): TaskMeta | undefined {
    if (this.cachedMeta !== null) return this.cachedMeta;
    const row = this.db.one<MetaRow>(
      sql`SELECT task_id, placement, role, state, epoch, incarnation, next_commit, failure, shutdown_requested,
                 failed_topic, failed_partition, failed_offset, skips, last_reset, processed_before FROM task_meta WHERE only = 1`,
    );
    this.cachedMeta = row && {
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
        row.failed_topic === null || row.failed_partition === null || row.failed_offset === null
          ? null
          : { topic: row.failed_topic, partition: row.failed_partition, offset: row.failed_offset },
      skips: JSON.parse(row.skips) as RecordOrigin[],
      lastReset: row.last_reset === null ? null : (JSON.parse(row.last_reset) as AppliedReset),
      processedBefore: row.processed_before,
    };
    return this.cachedMeta;
  }

  /** Writes the meta row; a meta without a failure has no failure position. */
  writeMeta(written: TaskMeta): void {
    const at = written.failure === null ? null : (written.failedAt ?? null);
    const skips = written.skips ?? [];
    const lastReset = written.lastReset ?? null;
    const processedBefore = written.processedBefore ?? 0;
    const meta: TaskMeta = { ...written, failedAt: at, skips, lastReset, processedBefore };
    this.db.run(sql`INSERT INTO task_meta (only, task_id, placement, role, state, epoch, incarnation, next_commit, failure, shutdown_requested,
                                           failed_topic, failed_partition, failed_offset, skips, last_reset, processed_before)
                    VALUES (1, ${meta.taskId}, ${meta.placement}, ${meta.role}, ${meta.state}, ${meta.epoch},
                            ${meta.incarnation}, ${meta.nextCommit}, ${meta.failure}, ${meta.shutdownRequested ? 1 : 0},
                            ${at?.topic ?? null}, ${at?.partition ?? null}, ${at?.offset ?? null}, ${JSON.stringify(skips)},
                            ${lastReset === null ? null : JSON.stringify(lastReset)}, ${processedBefore})
                    ON CONFLICT (only) DO UPDATE SET task_id = excluded.task_id, placement = excluded.placement,
                      role = excluded.role, state = excluded.state, epoch = excluded.epoch,
                      incarnation = excluded.incarnation, next_commit = excluded.next_commit, failure = excluded.failure,
                      shutdown_requested = excluded.shutdown_requested, failed_topic = excluded.failed_topic,
                      failed_partition = excluded.failed_partition, failed_offset = excluded.failed_offset, skips = excluded.skips,
                      last_reset = excluded.last_reset, processed_before = excluded.processed_before`);
    this.cachedMeta = meta;
  }

  checkpoints(): ReadonlyMap<string, number> {
    if (this.cachedCheckpoints === null) {
      const rows = this.db.all<{ topic: string; partition: number; offset: number }>(sql`SELECT topic, partition, offset FROM checkpoints`);
      this.cachedCheckpoints = new Map(rows.map((r) => [topicPartition(r), r.offset]));
    }
    return this.cachedCheckpoints;
  }

  checkpoint(tp: TopicPartition): number | null {
    return this.checkpoints().get(topicPartition(tp)) ?? null;
  }

  /**
   * Per changelog, the records applied by the latest restoration (since the last wipe, which
   * clears them with the checkpoints, or assignment, see `resetReplayed`).
   */
  replayed(): Map<string, number> {
    const rows = this.db.all<{ topic: string; partition: number; replayed: number }>(sql`SELECT topic, partition, replayed FROM checkpoints`);
    return new Map(rows.map((r) => [topicPartition(r), r.replayed]));
  }

  addReplayed(tp: TopicPartition, records: number): void {
    this.db.run(sql`UPDATE checkpoints SET replayed = replayed + ${records} WHERE topic = ${tp.topic} AND partition = ${tp.partition}`);
  }

  resetReplayed(): void {
    this.db.run(sql`UPDATE checkpoints SET replayed = 0`);
  }

  writeCheckpoint(tp: TopicPartition, offset: number): void {
    this.db.run(sql`INSERT INTO checkpoints (topic, partition, offset) VALUES (${tp.topic}, ${tp.partition}, ${offset})
                    ON CONFLICT (topic, partition) DO UPDATE SET offset = excluded.offset`);
    this.cachedCheckpoints?.set(topicPartition(tp), offset);
  }

  /** The input_positions rows by position key (from memory once read). */
  private inputs(): Map<string, InputRow> {
    if (this.cachedInputs === null) {
      const rows = this.db.all<{ topic: string; partition: number } & InputRow>(
        sql`SELECT topic, partition, offset, committed, processed FROM input_positions`,
      );
      this.cachedInputs = new Map(rows.map((r) => [topicPartition(r), { offset: r.offset, committed: r.committed, processed: r.processed }]));
    }
    return this.cachedInputs;
  }

  /**
   * Input records processed and committed by this instance, over its incarnations: a durable
   * total (the count rides on the position rows commits write anyway, see `writePositions`).
   */
  processedTotal(): number {
    let total = this.meta()?.processedBefore ?? 0;
    for (const row of this.inputs().values()) total += row.processed;
    return total;
  }

  positions(): InputPositions {
    const positions: InputPositions = {};
    for (const [key, row] of this.inputs()) positions[key] = row.offset;
    return positions;
  }

  /**
   * Moves input positions forward; with `processed`, adds the records a commit processed in each
   * partition to its count in the same row write.
   */
  writePositions(positions: InputPositions, processed: Readonly<Record<string, number>> = {}): void {
    for (const [key, offset] of Object.entries(positions)) {
      const { topic, partition } = parseTopicPartition(key)!;
      const count = processed[key] ?? 0;
      this.db.run(sql`INSERT INTO input_positions (topic, partition, offset, processed) VALUES (${topic}, ${partition}, ${offset}, ${count})
                      ON CONFLICT (topic, partition) DO UPDATE SET offset = MAX(offset, excluded.offset), processed = processed + excluded.processed`);
    }
    // Read again once: the table's rules (offsets only grow) stay in one place, the SQL.
    this.cachedInputs = null;
  }

  /**
   * Per input partition, the offset the application's consumer group is known to hold for it
   * (committed by this instance, or found in the log when restoration completed). Positions above
   * it are processed but not yet committed: the instance commits them before it reports lag 0 and
   * before a wipe, or records that wrote no store would be processed again after one.
   */
  committedPositions(): InputPositions {
    const committed: InputPositions = {};
    for (const [key, row] of this.inputs()) if (row.committed !== null) committed[key] = row.committed;
    return committed;
  }

  /** Notes that the group holds these offsets now (a committed offset only grows). */
  writeCommitted(positions: InputPositions): void {
    for (const [key, offset] of Object.entries(positions)) {
      const { topic, partition } = parseTopicPartition(key)!;
      this.db.run(sql`INSERT INTO input_positions (topic, partition, offset, committed) VALUES (${topic}, ${partition}, ${offset}, ${offset})
                      ON CONFLICT (topic, partition) DO UPDATE SET committed = MAX(COALESCE(committed, 0), excluded.committed)`);
    }
    this.cachedInputs = null;
  }

  /**
   * Per input topic, the partition time committed with the input position (Kafka commits it in
   * the offset's metadata): the largest timestamp extracted from the task's partition of it.
   */
  partitionTimes(): Record<string, number> {
    const rows = this.db.all<{ topic: string; time: number }>(sql`SELECT topic, partition_time AS time FROM input_positions WHERE partition_time >= 0`);
    return Object.fromEntries(rows.map((r) => [r.topic, r.time]));
  }

  /** Records partition times with the positions written in the same transaction (they never go back). */
  writePartitionTimes(partition: number, times: Readonly<Record<string, number>>): void {
    for (const [topic, time] of Object.entries(times)) {
      this.db.run(sql`UPDATE input_positions SET partition_time = MAX(partition_time, ${time}) WHERE topic = ${topic} AND partition = ${partition}`);
    }
  }

  /** A wipe: the stores' content, checkpoints and input positions go; identity stays. */
  clearState(): void {
    this.reset();
    this.db.run(sql`DELETE FROM kv_pages`);
    this.db.run(sql`DELETE FROM checkpoints`);
    this.db.run(sql`DELETE FROM input_positions`);
  }
}
