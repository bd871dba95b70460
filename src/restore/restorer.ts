/**
 * The restore worker's work loop, apart from its Durable Object: each round reads one batch per
 * registered changelog (for at most `parallelism` instances at a time) — with read-ahead, a
 * restore window of several, compacted into one — and hands it to the instance, which applies it
 * only where it stands (I4). The instance's reply is the only source
 * of positions. Truncated changelogs and fetches that keep failing are reported as corruption,
 * all of a round's in one report.
 */
import { LogUnavailable, OffsetOutOfRange } from "../log/errors";
import type { Log, TopicPartition } from "../log/types";
import type { RestoreListener, StandbyUpdateListener } from "../streams/restore-listeners";
import { recordsRead, type RestoreBatch, type RestoreReply } from "../task/protocol";
import type { ChangelogWork, RestoreRegistry } from "./registry";
import { logEvent } from "../util/logging";
import { registrationEnded, suspensionsOnEnd, type Suspension } from "./suspensions";
import { topicPartition } from "../names";
import { CompactedWindow } from "./compacted-window";

export interface CorruptedInstance {
  readonly instance: string;
  readonly taskId: string;
  readonly incarnation: number;
  readonly changelogs: TopicPartition[];
  readonly reason: string;
}

/**
 * Points of one changelog's batch where a test hook may kill the restore worker: a restore
 * window's first batches are read and the next is not (`mid-window`), the batch is fetched but not
 * yet sent to the instance, or the instance replied but the registry has not recorded the reply
 * yet (so the same batch is delivered again and must be a no-op, I4). (`after-report`: the
 * round's corruption report reached the coordinator, its registrations not yet dropped.)
 */
export type RestoreStep = "mid-window" | "after-fetch" | "after-apply" | "after-report";

export interface RestorerOptions {
  readonly registry: RestoreRegistry;
  readonly log: Log;
  readonly apply: (instance: string, batch: RestoreBatch) => Promise<RestoreReply>;
  readonly reportCorruption: (corrupted: CorruptedInstance[]) => Promise<void>;
  readonly batchRecords: number;
  readonly batchBytes?: number;
  /**
   * Batches a round reads beyond the first into one restore window, compacted and applied as one
   * (src/restore/compacted-window.ts); 0: each round applies one batch as fetched.
   */
  readonly readAhead: number;
  /** The worker's name as its changelogs' partitions wake it, said with each fetch (`FetchBounds.reader`). */
  readonly reader?: () => string | undefined;
  /** Instances restored at the same time. */
  readonly parallelism?: number;
  /** Consecutive failed fetches of one changelog before it counts as corrupted. */
  readonly fetchRetryBudget?: number;
  readonly restoreListener?: RestoreListener;
  readonly standbyListener?: StandbyUpdateListener;
  /** Called at each step of a batch; a test hook that may crash the restore worker there. */
  readonly onStep?: (step: RestoreStep) => void;
  /** Told of listener calls owed when a registration ends because of a reply (see `registrationEnded`). */
  readonly onEnded?: (suspensions: readonly Suspension[]) => Promise<void>;
}

export interface RoundResult {
  /** Batches applied this round. */
  readonly applied: number;
  /** There is more to do. */
  readonly more: boolean;
  /**
   * Of it, work to do right away: a changelog the round did not reach, or one still behind where
   * the round read it. The rest is growth heard while the round ran, which a standby takes at its
   * next update (`STANDBY_UPDATE_INTERVAL_MS`, src/restore/round-pacing.ts).
   */
  readonly backlog: boolean;
  readonly corrupted: CorruptedInstance[];
}

export class Restorer {
  constructor(private readonly options: RestorerOptions) {}

