/**
 * The restore worker's bookkeeping: which changelog partitions of which task instances it must
 * bring up to date, where each stood at the last reply, and whether restoration is paused.
 * Registrations are keyed by instance and changelog and carry the instance's incarnation, so a
 * late registration or unregistration for an older incarnation cannot undo a newer one.
 */
import { migrate } from "../storage/migrations";
import { Sql, sql } from "../storage/sql";
import type { TopicPartition } from "../log/types";
import type { TaskRole } from "../task/state";
import type { StorageLike } from "../storage/sql";
import { StandbyProgress } from "./standby-progress";
import type { Taken } from "./progress-flusher";

export interface Registration {
  /** The task object's name, `<task>@<placement>`. */
  readonly instance: string;
  readonly taskId: string;
  readonly incarnation: number;
  /** The coordinator's epoch of the instance's assignment: batches carry it, and a stale one is refused (I3). */
  readonly epoch: number;
  readonly role: TaskRole;
  readonly changelogs: readonly (TopicPartition & { readonly store: string; readonly checkpoint: number | null })[];
}

export interface ChangelogWork extends TopicPartition {
  readonly instance: string;
  readonly taskId: string;
  readonly incarnation: number;
  readonly epoch: number;
  readonly role: TaskRole;
  readonly store: string;
  /** The instance's restored position at its last reply; null: it restored nothing yet. */
  readonly position: number | null;
  /** Consecutive failed fetches. */
  readonly failures: number;
  /** Restored up to the end last seen (standbys wait here for the changelog to grow). */
  readonly caughtUp: boolean;
  /** Records applied since registration (for listeners and progress). */
  readonly restored: number;
  /**
   * How often the changelog was seen to grow: a reply to a batch read before the last growth
   * cannot mark the changelog caught up (the growth would be lost, and a standby would wait for
   * the next append).
   */
  readonly grown: number;
}

/** What `register` did: a new registration, the same one kept as it was (with its progress), or refused as older. */
export type RegisterOutcome = "registered" | "kept" | "refused";

type Row = {
  instance: string;
  task_id: string;
  incarnation: number;
  epoch: number;
  role: TaskRole;
  topic: string;
  partition: number;
  store: string;
  position: number | null;
  failures: number;
  caught_up: number;
  restored: number;
  grown: number;
};

export class RestoreRegistry {
  private readonly db: Sql;
  /** Positions, growth and caught-up flags, in memory and written at most every PROGRESS_FLUSH_MS (standby-progress.ts). */
  private readonly progress = new StandbyProgress();

