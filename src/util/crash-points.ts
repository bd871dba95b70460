/**
 * Planned crashes at named points inside multi-step operations, for tests and the fault routes:
 * a crash planned at a point kills the object (as a dead process would: no clean-up, storage
 * kept) the next time the operation reaches it. Every lifecycle operation names the awaits it is
 * made of, so tests can prove that it converges after a crash at each of them.
 */
export class CrashPoints<Point extends string> {
  private planned: Point | undefined;

  constructor(private readonly die: (reason: string) => void) {}

  /** The next time `at` is reached, the object dies there (undefined withdraws the plan). In memory only. */
  plan(at: Point | undefined): void {
    this.planned = at;
  }

  get pending(): Point | undefined {
    return this.planned;
  }

  /** Dies here when a crash is planned here. */
  reach(point: Point): void {
    if (this.planned !== point) return;
    this.planned = undefined;
    this.die(`injected crash at ${point}`);
  }
}