  async round(): Promise<RoundResult> {
    const { registry } = this.options;
    const byInstance = new Map<string, ChangelogWork[]>();
    for (const work of registry.all()) {
      if (work.caughtUp) continue;
      byInstance.set(work.instance, [...(byInstance.get(work.instance) ?? []), work]);
    }
    const chosen = [...byInstance.values()].slice(0, this.options.parallelism ?? 4);
    // What each changelog this round reads had grown to when it began (`backlog` below).
    const grownAtStart = new Map(chosen.flat().map((w) => [workKey(w), w.grown]));
    const corrupted = new Map<string, CorruptedInstance>();
    let applied = 0;
    await Promise.all(
      chosen.map(async (works) => {
        for (const work of works) {
          if (!registry.takeBatch()) return;
          const outcome = await this.restoreOne(work);
          if (outcome === "applied") applied++;
          else registry.returnBatch();
          if (typeof outcome === "object") {
            const held = corrupted.get(work.instance);
            corrupted.set(work.instance, {
              instance: work.instance,
              taskId: work.taskId,
              incarnation: work.incarnation,
              changelogs: [...(held?.changelogs ?? []), { topic: work.topic, partition: work.partition }],
              reason: held ? `${held.reason}; ${outcome.reason}` : outcome.reason,
            });
          }
        }
      }),
    );
    // In instance order, not in the order the concurrent fetches happened to fail.
    const report = [...corrupted.values()].sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
    if (report.length > 0) {
      // Reported first: the coordinator wipes those instances, and each registers again as a new
      // incarnation. Only then do the old registrations go (a newer one stays, see `unregister`).
      // A report that fails keeps them, so the next round finds the corruption and reports it again.
      await this.options.reportCorruption(report);
      this.options.onStep?.("after-report");
      for (const c of report) {
        // Only active restorations cut short are suspended: a wiped standby starts updating again.
        for (const suspension of suspensionsOnEnd(registry.unregister(c.instance, c.incarnation), "wiped")) {
          const { work } = suspension;
          if (suspension.listener === "restore") this.options.restoreListener?.onRestoreSuspended?.(work, work.store, work.restored);
        }
      }
    }
    const control = registry.control();
    const open = !control.paused || (control.budget ?? 0) > 0;
    const waiting = open ? registry.all().filter((w) => !w.caughtUp) : [];
    // Still waiting with no growth heard since the round began: not reached, or behind where it was read.
    const backlog = waiting.some((w) => {
      const grown = grownAtStart.get(workKey(w));
      return grown === undefined || grown === w.grown;
    });
    return { applied, more: waiting.length > 0, backlog, corrupted: report };
  }

