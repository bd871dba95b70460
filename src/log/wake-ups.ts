/**
 * Which subscribers of a partition an append must wake. A task under load answers a wake-up with
 * the time its alarm looks at its input anyway (its next commit, one commit interval after the
 * last began); until shortly before then another wake-up would only cost it an RPC, so the
 * partition skips it. A restore worker answers a wake-up with a promise to read the partition
 * after it (its round reads every changelog that grew to its end); until a fetch of its comes in
 * after that wake-up was sent, another wake-up would tell it nothing new, so appends skip it (at
 * 256 partitions that was one request per changelog append, 0.25 per order; issue #33). Kept in
 * memory: after a restart every subscriber is woken again.
 */

/**
 * A wake-up is skipped only this long before the subscriber's own look: an append that close to
 * it (or a clock a little apart between the two objects) is still woken for, never left to the
 * partition's echo alarm.
 */
export const WAKE_MARGIN_MS = 20;

/** A failed wake-up is tried again this many times, after these delays (ms); then given up (it only delays work: the echo alarm wakes again). */
export const WAKE_RETRY_MS: readonly number[] = [100, 1_000];

/** The delay before try `attempt + 1` of a failed wake-up (`attempt` from 0); undefined: give up. */
export function wakeRetryDelay(attempt: number): number | undefined {
  return WAKE_RETRY_MS[attempt];
}

export class WakeUps {
  /** Per subscriber, when it said it looks at its input anyway. */
  private readonly lookingAt = new Map<string, number>();
  /** Subscribers whose last answer said they are under load (until they answer otherwise). */
  private readonly busy = new Set<string>();
  /** Per subscriber that hears by answering (a restore worker, see src/log/echoes.ts): the log end its latest answer covered. */
  private readonly heardTo = new Map<string, number>();
  /** The order of wake-ups sent and fetches made here (a counter, not a clock: two objects' clocks differ). */
  private events = 0;
  /** Per listener, the event of its latest fetch. */
  private readonly lastRead = new Map<string, number>();
  /** Listeners that promised to read after a wake-up and have not fetched since it was sent. */
  private readonly toRead = new Set<string>();

  /** Whether an append at `now` must wake `name`. */
  needed(name: string, now: number): boolean {
    const at = this.lookingAt.get(name);
    if (at === undefined) return true;
    if (now + WAKE_MARGIN_MS < at) return false;
    this.lookingAt.delete(name);
    return true;
  }

  /** `name` answered a wake-up: it looks at its input by `at` anyway, or (null) it relies on wake-ups. */
  answered(name: string, at: number | null): void {
    if (at === null) {
      this.lookingAt.delete(name);
      this.busy.delete(name);
    } else {
      this.lookingAt.set(name, at);
      this.busy.add(name);
    }
  }

  /** `name`, which keeps a wake-up durably before it answers, answered one sent when the log ended at `end`. */
  heard(name: string, end: number): void {
    if ((this.heardTo.get(name) ?? -1) < end) this.heardTo.set(name, end);
  }

  /** Of `names`, those not known to have heard of the log up to `end` (after a restart: all). */
  unheard(names: readonly string[], end: number): string[] {
    return names.filter((name) => (this.heardTo.get(name) ?? -1) < end);
  }

  /** A wake-up goes to a listener now: its mark, for `promised`. */
  sending(): number {
    return ++this.events;
  }

  /**
   * `name` answered the wake-up sent at `mark` promising to read the partition after it. True when
   * it holds: no fetch of `name` came in since the wake-up was sent (one that did may have come
   * before the listener took the wake-up in; the next append wakes it again instead).
   */
  promised(name: string, mark: number): boolean {
    if ((this.lastRead.get(name) ?? 0) > mark) return false;
    this.toRead.add(name);
    return true;
  }

  /** `name` fetched from the partition: the next append wakes it again. */
  read(name: string): void {
    this.lastRead.set(name, ++this.events);
    this.toRead.delete(name);
  }

  /** Whether `name` reads the partition anyway (it promised, and has not fetched since): an append need not wake it. */
  readsAnyway(name: string): boolean {
    return this.toRead.has(name);
  }

  /** `name` is woken by the next append, whatever it said before (it subscribed again). */
  wakeNext(name: string): void {
    this.answered(name, null);
    this.toRead.delete(name);
  }

  /** `name` no longer subscribes: what it said is forgotten. */
  forget(name: string): void {
    this.wakeNext(name);
    this.heardTo.delete(name);
  }

  /**
   * Whether a wake-up of `name` should carry the fetch it makes next (src/log/pushed-fetches.ts):
   * not for a subscriber under load, which fetches a backlog at its next commit and would drop it.
   */
  wantsPush(name: string): boolean {
    return !this.busy.has(name);
  }
}
