/**
 * Planned crashes at named points inside multi-step operations, for tests and the fault routes:
 * a crash planned at a point kills the object (as a dead process would: no clean-up, storage
 * kept) the next time the operation reaches it. Every lifecycle operation names the awaits it is
 * made of, so tests can prove that it converges after a crash at each of them.
 */
export class CrashPoints<Point extends string> {
  private planned: Point | undefined;

  /**
   * `die` kills the object; `settle`, awaited first by `reachAfterWrites`, waits until the writes
   * made so far are durable (a Durable Object's writes commit when its output gate opens, so dying
   * synchronously after a write would lose it: the crash would come before the write, not after).
   */
  constructor(
    private readonly die: (reason: string) => void,
    private readonly settle: () => Promise<void> = async () => {},
  ) {}

  /** The next time `at` is reached, the object dies there (undefined withdraws the plan). In memory only. */
  plan(at: Point | undefined): void {
    this.planned = at;
  }

  get pending(): Point | undefined {
    return this.planned;
  }

  /** Dies here when a crash is planned here: writes not yet durable are lost, as in a real crash mid-transaction. */
  reach(point: Point): void {
    if (this.planned !== point) return;
    this.planned = undefined;
    this.die(`injected crash at ${point}`);
  }

  /** Dies here when a crash is planned here, once the writes made so far are durable: a crash at the next await. */
  async reachAfterWrites(point: Point): Promise<void> {
    if (this.planned !== point) return;
    await this.settle();
    this.reach(point);
  }
}
