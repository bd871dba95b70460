/**
 * The coordinator's durable state: the current assignment of every task instance with its epoch,
 * the epoch counter, and whether the application is shut down (an uncaught error's
 * `"shutdown-application"`). Epochs only grow, across restarts of the coordinator (I3).
 */
import { migrate } from "../storage/migrations";
import { Sql, sql } from "../storage/sql";
import type { TaskRole } from "../task/state";
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

type Row = { task_id: string; placement: string; role: TaskRole; epoch: number; acknowledged: number };

export class CoordinatorStore {
  private readonly db: Sql;

  constructor(private readonly storage: StorageLike) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() =>
      migrate(this.db, [
        {
          id: 1,
          description: "instances and epochs",
          up: (db) =>
            db.script(`
              CREATE TABLE epochs (only INTEGER PRIMARY KEY CHECK (only = 1), last INTEGER NOT NULL);
              CREATE TABLE instances (
                task_id TEXT NOT NULL, placement TEXT NOT NULL, role TEXT NOT NULL,
                epoch INTEGER NOT NULL, acknowledged INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (task_id, placement));
            `),
        },
        {
          id: 2,
          description: "application shutdown",
          up: (db) =>
            db.script(`
              CREATE TABLE shutdown (
                only INTEGER PRIMARY KEY CHECK (only = 1),
                task_id TEXT NOT NULL, placement TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL);
            `),
        },
      ]),
    );
  }

  transaction<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }

  /** A fresh epoch, larger than every epoch handed out before. */
  nextEpoch(): number {
    const last = this.db.one<{ last: number }>(sql`SELECT last FROM epochs WHERE only = 1`)?.last ?? 0;
    this.db.run(sql`INSERT INTO epochs (only, last) VALUES (1, ${last + 1}) ON CONFLICT (only) DO UPDATE SET last = excluded.last`);
    return last + 1;
  }

  instances(): InstanceAssignment[] {
    return this.db
      .all<Row>(sql`SELECT task_id, placement, role, epoch, acknowledged FROM instances ORDER BY task_id, placement`)
      .map((r) => ({ taskId: r.task_id, placement: r.placement, role: r.role, epoch: r.epoch, acknowledged: r.acknowledged === 1 }));
  }

  put(instance: InstanceAssignment): void {
    this.db.run(sql`INSERT INTO instances (task_id, placement, role, epoch, acknowledged)
                    VALUES (${instance.taskId}, ${instance.placement}, ${instance.role}, ${instance.epoch}, ${instance.acknowledged ? 1 : 0})
                    ON CONFLICT (task_id, placement) DO UPDATE SET role = excluded.role, epoch = excluded.epoch,
                      acknowledged = excluded.acknowledged`);
  }

  acknowledge(taskId: string, placement: string, epoch: number): void {
    this.db.run(sql`UPDATE instances SET acknowledged = 1 WHERE task_id = ${taskId} AND placement = ${placement} AND epoch = ${epoch}`);
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
}
