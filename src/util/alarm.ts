/**
 * The alarm calls of a Durable Object's storage, stated here so that the core needs no Workers
 * types (tsconfig.core.json): `ctx.storage` satisfies it as it is.
 */
export interface AlarmStorage {
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
}

/**
 * A Durable Object's one alarm, armed at the earliest time anyone asked for. The time armed is
 * kept in memory (read once from storage), so asking again for a later time — every append and
 * every wake-up does — costs no storage operation, and so no wait for one to be durable. The
 * object's `alarm()` handler must call `fired` first: from then on nothing is armed until asked.
 */
export class EarliestAlarm {
  /** The time armed; null when none; undefined until read from storage. */
  private armed: number | null | undefined;

  constructor(private readonly storage: AlarmStorage) {}

  /**
   * Arms the alarm at `at`, unless it is armed sooner — or no more than `slack` later, for work
   * that may come that much late (rather than a storage write to move it sooner).
   */
  async armBy(at: number, slack = 0): Promise<void> {
    if (this.armed === undefined) this.armed = await this.storage.getAlarm();
    if (this.armed !== null && this.armed <= at + slack) return;
    await this.set(at);
  }

  /** Arms the alarm at `at`, whatever was armed. */
  set(at: number): Promise<void> {
    return this.write(at, () => this.storage.setAlarm(at));
  }

  /**
   * Arms the alarm at exactly `at`, or none (undefined): for an object that knows everything it
   * still needs, taking back an alarm that is no longer wanted (it would only wake the object).
   * No write when it is so already. Only while the time armed is known (never read from storage
   * in between, where another caller could arm it meanwhile): false when it did nothing.
   */
  rearm(at: number | undefined): Promise<void> | false {
    if (this.armed === undefined) return false;
    if (this.armed === (at ?? null)) return Promise.resolve();
    return at === undefined ? this.delete() : this.set(at);
  }

  /** The time armed (null: none), as far as known (undefined: not read from storage yet). */
  get armedAt(): number | null | undefined {
    return this.armed;
  }

  /** Whether an alarm is armed, as far as known (undefined: not read from storage yet). */
  get isArmed(): boolean | undefined {
    return this.armed === undefined ? undefined : this.armed !== null;
  }

  delete(): Promise<void> {
    return this.write(null, () => this.storage.deleteAlarm());
  }

  /** Notes `armed` before the write (so that callers meanwhile do not arm it again); a failed write leaves it unknown. */
  private async write(armed: number | null, operation: () => Promise<void>): Promise<void> {
    this.armed = armed;
    try {
      await operation();
    } catch (error) {
      this.armed = undefined;
      throw error;
    }
  }

  /** The alarm is running: it is no longer armed (one set while it runs stays). */
  fired(): void {
    this.armed = null;
  }
}
