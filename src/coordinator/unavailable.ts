/**
 * The coordinator cannot answer: while the fault route `POST /admin/coordinator/fail` holds, it
 * answers every call with this error, as an object that cannot be reached would fail. Errors lose
 * their class over RPC, so the HTTP layer (503) and the API's fallbacks recognise it by its message.
 */
const MARK = "CoordinatorUnavailable: ";

export class CoordinatorUnavailable extends Error {
  constructor(message: string) {
    super(`${MARK}${message}`);
  }
}

export function isCoordinatorUnavailable(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith(MARK);
}

/** Where an injected outage is kept (the coordinator's settings row): its end, epoch ms, 0 for none. */
export interface OutageSetting {
  failingUntil(): number;
  setFailingUntil(at: number): void;
}

/**
 * An injected outage (`POST /admin/coordinator/fail`): until its end every call fails with
 * `CoordinatorUnavailable` and the alarm does no work, only waits for the end (rebalancing stops).
 * Kept in the settings, so a restart does not end it; read once, then held in memory.
 */
export class InjectedOutage {
  private until: number;

  constructor(private readonly setting: OutageSetting) {
    this.until = setting.failingUntil();
  }

  /** Throws `CoordinatorUnavailable` while the outage lasts at `now`. */
  refuse(now: number): void {
    const left = this.until - now;
    if (left > 0) throw new CoordinatorUnavailable(`the coordinator does not answer (injected failure, ${Math.ceil(left / 1000)} s left)`);
  }

  /** An outage of `ms` from `now` (0 or less ends one); answers its end as asked, `now + max(0, ms)`. */
  start(ms: number, now: number): number {
    const until = now + Math.max(0, ms);
    this.until = ms > 0 ? until : 0;
    this.setting.setFailingUntil(this.until);
    return until;
  }

  /** The outage's end when it lasts at `now` (the alarm waits until then), else undefined. */
  endAfter(now: number): number | undefined {
    return this.until > now ? this.until : undefined;
  }
}
