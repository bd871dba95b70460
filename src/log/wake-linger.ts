/**
 * When a partition wakes a task instance after appends: at once, or a little later with the
 * appends gathered (Kafka's `fetch.max.wait.ms` turned around: the partition holds the wake-up, not
 * the reader its fetch). A wake-up is a billed request; under a steady stream of small appends a
 * task woken for each of them pays one request per append, while a wake-up every `WAKE_LINGER_MS`
 * carrying every record appended since (one pushed fetch, src/log/pushed-fetches.ts) pays one per
 * linger. Only while the partition takes at least `LINGER_MIN_RECORDS_PER_S` records per second:
 * a lone append (a quiet partition, one order at a time) wakes its task at once, so its latency
 * stays that of a wake-up. The first append after a wake-up that is a linger old or more is woken
 * for at once too; those that follow within the linger wait for the wake-up due at its end.
 *
 * Pure (time is passed in) and in memory: a partition that restarts has no wake-up held, and one
 * that dies holding one leaves its task behind the end, which its echo alarm (src/log/echoes.ts)
 * wakes. The wake-up carries what a fetch from the first held append's offset returns; the task
 * uses it only if it starts at the task's own position, else it fetches (the position is the
 * truth, the push only an earlier fetch).
 */

/** How long a partition holds a task's wake-up under a steady stream of appends. */
export const WAKE_LINGER_MS = 40;
/** The partition holds wake-ups only while it takes at least this many records per second (over `RATE_WINDOW_MS`). */
export const LINGER_MIN_RECORDS_PER_S = 1_000;
/** The window over which the partition's rate of records appended is counted. */
export const RATE_WINDOW_MS = 200;

/** Records that arrived: when, and how many (the rate's window of `streaming`). */
export interface Arrival {
  readonly at: number;
  readonly records: number;
}

/**
 * Whether records arrive fast enough, as of `now`, to linger: at least `minRecordsPerS` over the
 * last `RATE_WINDOW_MS` (dropping older arrivals from `recent`). The partitions' held wake-ups and
 * ingest's paced appends (src/ingest/gather.ts) both go by it.
 */
export function streaming(recent: Arrival[], now: number, minRecordsPerS: number): boolean {
  while (recent.length > 0 && recent[0]!.at <= now - RATE_WINDOW_MS) recent.shift();
  let records = 0;
  for (const r of recent) records += r.records;
  return (records * 1000) / RATE_WINDOW_MS >= minRecordsPerS;
}

/** A wake-up held: the offset of the first append it is for, and when it goes. */
export interface HeldWake {
  readonly from: number;
  readonly at: number;
}

/** What to do about an append for one subscriber: wake it now, hold its wake-up until `at` (a timer must go then), or nothing (one is held already). */
export type LingerDecision = { readonly kind: "now" } | { readonly kind: "hold"; readonly at: number } | { readonly kind: "held" };

export class WakeLinger {
  /** Appends within the rate window: when, and how many records. */
  private readonly recent: Arrival[] = [];
  /** Per subscriber: when it was last woken. */
  private readonly wokenAt = new Map<string, number>();
  /** Per subscriber: its wake-up held. */
  private readonly held = new Map<string, HeldWake>();

  constructor(
    private readonly lingerMs = WAKE_LINGER_MS,
    private readonly minRecordsPerS = LINGER_MIN_RECORDS_PER_S,
  ) {}

  /** `records` were appended at `now` (counted towards the rate, whoever is woken). */
  appended(now: number, records: number): void {
    this.recent.push({ at: now, records });
    // Counted, so that the window stays bounded while no decision looks at it.
    streaming(this.recent, now, this.minRecordsPerS);
  }

  /** Whether the partition takes records fast enough, as of `now`, for wake-ups to be held. */
  streaming(now: number): boolean {
    return streaming(this.recent, now, this.minRecordsPerS);
  }

  /** An append at `now` starting at `from`: what it means for waking `name`. */
  decide(name: string, now: number, from: number): LingerDecision {
    if (this.held.has(name)) return { kind: "held" };
    const last = this.wokenAt.get(name);
    if (last !== undefined && now - last < this.lingerMs && this.streaming(now)) {
      const at = last + this.lingerMs;
      this.held.set(name, { from, at });
      return { kind: "hold", at };
    }
    this.wokenAt.set(name, now);
    return { kind: "now" };
  }

  /** `name` is woken now anyway (an echo, a subscription): a wake-up held for it is void. */
  wokeNow(name: string, now: number): void {
    this.held.delete(name);
    this.wokenAt.set(name, now);
  }

  /** The held wake-up of `name` goes now: what it is for (undefined if none is held: taken already, or void). */
  release(name: string, now: number): HeldWake | undefined {
    const held = this.held.get(name);
    if (!held) return undefined;
    this.held.delete(name);
    this.wokenAt.set(name, now);
    return held;
  }

  /** The wake-up held for `name`, if any (tests, and the partition's timer). */
  heldFor(name: string): HeldWake | undefined {
    return this.held.get(name);
  }

  /** `name` no longer subscribes. */
  forget(name: string): void {
    this.held.delete(name);
    this.wokenAt.delete(name);
  }
}
