/**
 * The application summary of `GET /tasks`, `/metrics` and the status page, served from aggregated
 * state rather than by asking every task object: each instance reports what it knows of itself
 * (role, state, lag, restore progress) to its restore worker shard — throttled and cheap, from
 * memory, without calling the log — and a view sums the shards' aggregates, so it costs one call
 * per shard (placements × RESTORE_SHARDS) whatever the number of tasks. Pure.
 */
import type { TopicPartition } from "../log/types";
import { instanceName } from "../names";
import { positionKey } from "../task/record-collector";
import type { TaskRole, TaskState } from "../task/state";
import type { TaskMeta } from "../task/task-storage";

/** What an instance tells its restore worker shard about itself. */
export interface InstanceReport {
  /** `<task>@<placement>`. */
  readonly instance: string;
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  readonly state: TaskState;
  readonly epoch: number;
  readonly incarnation: number;
  /** Stopped by a failure. */
  readonly failed: boolean;
  /** Active: input records not yet processed (as of its last fetch); standby and idle: changelog records not yet applied. */
  readonly lag: number;
  /** Changelog records the store reflects, summed over its changelogs, and the changelogs' ends as last seen. */
  readonly restored: number;
  readonly total: number;
  /** Orders an instance's reports (they travel without waiting for each other). */
  readonly seq: number;
}

/** A report is sent at once when what the instance is changed, or when it has caught up; progress at most this often. */
export const REPORT_INTERVAL_MS = 5_000;

/** Whether `next` must be sent, given the last report sent (and when). */
export function reportDue(last: { readonly report: InstanceReport; readonly at: number } | undefined, next: InstanceReport, now: number): boolean {
  if (!last) return true;
  const a = last.report;
  if (a.role !== next.role || a.state !== next.state || a.epoch !== next.epoch || a.incarnation !== next.incarnation || a.failed !== next.failed) return true;
  if (a.lag === next.lag && a.restored === next.restored && a.total === next.total) return false;
  // Catching up: the last word of a busy spell is never held back (nothing may come after it).
  // Caught up again, after a report that said so, changes nothing the summary shows: a task
  // that keeps up with steady input would otherwise report after every commit.
  if (caughtUp(next) && !caughtUp(a)) return true;
  return now - last.at >= REPORT_INTERVAL_MS;
}

function caughtUp(report: InstanceReport): boolean {
  return report.lag === 0 && report.restored === report.total;
}

/** What an instance knows of itself without calling the log, from which its report is made. */
export interface InstanceFacts {
  readonly meta: Pick<TaskMeta, "taskId" | "placement" | "role" | "state" | "epoch" | "incarnation" | "failure">;
  /** Its task's changelog partitions, and its checkpoint in each. */
  readonly changelogs: readonly TopicPartition[];
  readonly checkpoints: ReadonlyMap<string, number>;
  /**
   * Each changelog's end as last seen (by position key). Raised here to the checkpoint where that
   * is further: a checkpoint is never past its changelog's end, so the end is known at least that far.
   */
  readonly changelogEnds: Map<string, number>;
  /** Its task's input partitions, its positions there and their ends as its last fetches saw them; read for an active only. */
  readonly input: () => {
    readonly partitions: readonly TopicPartition[];
    readonly positions: Readonly<Record<string, number>>;
    readonly ends: ReadonlyMap<string, number>;
  };
  readonly seq: number;
}

/**
 * The report of an instance: restore progress over its changelogs; its lag, for an active the
 * input records not yet processed, for the others the changelog records not yet applied.
 */
export function instanceReport({ meta, changelogs, checkpoints, changelogEnds, input, seq }: InstanceFacts): InstanceReport {
  let restored = 0;
  let total = 0;
  for (const tp of changelogs) {
    const key = positionKey(tp);
    const at = checkpoints.get(key) ?? 0;
    const end = Math.max(at, changelogEnds.get(key) ?? 0);
    changelogEnds.set(key, end);
    restored += at;
    total += end;
  }
  let lag = total - restored;
  if (meta.role === "active") {
    const { partitions, positions, ends } = input();
    lag = 0;
    for (const tp of partitions) {
      const key = positionKey(tp);
      const at = positions[key] ?? 0;
      lag += Math.max(0, (ends.get(key) ?? at) - at);
    }
  }
  const { taskId, placement, role, state, epoch, incarnation } = meta;
  return { instance: instanceName(meta), taskId, placement, role, state, epoch, incarnation, failed: meta.failure !== null, lag, restored, total, seq };
}

/** The application (or a part of it) summed up. */
export interface Summary {
  /** Instances that reported. */
  readonly reported: number;
  readonly byState: Readonly<Record<string, number>>;
  readonly byRole: Readonly<Record<string, number>>;
  /** Summed over the instances (see `InstanceReport.lag`). */
  readonly lag: number;
  /** Over the active instances still restoring: records restored and to restore. */
  readonly restoring: { readonly restored: number; readonly total: number };
  /** Instances stopped by a failure. */
  readonly failed: number;
}

export const EMPTY_SUMMARY: Summary = { reported: 0, byState: {}, byRole: {}, lag: 0, restoring: { restored: 0, total: 0 }, failed: 0 };

export function summarize(reports: Iterable<InstanceReport>): Summary {
  const byState: Record<string, number> = {};
  const byRole: Record<string, number> = {};
  let reported = 0;
  let lag = 0;
  let restored = 0;
  let total = 0;
  let failed = 0;
  for (const r of reports) {
    reported++;
    byState[r.state] = (byState[r.state] ?? 0) + 1;
    byRole[r.role] = (byRole[r.role] ?? 0) + 1;
    lag += r.lag;
    if (r.failed) failed++;
    if (r.role === "active" && r.state === "RESTORING") {
      restored += r.restored;
      total += r.total;
    }
  }
  return { reported, byState, byRole, lag, restoring: { restored, total }, failed };
}

export function mergeSummaries(summaries: Iterable<Summary>): Summary {
  const byState: Record<string, number> = {};
  const byRole: Record<string, number> = {};
  let reported = 0;
  let lag = 0;
  let restored = 0;
  let total = 0;
  let failed = 0;
  for (const s of summaries) {
    reported += s.reported;
    lag += s.lag;
    failed += s.failed;
    restored += s.restoring.restored;
    total += s.restoring.total;
    for (const [k, n] of Object.entries(s.byState)) byState[k] = (byState[k] ?? 0) + n;
    for (const [k, n] of Object.entries(s.byRole)) byRole[k] = (byRole[k] ?? 0) + n;
  }
  return { reported, byState, byRole, lag, restoring: { restored, total }, failed };
}
