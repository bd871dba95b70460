/**
 * The application summary of `GET /tasks`, `/metrics` and the status page, served from aggregated
 * state rather than by asking every task object: each instance reports what it knows of itself
 * (role, state, lag, restore progress) to its restore worker shard — throttled and cheap, from
 * memory, without calling the log — and a view sums the shards' aggregates, so it costs one call
 * per shard (placements × RESTORE_SHARDS) whatever the number of tasks. Failed instances count as
 * `FAILED` (state.ts `shownState`) with their lag and their reason, which `GET /health` reads. Pure.
 */
import type { TopicPartition } from "../log/types";
import { instanceName, topicPartition } from "../names";
import { describeRecord } from "../task/skips";
import { shownState, type ShownState, type TaskRole } from "../task/state";
import type { TaskMeta } from "../task/task-storage";

/** What an instance tells its restore worker shard about itself. */
export interface InstanceReport {
  /** `<task>@<placement>`. */
  readonly instance: string;
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  /** FAILED for an active instance stopped by a failure, else its lifecycle state. */
  readonly state: ShownState;
  readonly epoch: number;
  readonly incarnation: number;
  /** Stopped by a failure. */
  readonly failed: boolean;
  /** Why it stopped (bounded, with the record it stopped at), when it did; null otherwise. */
  readonly failure: string | null;
  /** Active: input records not yet processed (as of its last fetch); standby and idle: changelog records not yet applied. */
  readonly lag: number;
  /** Active: the timestamp of the oldest input record not yet processed, as known; null when none is known to wait. */
  readonly oldestWaiting: number | null;
  /** Changelog records the store reflects, summed over its changelogs, and the changelogs' ends as last seen. */
  readonly restored: number;
  readonly total: number;
  /** Orders an instance's reports (they travel without waiting for each other). */
  readonly seq: number;
}

/** A report is sent at once when what the instance is changed, or when it has caught up; progress at most this often. */
export const REPORT_INTERVAL_MS = 5_000;

/** A failure's reason in a report, at most this long (the instance's `GET /tasks` entry has it whole). */
export const REPORTED_FAILURE_CHARS = 300;

/** Failed instances a summary names (`GET /health`'s reasons); the count goes on beyond. */
export const FAILURES_NAMED = 100;

/**
 * Whether `next` must be sent, given the last report sent (and when) and since when the instance
 * has been behind without a break (`behindSince`, undefined while caught up). Only what the summary
 * shows counts: lag (and with it the oldest record waiting), and restore progress for an active
 * still restoring. A spell behind that ends within REPORT_INTERVAL_MS is never told: at 256
 * partitions each task's input arrives every few seconds and is processed within milliseconds,
 * and telling the spell and its end was a request per instance per few seconds (issue #33).
 */
export function reportDue(
  last: { readonly report: InstanceReport; readonly at: number } | undefined,
  next: InstanceReport,
  now: number,
  behindSince?: number,
): boolean {
  if (!last) return true;
  const a = last.report;
  if (a.role !== next.role || a.state !== next.state || a.epoch !== next.epoch || a.incarnation !== next.incarnation || a.failed !== next.failed) return true;
  if (!shownChanged(a, next)) return false;
  // Catching up: the last word of a busy spell is never held back (nothing may come after it).
  if (caughtUp(next)) return !caughtUp(a) || now - last.at >= REPORT_INTERVAL_MS;
  // Fallen behind after a report that said caught up: told once the spell lasts the interval
  // (a restore's progress as before: a restore is never a spell of milliseconds).
  if (caughtUp(a) && !restoringActive(next) && (behindSince === undefined || now - behindSince < REPORT_INTERVAL_MS)) return false;
  return now - last.at >= REPORT_INTERVAL_MS;
}

/** An active instance restoring: the only one whose restore progress the summary shows. */
function restoringActive(report: InstanceReport): boolean {
  return report.role === "active" && report.state === "RESTORING";
}

/** Whether `next` differs from `last` in anything the summary shows. */
function shownChanged(last: InstanceReport, next: InstanceReport): boolean {
  if (last.lag !== next.lag) return true;
  return restoringActive(next) && (last.restored !== next.restored || last.total !== next.total);
}

/** Nothing left to process or apply, as the summary sees it. */
export function caughtUp(report: InstanceReport): boolean {
  return report.lag === 0 && (!restoringActive(report) || report.restored === report.total);
}

/** What an instance knows of itself without calling the log, from which its report is made. */
export interface InstanceFacts {
  readonly meta: Pick<TaskMeta, "taskId" | "placement" | "role" | "state" | "epoch" | "incarnation" | "failure" | "failedAt">;
  /** Its task's changelog partitions, and its checkpoint in each. */
  readonly changelogs: readonly TopicPartition[];
  readonly checkpoints: ReadonlyMap<string, number>;
  /**
   * Each changelog's end as last seen (by position key). Raised here to the checkpoint where that
   * is further: a checkpoint is never past its changelog's end, so the end is known at least that far.
   */
  readonly changelogEnds: Map<string, number>;
  /**
   * Its task's input partitions, its positions there and their ends as its last fetches saw them,
   * and the timestamp of the oldest record known to wait (input-lag.ts); read for an active only.
   */
  readonly input: () => {
    readonly partitions: readonly TopicPartition[];
    readonly positions: Readonly<Record<string, number>>;
    readonly ends: ReadonlyMap<string, number>;
    readonly oldestWaiting?: number | null;
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
    const key = topicPartition(tp);
    const at = checkpoints.get(key) ?? 0;
    const end = Math.max(at, changelogEnds.get(key) ?? 0);
    changelogEnds.set(key, end);
    restored += at;
    total += end;
  }
  let lag = total - restored;
  let oldestWaiting: number | null = null;
  if (meta.role === "active") {
    const { partitions, positions, ends, oldestWaiting: oldest } = input();
    lag = 0;
    for (const tp of partitions) {
      const key = topicPartition(tp);
      const at = positions[key] ?? 0;
      lag += Math.max(0, (ends.get(key) ?? at) - at);
    }
    oldestWaiting = lag > 0 ? (oldest ?? null) : null;
  }
  const { taskId, placement, role, epoch, incarnation } = meta;
  return {
    instance: instanceName(meta),
    taskId,
    placement,
    role,
    state: shownState(meta),
    epoch,
    incarnation,
    failed: meta.failure !== null,
    failure: failureReason(meta),
    lag,
    oldestWaiting,
    restored,
    total,
    seq,
  };
}

