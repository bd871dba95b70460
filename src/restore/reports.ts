/**
 * What a restore worker shard keeps for the application summary: the latest report of every
 * instance that reports to it (src/summary/summary.ts), one row per instance, a later report
 * (by its `seq`) replacing an earlier one. Its table is created by the restore registry's
 * migrations (one schema per object). Kept in memory, reads cost no SQL; a report is written to
 * its row by the next flush (the restore worker's, at most PROGRESS_FLUSH_MS later), not one row
 * per report (issue #33): a worker that dies first shows an instance's report before, until its
 * next one.
 */
import { Sql, sql, type StorageLike } from "../storage/sql";
import type { ShownState, TaskRole } from "../task/state";
import { summarize, type InstanceReport, type Summary } from "../summary/summary";
import type { Taken } from "./progress-flusher";

type Row = {
  instance: string;
  task_id: string;
  placement: string;
  role: TaskRole;
  state: ShownState;
  epoch: number;
  incarnation: number;
  failed: number;
  failure: string | null;
  lag: number;
  oldest_waiting: number | null;
  restored: number;
  total: number;
  seq: number;
};

export class InstanceReports {
  private readonly db: Sql;
  private cached: Map<string, InstanceReport> | undefined;
  /** Instances whose report is not written yet. */
  private readonly dirty = new Set<string>();

  constructor(storage: StorageLike) {
    this.db = new Sql(storage.sql);
  }

  /** Keeps `report` unless a later one of the same instance is held (written by the next flush). True when kept. */
  put(report: InstanceReport): boolean {
    const held = this.load().get(report.instance);
    if (held && held.seq >= report.seq) return false;
    this.load().set(report.instance, report);
    this.dirty.add(report.instance);
    return true;
  }

  /** Reports are held that are not written yet. */
  get pending(): boolean {
    return this.dirty.size > 0;
  }

  /**
   * The reports kept since the last flush, to be written (one row per instance) in the flusher's
   * transaction (progress-flusher.ts); put back when it fails, unless a later report came meanwhile.
   */
  take(): Taken {
    const instances = [...this.dirty];
    this.dirty.clear();
    return {
      write: () => {
        for (const instance of instances) {
          const r = this.load().get(instance);
          if (!r) continue;
          this.db.run(sql`INSERT INTO reports (instance, task_id, placement, role, state, epoch, incarnation, failed, failure, lag, oldest_waiting, restored, total, seq)
                          VALUES (${r.instance}, ${r.taskId}, ${r.placement}, ${r.role}, ${r.state}, ${r.epoch}, ${r.incarnation}, ${r.failed ? 1 : 0},
                                  ${r.failure}, ${r.lag}, ${r.oldestWaiting}, ${r.restored}, ${r.total}, ${r.seq})
                          ON CONFLICT (instance) DO UPDATE SET role = excluded.role, state = excluded.state, epoch = excluded.epoch,
                            incarnation = excluded.incarnation, failed = excluded.failed, failure = excluded.failure, lag = excluded.lag,
                            oldest_waiting = excluded.oldest_waiting, restored = excluded.restored, total = excluded.total, seq = excluded.seq`);
        }
      },
      putBack: () => {
        for (const instance of instances) this.dirty.add(instance);
      },
    };
  }

  all(): InstanceReport[] {
    return [...this.load().values()];
  }

  /** The summary of the reports `keep` selects (those of the tasks this shard serves). */
  summary(keep: (report: InstanceReport) => boolean): Summary {
    return summarize(this.all().filter(keep));
  }

  private load(): Map<string, InstanceReport> {
    if (!this.cached) {
      this.cached = new Map();
      for (const r of this.db.cursor<Row>(sql`SELECT * FROM reports`)) {
        this.cached.set(r.instance, {
          instance: r.instance,
          taskId: r.task_id,
          placement: r.placement,
          role: r.role,
          state: r.state,
          epoch: r.epoch,
          incarnation: r.incarnation,
          failed: r.failed === 1,
          failure: r.failure,
          lag: r.lag,
          oldestWaiting: r.oldest_waiting,
          restored: r.restored,
          total: r.total,
          seq: r.seq,
        });
      }
    }
    return this.cached;
  }
}
