/**
 * What a task instance tells its restore worker shard of itself, for the application summary
 * (summary.ts), and when — from what the instance knows without calling the log: its meta row,
 * its checkpoints and positions, and the ends its last fetches and restore batches saw. A report
 * is due at once when its role, state, epoch, incarnation or failure changed or when it caught up,
 * else at most every REPORT_INTERVAL_MS, and a spell behind only once it lasted that long (`reportDue`). A report is never awaited (it is not on the
 * processing path); one that failed is forgotten, so that the next one goes.
 */
import type { TopicPartition } from "../log/types";
import { logEvent } from "../util/logging";
import type { TaskMeta } from "../task/task-storage";
import { caughtUp, instanceReport, reportDue, type InstanceReport } from "./summary";
import { topicPartition } from "../names";

/** What the reporter reads of the instance (`StreamTask`) and of its application. */
export interface ReportedInstance {
  meta(): TaskMeta | undefined;
  checkpoints(): ReadonlyMap<string, number>;
  positions(): Readonly<Record<string, number>>;
  knownInputEnds(): ReadonlyMap<string, number>;
  oldestWaiting(): number | null;
}

export interface ReportedApplication {
  changelogPartitions(taskId: string): readonly TopicPartition[];
  inputPartitions(taskId: string): readonly TopicPartition[];
}

/** A report handed out to be sent, and when. */
export interface SentReport {
  readonly report: InstanceReport;
  readonly at: number;
}

export interface ReporterDeps {
  readonly instance: ReportedInstance;
  readonly application: ReportedApplication;
  /** Sends a report to the instance's restore worker shard. */
  readonly deliver: (report: InstanceReport) => Promise<unknown>;
  /** Keeps the sending going after the call that started it (`ctx.waitUntil`). */
  readonly background: (work: Promise<unknown>) => void;
  /** The clock at start: reports are ordered from it on, across the object's restarts too. */
  readonly now: number;
}

export class InstanceReporter {
  /** The last report handed out, and when. */
  private last: SentReport | undefined;
  /** Since when the instance has been behind without a break, as its reports saw it (undefined: caught up). */
  private behindSince: number | undefined;
  /** Orders this instance's reports, across its object's restarts too (it starts from the clock). */
  private seq: number;
  /** Each changelog's end as the last restore batch or description saw it (in memory). */
  private readonly changelogEnds = new Map<string, number>();

  private readonly instance: ReportedInstance;
  private readonly application: ReportedApplication;

  constructor(private readonly deps: ReporterDeps) {
    this.instance = deps.instance;
    this.application = deps.application;
    this.seq = deps.now * 1_000;
  }

  /** Sends the instance's report when one is due (in the background). */
  report(now: number): void {
    const due = this.due(now);
    if (!due) return;
    const { report } = due;
    this.deps.background(
      this.deps.deliver(report).catch((error: unknown) => {
        this.failed(due);
        logEvent("task.report-failed", { task: report.taskId, placement: report.placement, error: String(error) }, "debug");
      }),
    );
  }

  /** A changelog's end as seen (a restore batch's, or a description's). */
  sawChangelogEnd(tp: TopicPartition, end: number, raiseOnly = false): void {
    const key = topicPartition(tp);
    this.changelogEnds.set(key, raiseOnly ? Math.max(end, this.changelogEnds.get(key) ?? 0) : end);
  }

  /** The report to send now, if one is due (it counts as sent until `failed` says otherwise). */
  private due(now: number): SentReport | undefined {
    const report = this.current();
    if (!report) return undefined;
    this.behindSince = caughtUp(report) ? undefined : (this.behindSince ?? now);
    if (!reportDue(this.last, report, now, this.behindSince)) return undefined;
    this.last = { report, at: now };
    return this.last;
  }

  /** Sending `sent` failed: the next report goes, whatever it says. */
  private failed(sent: SentReport): void {
    if (this.last === sent) this.last = undefined;
  }

  private current(): InstanceReport | undefined {
    const meta = this.instance.meta();
    if (!meta) return undefined;
    return instanceReport({
      meta,
      changelogs: this.application.changelogPartitions(meta.taskId),
      checkpoints: this.instance.checkpoints(),
      changelogEnds: this.changelogEnds,
      input: () => ({
        partitions: this.application.inputPartitions(meta.taskId),
        positions: this.instance.positions(),
        ends: this.instance.knownInputEnds(),
        oldestWaiting: this.instance.oldestWaiting(),
      }),
      seq: ++this.seq,
    });
  }
}
