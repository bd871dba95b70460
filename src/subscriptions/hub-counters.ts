/**
 * What a subscription hub did (durable-objects/subscription-hub.ts), for `GET /metrics`
 * (docs/subscriptions.md, *Metrics*): events pushed, changelog reads, sockets dropped (closed
 * `4008` as too slow, or overtaken: sent `resync` and a fresh snapshot, or closed `4009`) and sockets refused over a limit. In
 * memory, from the hub instance's start (`since`): no row is written per push. An eviction of the
 * hub (it hibernates, and the runtime drops an idle object from memory) or a crash starts them
 * again at 0, as a process restart does a process's counters; the sockets held are not counted
 * here but read from the runtime, which keeps them across hibernation. Platform-free.
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
  /** When these counters started (ms since the epoch): the hub instance's start. */
  readonly since: number;
}

export class HubCounters {
  pushed = 0;
  reads = 0;
  readonly drops: Record<HubDrop, number> = { slow: 0, resync: 0 };
  readonly refused: Record<HubLimit, number> = { hub: 0, key: 0 };

  constructor(readonly since = Date.now()) {}

  /** Counts a refusal of a socket, by the limit it hit (as hub-sockets.ts `refusal` decides). */
  refuse(open: { hub: number; key: number }, limits: HubLimits): void {
    this.refused[open.hub >= limits.perHub ? "hub" : "key"]++;
  }

  metrics(sockets: number): HubMetrics {
    return { sockets, pushed: this.pushed, reads: this.reads, drops: { ...this.drops }, refused: { ...this.refused }, since: this.since };
  }
}