  /**
   * One batch for one changelog of one instance. With `readAhead`, a restore window: up to
   * `1 + readAhead` batches read in turn, compacted (src/restore/compacted-window.ts) and applied
   * as one batch that says what it stands for.
   */
  private async restoreOne(work: ChangelogWork): Promise<"applied" | "skipped" | { reason: string }> {
    const { log, registry } = this.options;
    const tp = { topic: work.topic, partition: work.partition };
    const bounds = { maxRecords: this.options.batchRecords, maxBytes: this.options.batchBytes ?? 4 << 20, reader: this.options.reader?.() };
    const { readAhead } = this.options;
    let batch: RestoreBatch;
    let from = work.position;
    try {
      if (from === null) from = (await log.offsets(tp)).earliest;
      const read = { ...tp, incarnation: work.incarnation, epoch: work.epoch, fromOffset: from };
      if (readAhead === 0) {
        const first = await log.fetch(tp, from, bounds);
        batch = { ...read, earliest: first.earliest, nextOffset: first.nextOffset, end: first.latest, records: first.records };
      } else {
        // Encoded where the log can: the window decodes only the records it keeps, and parses a
        // stored batch its fetches cut once (uncut: sent as stored, not encoded again at the log).
        const fetch = (offset: number, maxBytes: number) =>
          log.fetchEncoded ? log.fetchEncoded(tp, offset, { ...bounds, maxBytes, uncut: true }) : log.fetch(tp, offset, { ...bounds, maxBytes });
        const first = await fetch(from, bounds.maxBytes);
        const window = new CompactedWindow(from, bounds.maxBytes);
        let last = first;
        // More while the window took the whole batch, has room, and the changelog had more when it was read.
        for (let left = readAhead; window.add(last) && left > 0 && window.lastAdded > 0 && last.nextOffset < last.latest; left--) {
          const maxBytes = window.nextFetchBytes(bounds.maxBytes);
          if (maxBytes === 0) break;
          this.options.onStep?.("mid-window");
          last = await fetch(last.nextOffset, maxBytes);
        }
        batch = {
          ...read,
          earliest: first.earliest,
          nextOffset: window.nextOffset,
          // The latest end seen: the window is caught up only if it reached it.
          end: last.latest,
          records: window.records(),
          recordsRead: window.recordsRead,
          positions: window.positions(),
        };
      }
    } catch (error) {
      if (error instanceof OffsetOutOfRange) return { reason: `${topicPartition(tp)}: changelog truncated below position ${from}` };
      if (!(error instanceof LogUnavailable)) throw error;
      const failures = work.failures + 1;
      if (failures > (this.options.fetchRetryBudget ?? 5)) return { reason: `${topicPartition(tp)}: fetch failed ${failures} times` };
      registry.transaction(() => registry.update(work, { position: work.position, caughtUp: false, restoredRecords: 0, failures }));
      return "skipped";
    }
    this.options.onStep?.("after-fetch");
    let reply: RestoreReply;
    try {
      reply = await this.options.apply(work.instance, batch);
    } catch (error) {
      // The instance did not answer (it died, or is being reset): a later round delivers the batch again (I4).
      logEvent(
        "restore.apply-failed",
        { instance: work.instance, incarnation: work.incarnation, changelog: `${topicPartition(tp)}`, error: String(error) },
        "warn",
      );
      return "skipped";
    }
    this.options.onStep?.("after-apply");
    const ended = registrationEnded(work, reply);
    if (ended !== undefined && ended !== "finished") {
      await this.end(work, ended);
      return "skipped";
    }
    // Records of the changelog, as Kafka's listeners count them: a window's compacted away ones too.
    const restoredRecords = reply.applied ? recordsRead(batch) : 0;
    registry.transaction(() => registry.update(work, { position: reply.checkpoint, caughtUp: reply.caughtUp, restoredRecords }));
    if (reply.applied) {
      // The first batch applied since registration: this is where restoring (or updating) starts.
      // (Not a batch the instance already had: delivered again, it would start it twice.)
      if (work.restored === 0) this.started(work, from, batch.end);
      this.batchDone(work, batch, restoredRecords, reply);
    }
    if (ended === "finished") await this.end(work, ended);
    return reply.applied ? "applied" : "skipped";
  }

  /** The registration `work` was read for is over (the instance said so): it goes, with the listener calls owed. */
  private async end(work: ChangelogWork, how: "finished" | "revoked" | "wiped"): Promise<void> {
    const removed = this.options.registry.unregisterExact(work);
    await this.options.onEnded?.(suspensionsOnEnd(removed, how));
  }

  private started(work: ChangelogWork, from: number, end: number): void {
    if (work.role === "standby") this.options.standbyListener?.onUpdateStart?.(work, work.store, from);
    else this.options.restoreListener?.onRestoreStart?.(work, work.store, from, end);
  }

  private batchDone(work: ChangelogWork, batch: RestoreBatch, records: number, reply: RestoreReply): void {
    if (work.role === "standby") {
      this.options.standbyListener?.onBatchLoaded?.(work, work.store, batch.nextOffset, records, batch.end);
      return;
    }
    this.options.restoreListener?.onBatchRestored?.(work, work.store, batch.nextOffset, records);
    if (reply.caughtUp) this.options.restoreListener?.onRestoreEnd?.(work, work.store, work.restored + records);
  }
}

/** A registration's changelog, as one round tells it apart from the others. */
function workKey(w: ChangelogWork): string {
  return `${w.instance}\u0000${w.incarnation}\u0000${w.epoch}\u0000${w.topic}\u0000${w.partition}`;
}
