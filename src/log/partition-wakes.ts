/**
 * How a partition wakes its subscribers after appends and echoes (the partition's object,
 * durable-objects/log-partition.ts, only wires it): task instances reading the partition — each
 * woken at once or, under a steady stream of small appends, once per linger with the appends
 * gathered (src/log/wake-linger.ts), carrying the fetch it makes next (src/log/pushed-fetches.ts)
 * — and restore workers and hubs (`hearsByAnswering`), woken at once, except a restore worker
 * that promised to read the partition and has not fetched since (src/log/wake-ups.ts). A failed wake-up is tried
 * again twice, then only delays work: the partition's echo alarm wakes readers that lag. All in
 * memory.
 */
import { hearsByAnswering } from "../names";
import type { EncodedFetch } from "./record-batch";
import { pushFrom, type PushedFetch, type WakeTold } from "./pushed-fetches";
import type { AppendResult, FetchBounds, TopicPartition } from "./types";
import { WakeLinger } from "./wake-linger";
import { WakeUps, wakeRetryDelay } from "./wake-ups";

/** What the partition gives its wake-ups. */
export interface WakeTargets {
  /** Wakes a task instance; its answer (see `TaskObjectCalls.wake`). */
  wakeTask(name: string, pushed: PushedFetch | undefined, echo: boolean, told: WakeTold): Promise<number | null>;
  /** Wakes a restore worker or a hub (it answers once it noted the growth; true: it reads the partition after this wake-up). */
  wakeListener(name: string, tp: TopicPartition): Promise<boolean | undefined | void>;
  /** The partition's fetch, encoded, as a reader's would be. */
  fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): EncodedFetch;
  /** The partition's end now. */
  end(tp: TopicPartition): number;
  /** A listener heard: the echo alarm may be taken back. */
  heard(): void;
  /** Keeps the wake-ups going after the call that made them (`ctx.waitUntil`). */
  background(work: Promise<unknown>): void;
  readonly now?: () => number;
}

export class PartitionWakes {
  /** Subscribers that look at their input soon anyway, and what listeners heard (see wake-ups.ts). */
  readonly wakeUps = new WakeUps();
  /** Wake-ups of task instances held under a steady stream of appends (see wake-linger.ts). */
  readonly linger: WakeLinger;
  /** Until when wake-ups are dropped (the fault route `POST /admin/wakes/drop`). */
  private dropUntil = 0;
  /** The timers of held wake-ups, per subscriber. */
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly targets: WakeTargets,
    linger = new WakeLinger(),
  ) {
    this.linger = linger;
  }

  private now(): number {
    return (this.targets.now ?? Date.now)();
  }

  /**
   * Wakes `subscribers` of `tp`, whose log ends at `end`: after an append (`appended`), or as an
   * echo (`echo`: no push, and at once).
   */
  wake(tp: TopicPartition, end: number, subscribers: readonly string[], appended?: AppendResult, echo = false): void {
    const now = this.now();
    if (appended) this.linger.appended(now, appended.count);
    if (now < this.dropUntil) return;
    const names = subscribers.filter((name) => this.wakeUps.needed(name, now));
    const woken: string[] = [];
    let heard = false;
    for (const name of names) {
      if (appended && !echo && this.wakeUps.readsAnyway(name)) {
        // It reads the partition to its end after this append anyway: heard, as if it answered.
        this.wakeUps.heard(name, end);
        heard = true;
        continue;
      }
      if (hearsByAnswering(name) || !appended || echo) {
        if (!hearsByAnswering(name)) this.voidHeld(name, now);
        woken.push(name);
        continue;
      }
      const decision = this.linger.decide(name, now, appended.baseOffset);
      if (decision.kind === "now") woken.push(name);
      else if (decision.kind === "hold") this.holdUntil(tp, name, decision.at);
    }
    if (heard) this.targets.heard();
    if (woken.length === 0) return;
    const pushedTo = (name: string) => !hearsByAnswering(name) && this.wakeUps.wantsPush(name);
    const pushed = appended && !echo && woken.some(pushedTo) ? pushFrom(tp, appended.baseOffset, appended.count, this.fetch) : undefined;
    // A pushed fetch hands records over, which must be durable first: the runtime holds an
    // object's outgoing RPC calls until its output gate opens (its writes so far are durable),
    // so the wake-up leaves no sooner. (Awaiting storage.sync() first measured slower under load.)
    this.targets.background(Promise.allSettled(woken.map((name) => this.send(tp, end, name, pushedTo(name) ? pushed : undefined, echo))));
  }

  /** Fault injection: for `ms`, wake-ups are dropped (as if lost on the way). */
  dropFor(ms: number): void {
    this.dropUntil = this.now() + Math.max(0, ms);
  }

  /** `name` (re)subscribed: it is woken by the next append, whatever it said before. */
  subscribed(name: string): void {
    this.wakeUps.wakeNext(name);
  }

  /** A fetch of `name` (a listener that says who reads, see `FetchBounds.reader`) came in: the next append wakes it. */
  readBy(name: string): void {
    this.wakeUps.read(name);
  }

  /** `name` unsubscribed: what it said and any wake-up held for it are forgotten. */
  unsubscribed(name: string): void {
    this.wakeUps.forget(name);
    this.voidHeld(name, this.now());
    this.linger.forget(name);
  }

  private readonly fetch = (tp: TopicPartition, offset: number, bounds: FetchBounds) => this.targets.fetchEncoded(tp, offset, bounds);

  /** Holds the wake-up of `name` until `at`, then sends it with every record appended since the first held append. */
  private holdUntil(tp: TopicPartition, name: string, at: number): void {
    const timer = setTimeout(
      () => {
        this.timers.delete(name);
        const now = this.now();
        const held = this.linger.release(name, now);
        if (!held || now < this.dropUntil) return;
        const end = this.targets.end(tp);
        let pushed: PushedFetch | undefined;
        try {
          pushed = this.wakeUps.wantsPush(name) ? pushFrom(tp, held.from, end - held.from, this.fetch) : undefined;
        } catch {
          // Records went meanwhile (retention, a purge): the task fetches as always.
          pushed = undefined;
        }
        this.targets.background(this.send(tp, end, name, pushed, false));
      },
      Math.max(0, at - this.now()),
    );
    this.timers.set(name, timer);
  }

  /** A wake-up held for `name` is void: it is woken now anyway. */
  private voidHeld(name: string, now: number): void {
    const timer = this.timers.get(name);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(name);
    this.linger.wokeNow(name, now);
  }

  private async send(tp: TopicPartition, end: number, name: string, pushed: PushedFetch | undefined, echo: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (hearsByAnswering(name)) {
          const mark = this.wakeUps.sending();
          const reads = await this.targets.wakeListener(name, tp);
          // A promise to read after this wake-up covers the appends made since it was sent too.
          this.wakeUps.heard(name, reads === true && this.wakeUps.promised(name, mark) ? this.targets.end(tp) : end);
          return this.targets.heard();
        }
        this.wakeUps.answered(name, await this.targets.wakeTask(name, pushed, echo, { tp: { topic: tp.topic, partition: tp.partition }, end }));
        return;
      } catch (error) {
        const delay = wakeRetryDelay(attempt);
        if (delay === undefined) throw error;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}