/** A failure as reports and `GET /health` name it: its message, bounded, and the record it stopped at. */
export function failureReason(meta: Pick<TaskMeta, "failure" | "failedAt">): string | null {
  if (meta.failure === null) return null;
  const message = meta.failure.length > REPORTED_FAILURE_CHARS ? `${meta.failure.slice(0, REPORTED_FAILURE_CHARS - 1)}…` : meta.failure;
  return meta.failedAt ? `stopped at ${describeRecord(meta.failedAt)}: ${message}` : message;
}

/** A failed active instance, as a summary names it. */
export interface FailedInstance {
  readonly task: string;
  readonly placement: string;
  readonly reason: string;
}

/** The application (or a part of it) summed up. */
export interface Summary {
  /** Instances that reported. */
  readonly reported: number;
  readonly byState: Readonly<Record<string, number>>;
  readonly byRole: Readonly<Record<string, number>>;
  /**
   * Input records not yet processed, summed over the active instances, failed ones included (see
   * `InstanceReport.lag`): 0 means every record that reached the application is processed.
   */
  readonly lag: number;
  /** Changelog records not yet applied, summed over the standby and idle instances (another unit than `lag`, kept apart). */
  readonly standbyLag: number;
  /** Over the active instances still restoring: records restored and to restore. */
  readonly restoring: { readonly restored: number; readonly total: number };
  /** Instances stopped by a failure. */
  readonly failed: number;
  /** The failed active instances and why (the first FAILURES_NAMED, by task and placement). */
  readonly failures: readonly FailedInstance[];
  /** The timestamp of the oldest input record an active instance has not processed yet, as reported; null when none waits. */
  readonly oldestWaiting: number | null;
}

export const EMPTY_SUMMARY: Summary = {
  reported: 0,
  byState: {},
  byRole: {},
  lag: 0,
  standbyLag: 0,
  restoring: { restored: 0, total: 0 },
  failed: 0,
  failures: [],
  oldestWaiting: null,
};

/** The failures of several summaries (or reports), the first FAILURES_NAMED by task and placement. */
function firstFailures(failures: FailedInstance[]): FailedInstance[] {
  return failures.sort((a, b) => (a.task === b.task ? (a.placement < b.placement ? -1 : 1) : a.task < b.task ? -1 : 1)).slice(0, FAILURES_NAMED);
}

function older(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

export function summarize(reports: Iterable<InstanceReport>): Summary {
  const byState: Record<string, number> = {};
  const byRole: Record<string, number> = {};
  let reported = 0;
  let lag = 0;
  let standbyLag = 0;
  let restored = 0;
  let total = 0;
  let failed = 0;
  let oldestWaiting: number | null = null;
  const failures: FailedInstance[] = [];
  for (const r of reports) {
    reported++;
    byState[r.state] = (byState[r.state] ?? 0) + 1;
    byRole[r.role] = (byRole[r.role] ?? 0) + 1;
    if (r.role === "active") lag += r.lag;
    else standbyLag += r.lag;
    if (r.failed) failed++;
    if (r.failed && r.role === "active") failures.push({ task: r.taskId, placement: r.placement, reason: r.failure ?? "stopped" });
    if (r.role === "active") oldestWaiting = older(oldestWaiting, r.oldestWaiting ?? null);
    if (r.role === "active" && r.state === "RESTORING") {
      restored += r.restored;
      total += r.total;
    }
  }
  return { reported, byState, byRole, lag, standbyLag, restoring: { restored, total }, failed, failures: firstFailures(failures), oldestWaiting };
}

export function mergeSummaries(summaries: Iterable<Summary>): Summary {
  const byState: Record<string, number> = {};
  const byRole: Record<string, number> = {};
  let reported = 0;
  let lag = 0;
  let standbyLag = 0;
  let restored = 0;
  let total = 0;
  let failed = 0;
  let oldestWaiting: number | null = null;
  const failures: FailedInstance[] = [];
  for (const s of summaries) {
    reported += s.reported;
    lag += s.lag;
    // A shard of the version before answers without it (its `lag` then still counts its standbys).
    standbyLag += s.standbyLag ?? 0;
    failed += s.failed;
    failures.push(...(s.failures ?? []));
    oldestWaiting = older(oldestWaiting, s.oldestWaiting ?? null);
    restored += s.restoring.restored;
    total += s.restoring.total;
    for (const [k, n] of Object.entries(s.byState)) byState[k] = (byState[k] ?? 0) + n;
    for (const [k, n] of Object.entries(s.byRole)) byRole[k] = (byRole[k] ?? 0) + n;
  }
  return { reported, byState, byRole, lag, standbyLag, restoring: { restored, total }, failed, failures: firstFailures(failures), oldestWaiting };
}