  constructor(private readonly storage: StorageLike) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() =>
      migrate(this.db, [
        {
          id: 1,
          description: "registered changelogs and the pause switch",
          up: (db) =>
            db.script(`
              CREATE TABLE changelogs (
                instance TEXT NOT NULL, task_id TEXT NOT NULL, incarnation INTEGER NOT NULL, role TEXT NOT NULL,
                topic TEXT NOT NULL, partition INTEGER NOT NULL, store TEXT NOT NULL,
                position INTEGER, failures INTEGER NOT NULL DEFAULT 0, caught_up INTEGER NOT NULL DEFAULT 0,
                restored INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (instance, topic, partition));
              CREATE TABLE control (only INTEGER PRIMARY KEY CHECK (only = 1), paused INTEGER NOT NULL, budget INTEGER);
            `),
        },
        {
          id: 2,
          description: "the assignment epoch each registration was made for",
          up: (db) => db.script(`ALTER TABLE changelogs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;`),
        },
        {
          id: 3,
          description: "growth counter per registered changelog",
          up: (db) => db.script(`ALTER TABLE changelogs ADD COLUMN grown INTEGER NOT NULL DEFAULT 0;`),
        },
        {
          id: 4,
          description: "the latest report of every instance of the shard (src/restore/reports.ts)",
          up: (db) =>
            db.script(`
              CREATE TABLE reports (
                instance TEXT PRIMARY KEY, task_id TEXT NOT NULL, placement TEXT NOT NULL, role TEXT NOT NULL,
                state TEXT NOT NULL, epoch INTEGER NOT NULL, incarnation INTEGER NOT NULL, failed INTEGER NOT NULL,
                lag INTEGER NOT NULL, restored INTEGER NOT NULL, total INTEGER NOT NULL, seq INTEGER NOT NULL);
            `),
        },
        {
          id: 5,
          description: "in each report, a failed instance's reason and the timestamp of the oldest input record waiting",
          up: (db) =>
            db.script(`
              ALTER TABLE reports ADD COLUMN failure TEXT;
              ALTER TABLE reports ADD COLUMN oldest_waiting INTEGER;
            `),
        },
      ]),
    );
  }

  transaction<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }

  /**
   * Registers (or re-registers) an instance. The same registration again (incarnation, epoch, role
   * and changelogs) is kept as it is, with its progress: instances repeat their registration until
   * they hear it was taken, so it must be idempotent. An older incarnation than the one held is refused.
   */
  register(registration: Registration): RegisterOutcome {
    return this.transaction(() => {
      const held = this.ofInstance(registration.instance);
      if (held.some((w) => w.incarnation > registration.incarnation)) return "refused";
      if (sameRegistration(held, registration)) {
        // The instance asks again (a check, or a wake-up it may have missed): look again.
        for (const w of held) this.progress.set(w, { ...w, caughtUp: false });
        return "kept";
      }
      this.progress.forgetInstance(registration.instance);
      this.db.run(sql`DELETE FROM changelogs WHERE instance = ${registration.instance}`);
      for (const c of registration.changelogs) {
        this.db.run(sql`INSERT INTO changelogs (instance, task_id, incarnation, epoch, role, topic, partition, store, position)
                        VALUES (${registration.instance}, ${registration.taskId}, ${registration.incarnation}, ${registration.epoch}, ${registration.role},
                                ${c.topic}, ${c.partition}, ${c.store}, ${c.checkpoint})`);
      }
      return "registered";
    });
  }

  /**
   * Removes an instance's registration, if it is for an older incarnation, or for this one and an
   * epoch no newer than `epoch` (any, without one): a late unregistration cannot undo a registration
   * made since for a newer assignment.
   */
  unregister(instance: string, incarnation: number, epoch?: number): ChangelogWork[] {
    return this.transaction(() => {
      const upTo = epoch ?? Number.MAX_SAFE_INTEGER;
      const removed = this.ofInstance(instance).filter((w) => w.incarnation < incarnation || (w.incarnation === incarnation && w.epoch <= upTo));
      if (removed.length > 0) this.progress.forgetInstance(instance);
      this.db.run(sql`DELETE FROM changelogs WHERE instance = ${instance}
                        AND (incarnation < ${incarnation} OR (incarnation = ${incarnation} AND epoch <= ${upTo}))`);
      return removed;
    });
  }

  /** Removes exactly the registration `work` was read for (instance, incarnation and epoch), if it is still held. */
  unregisterExact(work: Pick<ChangelogWork, "instance" | "incarnation" | "epoch">): ChangelogWork[] {
    return this.transaction(() => {
      const removed = this.ofInstance(work.instance).filter((w) => w.incarnation === work.incarnation && w.epoch === work.epoch);
      if (removed.length > 0) this.progress.forgetInstance(work.instance);
      this.db.run(sql`DELETE FROM changelogs WHERE instance = ${work.instance} AND incarnation = ${work.incarnation} AND epoch = ${work.epoch}`);
      return removed;
    });
  }

  all(): ChangelogWork[] {
    return this.db
      .all<Row>(sql`SELECT instance, task_id, incarnation, epoch, role, topic, partition, store, position, failures, caught_up, restored, grown
                    FROM changelogs ORDER BY instance, topic, partition`)
      .map((r) => this.progress.current(toWork(r)));
  }

  /** One instance's registrations (read by the table's key, not by scanning every instance's). */
  ofInstance(instance: string): ChangelogWork[] {
    return this.db
      .all<Row>(sql`SELECT instance, task_id, incarnation, epoch, role, topic, partition, store, position, failures, caught_up, restored, grown
                    FROM changelogs WHERE instance = ${instance} ORDER BY topic, partition`)
      .map((r) => this.progress.current(toWork(r)));
  }

  /**
   * Records the instance's reply to a batch (only for the registration it was read for), in memory
   * (see `takeProgress`). Caught up only if the changelog did not grow since `work` was read.
   */
  update(work: ChangelogWork, change: { position: number | null; caughtUp: boolean; restoredRecords: number; failures?: number }): void {
    const now = this.ofInstance(work.instance).find(
      (w) => w.topic === work.topic && w.partition === work.partition && w.incarnation === work.incarnation && w.epoch === work.epoch,
    );
    if (!now) return;
    this.progress.set(now, {
      position: change.position,
      caughtUp: now.grown === work.grown && change.caughtUp,
      restored: now.restored + change.restoredRecords,
      failures: change.failures ?? 0,
      grown: now.grown,
    });
  }

  /** A remote log wakes no one: every registered changelog is read again. False when none is registered. */
  everyChangelogMayHaveGrown(): boolean {
    const all = this.all();
    for (const w of all) this.progress.set(w, { ...w, caughtUp: false, grown: w.grown + 1 });
    return all.length > 0;
  }

  /** The changelog grew: every registration reading it has work again. */
  changelogGrew(tp: TopicPartition): void {
    for (const w of this.all()) if (w.topic === tp.topic && w.partition === tp.partition) this.progress.set(w, { ...w, caughtUp: false, grown: w.grown + 1 });
  }

  /** Progress is held in memory that is not written yet (see `takeProgress`). */
  get progressPending(): boolean {
    return this.progress.pending;
  }

  /**
   * The progress held in memory, to be written to the registrations' rows (those still registered
   * as it was heard) in the flusher's transaction (progress-flusher.ts): what a restarted worker
   * resumes from (standby-progress.ts). Put back when the transaction fails.
   */
  takeProgress(): Taken {
    const taken = this.progress.takeDirty();
    return {
      write: () => {
        for (const p of taken)
          this.db.run(sql`UPDATE changelogs SET position = ${p.position}, caught_up = ${p.caughtUp ? 1 : 0}, restored = ${p.restored},
                            failures = ${p.failures}, grown = ${p.grown}
                          WHERE instance = ${p.instance} AND topic = ${p.topic} AND partition = ${p.partition}
                            AND incarnation = ${p.incarnation} AND epoch = ${p.epoch}`);
      },
      putBack: () => this.progress.restore(taken),
    };
  }

  control(): { paused: boolean; budget: number | null } {
    const row = this.db.one<{ paused: number; budget: number | null }>(sql`SELECT paused, budget FROM control WHERE only = 1`);
    return { paused: row?.paused === 1, budget: row?.budget ?? null };
  }

  /**
   * Takes one batch from the budget: always granted when not paused; when paused, only while a
   * `resume({maxBatches})` budget remains. Read and written in one step, so a pause or resume
   * arriving while a round is under way is never overwritten by the round.
   */
  takeBatch(): boolean {
    return this.transaction(() => {
      const { paused, budget } = this.control();
      if (!paused) return true;
      if (!budget || budget <= 0) return false;
      this.setControl(true, budget - 1);
      return true;
    });
  }

  /** Gives back a batch taken for nothing (the instance did not apply it). */
  returnBatch(): void {
    this.transaction(() => {
      const { paused, budget } = this.control();
      if (paused && budget !== null) this.setControl(true, budget + 1);
    });
  }

  setControl(paused: boolean, budget: number | null): void {
    this.db.run(sql`INSERT INTO control (only, paused, budget) VALUES (1, ${paused ? 1 : 0}, ${budget})
                    ON CONFLICT (only) DO UPDATE SET paused = excluded.paused, budget = excluded.budget`);
  }
}

/** Whether `held` (one instance's rows) is exactly `registration`: same incarnation, epoch, role and changelogs. */
function sameRegistration(held: readonly ChangelogWork[], registration: Registration): boolean {
  if (held.length === 0 || held.length !== registration.changelogs.length) return false;
  return registration.changelogs.every((c) =>
    held.some(
      (w) =>
        w.topic === c.topic &&
        w.partition === c.partition &&
        w.store === c.store &&
        w.incarnation === registration.incarnation &&
        w.epoch === registration.epoch &&
        w.role === registration.role,
    ),
  );
}

function toWork(r: Row): ChangelogWork {
  return {
    instance: r.instance,
    taskId: r.task_id,
    incarnation: r.incarnation,
    epoch: r.epoch,
    role: r.role,
    topic: r.topic,
    partition: r.partition,
    store: r.store,
    position: r.position,
    failures: r.failures,
    caughtUp: r.caught_up === 1,
    restored: r.restored,
    grown: r.grown,
  };
}
