/**
 * The coordinator's durable state: the current assignment of every task instance with its epoch,
 * the epoch counter, whether the application is shut down (an uncaught error's
 * `"shutdown-application"`), the last input reset with the tasks that applied it, and its single
 * values (`settings`), under the numbered migrations of ./schema.ts. Epochs only grow, across
 * restarts of the coordinator (I3). Every change of the assignment hands out a fresh epoch, so the
 * last epoch handed out is also the assignment's version (what the API's edge cache compares).
 *
 * The assignment is kept in memory too, indexed by instance and by task (the object is its only
 * writer): reads cost no SQL, and a transaction that fails drops the copy, to be read again.
 */
import { byTaskAndPlacement } from "./reconcile";
import { instanceKey } from "./standbys";
import { migrate } from "../storage/migrations";
import { coordinatorMigrations, type LegacyKv } from "./schema";
import { CoordinatorSettings } from "./settings";
import { Sql, sql } from "../storage/sql";
import type { TaskRole } from "../task/state";
import type { AppliedReset, InputReset } from "../task/input-reset";
import type { StorageLike } from "../storage/sql";

export interface InstanceAssignment {
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  readonly epoch: number;
  /** The instance confirmed it took this assignment. */
  readonly acknowledged: boolean;
}

/** Why the application is shut down: which task asked, when, and its error. */
export interface ApplicationShutdown {
  readonly taskId: string;
  readonly placement: string;
  readonly reason: string;
  /** Epoch milliseconds. */
  readonly at: number;
}

/** The last input reset: what was asked, when, and when every task had applied it (null while some have not). */
export interface StoredReset extends InputReset {
  readonly startedAt: number;
  readonly finishedAt: number | null;
}

type Row = { task_id: string; placement: string; role: TaskRole; epoch: number; acknowledged: number };

export class CoordinatorStore {
  private readonly db: Sql;
  /** The stored rows by instance key; undefined until read (or after a failed transaction). */
  private rows: Map<string, InstanceAssignment> | undefined;
  /** The rows sorted by task and placement, and by task; rebuilt when rows are added. */
  private sorted: InstanceAssignment[] | undefined;
  private tasks: Map<string, InstanceAssignment[]> | undefined;
  private lastEpoch: number | undefined;

  /** The single values: generation, session key, injected outage, resuming, the sweep's schedule. */
  readonly settings: CoordinatorSettings;

