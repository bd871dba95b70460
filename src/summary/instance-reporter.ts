/**
 * What a task instance tells its restore worker shard of itself, for the application summary
 * (summary.ts), and when — from what the instance knows without calling the log: its meta row,
 * its checkpoints and positions, and the ends its last fetches and restore batches saw. A report
 * is due at once when its role, state, epoch, incarnation or failure changed or when it caught up,
 * else at most every REPORT_INTERVAL_MS (`reportDue`). Sending is the object's; a report that
 * failed is forgotten, so that the next one goes.
 */
import type { TopicPartition } from "../log/types";
import { positionKey } from "../task/record-collector";
import type { TaskMeta } from "../task/task-storage";
import { instanceReport, reportDue, type InstanceReport } from "./summary";

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

export class InstanceReporter {
  /** The last report handed out, and when. */
  private last: SentReport | undefined;
  /** Orders this instance's reports, across its object's restarts too (it starts from the clock). */
  private seq: number;
  /** Each changelog's end as the last restore batch or description saw it (in memory). */
  private readonly changelogEnds = new Map<string, number>();

  constructor(
    private readonly instance: ReportedInstance,
    private readonly application: ReportedApplication,
    now: number,
  ) {
    this.seq = now * 1_000;
  }

  /** A changelog's end as seen (a restore batch's, or a description's). */
  sawChangelogEnd(tp: TopicPartition, end: number, raiseOnly = false): void {
    const key = positionKey(tp);
    this.changelogEnds.set(key, raiseOnly ? Math.max(end, this.changelogEnds.get(key) ?? 0) : end);
  }

  /** The report to send now, if one is due (it counts as sent until `failed` says otherwise). */
  due(now: number): SentReport | undefined {
    const report = this.current();
    if (!report || !reportDue(this.last, report, now)) return undefined;
    this.last = { report, at: now };
    return this.last;
  }

  /** Sending `sent` failed: the next report goes, whatever it says. */
  failed(sent: SentReport): void {
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
