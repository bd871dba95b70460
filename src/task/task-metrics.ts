import { noEvents, type TaskEventMetrics } from "../streams/runtime/types";
import type { UncaughtErrorPolicy } from "../streams/topology/topology";

/**
 * Counters of one task instance for `GET /metrics` and the status page: records processed,
 * restored and applied as a standby (records, not batches), with their recent rates, commit
 * latency, the processors' event counts of committed work (late records dropped, handled errors,
 * punctuations) and uncaught errors by the policy applied. They live in memory: like any process's Prometheus counters they restart at zero when
 * the object does (scrapers handle resets); durable facts (incarnation, epoch) come from storage.
 */

/** Over how long a rate is averaged. */
export const RATE_WINDOW_MS = 10_000;
const BUCKET_MS = 1_000;

/** A monotonic count and its rate per second over the last `windowMs`. */
export class RateMeter {
  private count = 0;
  /** Counts per one-second bucket, oldest first: [bucket start, count]. */
  private readonly buckets: [number, number][] = [];
  private readonly since: number;

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly windowMs = RATE_WINDOW_MS,
  ) {
    this.since = clock();
  }

  add(n: number): void {
    if (n <= 0) return;
    this.count += n;
    const bucket = Math.floor(this.clock() / BUCKET_MS) * BUCKET_MS;
    const last = this.buckets[this.buckets.length - 1];
    if (last && last[0] === bucket) last[1] += n;
    else this.buckets.push([bucket, n]);
    this.prune();
  }

  get total(): number {
    return this.count;
  }

  /** Records per second over the window (or over the meter's life, when that is shorter). */
  rate(): number {
    this.prune();
    const now = this.clock();
    const span = Math.max(BUCKET_MS, Math.min(this.windowMs, now - this.since));
    const sum = this.buckets.reduce((n, [, count]) => n + count, 0);
    return (sum * 1000) / span;
  }

  private prune(): void {
    const oldest = this.clock() - this.windowMs;
    while (this.buckets.length > 0 && this.buckets[0]![0] + BUCKET_MS <= oldest) this.buckets.shift();
  }
}

export interface LatencySnapshot {
  readonly count: number;
  readonly sumMs: number;
  readonly lastMs: number | null;
  readonly maxMs: number | null;
}

export interface CountSnapshot {
  readonly total: number;
  /** Per second over the last `RATE_WINDOW_MS`. */
  readonly rate: number;
}

export interface TaskCountersSnapshot {
  readonly processed: CountSnapshot;
  readonly restored: CountSnapshot;
  readonly standbyUpdated: CountSnapshot;
  /** From the start of a commit's transaction until the log acknowledged what it produced. */
  readonly commitLatency: LatencySnapshot;
  /** Summed over the commits that succeeded (a rolled-back commit's events did not happen). */
  readonly events: TaskEventMetrics;
  readonly uncaughtErrors: Readonly<Record<UncaughtErrorPolicy, number>>;
}

export class TaskCounters {
  readonly processed: RateMeter;
  readonly restored: RateMeter;
  readonly standbyUpdated: RateMeter;
  private latency = { count: 0, sumMs: 0, lastMs: null as number | null, maxMs: null as number | null };
  private eventTotals: TaskEventMetrics = noEvents();
  private uncaught: Record<UncaughtErrorPolicy, number> = { fail: 0, retry: 0, "shutdown-application": 0 };

  constructor(clock: () => number = Date.now) {
    this.processed = new RateMeter(clock);
    this.restored = new RateMeter(clock);
    this.standbyUpdated = new RateMeter(clock);
  }

  /** A commit of `records` input records completed, `latencyMs` after it started. */
  committed(records: number, latencyMs: number): void {
    this.processed.add(records);
    const l = this.latency;
    this.latency = { count: l.count + 1, sumMs: l.sumMs + latencyMs, lastMs: latencyMs, maxMs: Math.max(l.maxMs ?? 0, latencyMs) };
  }

  /** A commit succeeded: adds what its processor counted since `before` (its counts at the previous commit). */
  events(now: TaskEventMetrics, before: TaskEventMetrics): void {
    const totals = { ...this.eventTotals };
    for (const name of Object.keys(totals) as (keyof TaskEventMetrics)[]) totals[name] += now[name] - before[name];
    this.eventTotals = totals;
  }

  /** Records the log refused at send time, handled by the production handler: dropped, or dead-lettered. */
  refusedRecords(continued: number, deadLettered: number): void {
    const totals = this.eventTotals;
    this.eventTotals = {
      ...totals,
      productionErrorsContinued: totals.productionErrorsContinued + continued,
      productionErrorsDeadLettered: totals.productionErrorsDeadLettered + deadLettered,
    };
  }

  uncaughtError(policy: UncaughtErrorPolicy): void {
    this.uncaught = { ...this.uncaught, [policy]: this.uncaught[policy] + 1 };
  }

  snapshot(): TaskCountersSnapshot {
    const of = (meter: RateMeter): CountSnapshot => ({ total: meter.total, rate: meter.rate() });
    return {
      processed: of(this.processed),
      restored: of(this.restored),
      standbyUpdated: of(this.standbyUpdated),
      commitLatency: { ...this.latency },
      events: { ...this.eventTotals },
      uncaughtErrors: { ...this.uncaught },
    };
  }
}