  constructor(private readonly storage: StorageLike & { readonly kv: LegacyKv }) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() => migrate(this.db, coordinatorMigrations(storage.kv)));
    this.settings = new CoordinatorSettings(this.db);
  }

  transaction<T>(fn: () => T): T {
    try {
      return this.storage.transactionSync(fn);
    } catch (error) {
      // Rolled back: what memory holds may be ahead of storage.
      this.rows = this.sorted = this.tasks = this.lastEpoch = undefined;
      throw error;
    }
  }

  /** A fresh epoch, larger than every epoch handed out before. */
  nextEpoch(): number {
    return this.allocateEpochs(1);
  }

  /** `count` fresh epochs, the first returned (the others follow it): one write however many. */
  allocateEpochs(count: number): number {
    const last = this.version();
    this.db.run(sql`INSERT INTO epochs (only, last) VALUES (1, ${last + count}) ON CONFLICT (only) DO UPDATE SET last = excluded.last`);
    this.lastEpoch = last + count;
    return last + 1;
  }

  /** The last epoch handed out: it changes with every change of the assignment. */
  version(): number {
    this.lastEpoch ??= this.db.one<{ last: number }>(sql`SELECT last FROM epochs WHERE only = 1`)?.last ?? 0;
    return this.lastEpoch;
  }

  /** Every instance, by task and placement. */
  instances(): InstanceAssignment[] {
    this.sorted ??= [...this.load().values()].sort(byTaskAndPlacement);
    return this.sorted;
  }

  /** The instances of one task. */
  ofTask(taskId: string): InstanceAssignment[] {
    if (!this.tasks) {
      this.tasks = new Map();
      for (const i of this.instances()) {
        const list = this.tasks.get(i.taskId);
        if (list) list.push(i);
        else this.tasks.set(i.taskId, [i]);
      }
    }
    return this.tasks.get(taskId) ?? [];
  }

  /** The instance of a task at a placement. */
  get(taskId: string, placement: string): InstanceAssignment | undefined {
    return this.load().get(instanceKey({ taskId, placement }));
  }

  /** The active instance of a task. */
  activeOf(taskId: string): InstanceAssignment | undefined {
    return this.ofTask(taskId).find((i) => i.role === "active");
  }

  /** Up to `limit` instances after `after` (an instance name order: task id, then placement). */
  page(after: { taskId: string; placement: string } | undefined, limit: number): InstanceAssignment[] {
    const all = this.instances();
    let lo = 0;
    if (after) {
      // The first instance strictly after `after` (binary search in the sorted rows).
      let hi = all.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (byTaskAndPlacement(all[mid]!, after) <= 0) lo = mid + 1;
        else hi = mid;
      }
    }
    return all.slice(lo, lo + limit);
  }

  put(instance: InstanceAssignment): void {
    this.db.run(sql`INSERT INTO instances (task_id, placement, role, epoch, acknowledged)
                    VALUES (${instance.taskId}, ${instance.placement}, ${instance.role}, ${instance.epoch}, ${instance.acknowledged ? 1 : 0})
                    ON CONFLICT (task_id, placement) DO UPDATE SET role = excluded.role, epoch = excluded.epoch,
                      acknowledged = excluded.acknowledged`);
    this.remember(instance);
  }

  acknowledge(taskId: string, placement: string, epoch: number): void {
    this.db.run(sql`UPDATE instances SET acknowledged = 1 WHERE task_id = ${taskId} AND placement = ${placement} AND epoch = ${epoch}`);
    const row = this.get(taskId, placement);
    if (row && row.epoch === epoch) this.remember({ ...row, acknowledged: true });
  }

  /** Marks every instance of `role` unacknowledged: the coordinator pushes each one's assignment again. */
  unacknowledge(role: TaskRole): void {
    this.db.run(sql`UPDATE instances SET acknowledged = 0 WHERE role = ${role}`);
    for (const row of this.instances()) if (row.role === role && row.acknowledged) this.remember({ ...row, acknowledged: false });
  }

  private load(): Map<string, InstanceAssignment> {
    if (!this.rows) {
      this.rows = new Map();
      for (const r of this.db.cursor<Row>(sql`SELECT task_id, placement, role, epoch, acknowledged FROM instances`)) {
        const instance = { taskId: r.task_id, placement: r.placement, role: r.role, epoch: r.epoch, acknowledged: r.acknowledged === 1 };
        this.rows.set(instanceKey(instance), instance);
      }
    }
    return this.rows;
  }

  private remember(instance: InstanceAssignment): void {
    const rows = this.load();
    const key = instanceKey(instance);
    const isNew = !rows.has(key);
    const row = { taskId: instance.taskId, placement: instance.placement, role: instance.role, epoch: instance.epoch, acknowledged: instance.acknowledged };
    rows.set(key, row);
    if (isNew) {
      this.sorted = this.tasks = undefined;
      return;
    }
    // Same set of instances: replace the row where the views hold it.
    if (this.sorted) {
      const i = this.sortedIndex(row);
      if (i >= 0) this.sorted[i] = row;
      else this.sorted = undefined;
    }
    if (this.tasks) {
      const list = this.tasks.get(row.taskId);
      const j = list?.findIndex((r) => r.placement === row.placement) ?? -1;
      if (list && j >= 0) list[j] = row;
      else this.tasks = undefined;
    }
  }

  private sortedIndex(row: InstanceAssignment): number {
    const all = this.sorted!;
    let lo = 0;
    let hi = all.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = byTaskAndPlacement(all[mid]!, row);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  shutdown(): ApplicationShutdown | undefined {
    const row = this.db.one<{ task_id: string; placement: string; reason: string; at: number }>(
      sql`SELECT task_id, placement, reason, at FROM shutdown WHERE only = 1`,
    );
    return row && { taskId: row.task_id, placement: row.placement, reason: row.reason, at: row.at };
  }

  /** Records the shutdown; the first one stays (later requests add nothing). */
  shutDown(shutdown: ApplicationShutdown): ApplicationShutdown {
    this.db.run(sql`INSERT INTO shutdown (only, task_id, placement, reason, at)
                    VALUES (1, ${shutdown.taskId}, ${shutdown.placement}, ${shutdown.reason}, ${shutdown.at})
                    ON CONFLICT (only) DO NOTHING`);
    return this.shutdown()!;
  }

  clearShutdown(): void {
    this.db.run(sql`DELETE FROM shutdown`);
  }

  /** The last input reset, finished or not. */
  inputReset(): StoredReset | undefined {
    const row = this.db.one<{ id: string; request: string; started_at: number; finished_at: number | null }>(
      sql`SELECT id, request, started_at, finished_at FROM input_reset WHERE only = 1`,
    );
    if (!row) return undefined;
    const { target, topics } = JSON.parse(row.request) as Pick<InputReset, "target" | "topics">;
    return { id: row.id, target, topics, startedAt: row.started_at, finishedAt: row.finished_at };
  }

  /** Stores a new input reset as the goal, for `tasks` (the one before goes). */
  startReset(reset: InputReset, tasks: readonly string[], at: number): void {
    this.db.run(sql`DELETE FROM input_reset_tasks`);
    this.db.run(sql`INSERT INTO input_reset (only, id, request, started_at, finished_at)
                    VALUES (1, ${reset.id}, ${JSON.stringify({ target: reset.target, topics: reset.topics })}, ${at}, NULL)
                    ON CONFLICT (only) DO UPDATE SET id = excluded.id, request = excluded.request,
                      started_at = excluded.started_at, finished_at = NULL`);
    for (const task of tasks) this.db.run(sql`INSERT INTO input_reset_tasks (task_id, applied) VALUES (${task}, NULL)`);
  }

  /** Tasks that have not applied the reset yet, at most `limit`. */
  resetPending(limit: number): string[] {
    return this.db
      .all<{ task_id: string }>(sql`SELECT task_id FROM input_reset_tasks WHERE applied IS NULL ORDER BY task_id LIMIT ${limit}`)
      .map((r) => r.task_id);
  }

  resetApplied(taskId: string, applied: AppliedReset): void {
    this.db.run(sql`UPDATE input_reset_tasks SET applied = ${JSON.stringify(applied)} WHERE task_id = ${taskId}`);
  }

  /** What the tasks that applied the reset did, and how many have not yet. */
  resetResults(): { applied: AppliedReset[]; pending: number } {
    const rows = this.db.all<{ applied: string | null }>(sql`SELECT applied FROM input_reset_tasks ORDER BY task_id`);
    const applied = rows.flatMap((r) => (r.applied === null ? [] : [JSON.parse(r.applied) as AppliedReset]));
    return { applied, pending: rows.length - applied.length };
  }

  finishReset(at: number): void {
    this.db.run(sql`UPDATE input_reset SET finished_at = ${at} WHERE only = 1`);
  }
}
