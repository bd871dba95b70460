/**
 * What a subscription hub did (durable-objects/subscription-hub.ts), for `GET /metrics`
 * (docs/subscriptions.md, *Metrics*): events pushed, changelog reads, sockets that lost their place
 * (closed `4008` as too slow, or overtaken: sent `resync` and a fresh snapshot, or closed `4009`)
 * and sockets refused over a limit. Counted in memory and saved in the hub's one row (`saved`)
 * before every answer to `metrics()` and at the end of a wake-up at most every 10 s, so that the
 * counts are monotonic: an eviction of the hub (it hibernates, and the runtime drops an idle
 * object from memory) or a crash starts again from the saved counts (losing at most the last 10 s
 * of counting), and a count once answered was saved first (the object's output gate holds the
 * answer until its write is durable). Summing them over
 * hubs was what showed falls before: the counts restarted at 0 in memory, and a tail's hub leaves
 * the page when its last tail closes. Platform-free.
 */
import type { HubLimits } from "./hub-sockets";

export type HubDrop = "slow" | "resync";
export type HubLimit = "hub" | "key";

/** What `SubscriptionHub.metrics()` answers: the counters, and the sockets open now. */
export interface HubMetrics {
  /** Sockets open now (the runtime's count: kept across hibernation). */
  readonly sockets: number;
  /** Messages sent to sockets: snapshots handed over by the Worker and changes pushed. */
  readonly pushed: number;
  /** Changelog reads (each serves every socket with room). */
  readonly reads: number;
  readonly drops: Readonly<Record<HubDrop, number>>;
  readonly refused: Readonly<Record<HubLimit, number>>;
  /** When these counters started (ms since the epoch): the hub's first count, kept across its resets. */
  readonly since: number;
}

/** The counters as the hub's row keeps them. */
export interface SavedHubCounters {
  readonly pushed: number;
  readonly reads: number;
  readonly drops: Readonly<Record<HubDrop, number>>;
  readonly refused: Readonly<Record<HubLimit, number>>;
  readonly since: number;
}

export class HubCounters {
  pushed = 0;
  reads = 0;
  readonly drops: Record<HubDrop, number> = { slow: 0, resync: 0 };
  readonly refused: Record<HubLimit, number> = { hub: 0, key: 0 };
  /** What was last saved (or restored), to save only what changed. */
  private savedText: string | undefined;

  constructor(readonly since = Date.now()) {}

  /** The counters a row kept; undefined for a row that is not counters (none yet, or damaged: start again). */
  static restore(saved: unknown): HubCounters | undefined {
    const s = saved as Partial<SavedHubCounters> | null | undefined;
    const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
    if (typeof s !== "object" || s === null || !count(s.pushed) || !count(s.reads) || !count(s.since)) return undefined;
    if (!count(s.drops?.slow) || !count(s.drops?.resync) || !count(s.refused?.hub) || !count(s.refused?.key)) return undefined;
    const counters = new HubCounters(s.since);
    counters.pushed = s.pushed;
    counters.reads = s.reads;
    Object.assign(counters.drops, { slow: s.drops.slow, resync: s.drops.resync });
    Object.assign(counters.refused, { hub: s.refused.hub, key: s.refused.key });
    counters.savedText = JSON.stringify(counters.toSaved());
    return counters;
  }

  toSaved(): SavedHubCounters {
    return { pushed: this.pushed, reads: this.reads, drops: { ...this.drops }, refused: { ...this.refused }, since: this.since };
  }

  /** The counters to save when they changed since the last save (which this counts as made), else undefined. */
  unsaved(): SavedHubCounters | undefined {
    const saved = this.toSaved();
    const text = JSON.stringify(saved);
    if (text === this.savedText) return undefined;
    this.savedText = text;
    return saved;
  }

  /** Counts a refusal of a socket, by the limit it hit (as hub-sockets.ts `refusal` decides). */
  refuse(open: { hub: number; key: number }, limits: HubLimits): void {
    this.refused[open.hub >= limits.perHub ? "hub" : "key"]++;
  }

  metrics(sockets: number): HubMetrics {
    return { sockets, pushed: this.pushed, reads: this.reads, drops: { ...this.drops }, refused: { ...this.refused }, since: this.since };
  }
}
