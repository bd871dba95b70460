/**
 * Which input partitions a step need not fetch: those the instance knows end at its position, with
 * no wake-up since telling of more. A partition wakes its task reader after every append (at once,
 * or held a little under a steady stream: src/log/wake-linger.ts), and every wake-up tells how far
 * the log had grown (its push, or its end), so a step that only commits — the in-memory timer's,
 * once the commit interval is up — leaves out a fetch that could only find nothing: one request
 * fewer per commit. Knowledge is by offsets, so wake-ups overtaking each other or a fetch on its
 * way change nothing. Not while the instance said it is under load (the partition then skips
 * wake-ups until shortly before its next commit, src/log/wake-ups.ts): only a fetch begun once that
 * window is over counts. A wake-up that tells nothing (an older partition) makes every partition
 * be fetched again. Pure and in memory; a restarted instance fetches.
 *
 * Only an earlier "nothing": a wake-up lost on the way leaves the records for the next one, or for
 * the partition's echo alarm, which wakes a reader whose group offset stays behind the end — as a
 * lost wake-up always did. Exactly once does not depend on it: what is processed is what a fetch
 * returns from the committed (or reached) position.
 */

/** What a fetch or a taken push saw of one partition. */
interface Seen {
  /** The log's end then. */
  readonly end: number;
  /** A fetch from the log (not a push) began at or after the last skip window's end. */
  readonly afterSkips: boolean;
}

export class QuietInputs {
  /** Per input partition (by position key): what the last fetch or taken push saw. */
  private readonly seen = new Map<string, Seen>();
  /** Per input partition: the greatest end a wake-up told of. */
  private readonly told = new Map<string, number>();
  /** Bumped by a wake-up that told nothing: fetches begun before it say nothing. */
  private generation = 0;
  /** Until when the partitions may skip wake-ups (the instance answered that it looks by then). */
  private skipsUntil = -Infinity;

  /** A wake-up told that partition `key` ended at `end` (at least). */
  toldEnd(key: string, end: number): void {
    if ((this.told.get(key) ?? -1) < end) this.told.set(key, end);
  }

  /** A wake-up that told nothing of where its partition ends: every partition is fetched again. */
  toldNothing(): void {
    this.generation++;
    this.seen.clear();
  }

  /** The instance answered a wake-up that it looks by `at`: the partitions skip wake-ups until about then. */
  answeredLooking(at: number): void {
    if (at > this.skipsUntil) this.skipsUntil = at;
    this.seen.clear();
  }

  /** A fetch from the log is about to begin at `now`: pass what this returns to `fetched`. */
  beginFetch(now: number): { readonly generation: number; readonly afterSkips: boolean } {
    return { generation: this.generation, afterSkips: now >= this.skipsUntil };
  }

  /** A fetch begun as `begun` found partition `key` ending at `end`. */
  fetched(key: string, end: number, begun: { readonly generation: number; readonly afterSkips: boolean }): void {
    if (begun.generation === this.generation) this.seen.set(key, { end, afterSkips: begun.afterSkips });
  }

  /** A push was taken for partition `key`: it reached the end, `end`, when the partition made it. */
  pushTaken(key: string, end: number): void {
    const was = this.seen.get(key);
    // A push says nothing of skip windows: it keeps what the last fetch from the log established
    // (with no window ever answered for, there is none to be after).
    this.seen.set(key, { end, afterSkips: was?.afterSkips ?? this.skipsUntil === -Infinity });
  }

  /** Whether a fetch of `key` from `from` can be left out: it would find nothing. */
  quiet(key: string, from: number, now: number): boolean {
    if (now < this.skipsUntil) return false;
    const seen = this.seen.get(key);
    return seen?.afterSkips === true && seen.end === from && (this.told.get(key) ?? -1) <= from;
  }

  /** Positions moved (a reset, a wipe): nothing seen counts any more. */
  forget(): void {
    this.generation++;
    this.seen.clear();
  }
}
