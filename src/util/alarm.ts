/**
 * A Durable Object's one alarm, armed at the earliest time anyone asked for. The time armed is
 * kept in memory (read once from storage), so asking again for a later time — every append and
 * every wake-up does — costs no storage operation, and so no wait for one to be durable. The
 * object's `alarm()` handler must call `fired` first: from then on nothing is armed until asked.
 */
export class EarliestAlarm {
  /** The time armed; null when none; undefined until read from storage. */
  private armed: number | null | undefined;

  constructor(private readonly storage: Pick<DurableObjectStorage, "getAlarm" | "setAlarm" | "deleteAlarm">) {}

  /** Arms the alarm at `at`, unless it is armed sooner. */
  async armBy(at: number): Promise<void> {
    if (this.armed === undefined) this.armed = await this.storage.getAlarm();
    if (this.armed !== null && this.armed <= at) return;
    await this.set(at);
  }

  /** Arms the alarm at `at`, whatever was armed. */
  async set(at: number): Promise<void> {
    // Noted before the write, so that callers meanwhile do not arm it again.
    this.armed = at;
    try {
      await this.storage.setAlarm(at);
    } catch (error) {
      this.armed = undefined;
      throw error;
    }
  }

  async delete(): Promise<void> {
    this.armed = null;
    try {
      await this.storage.deleteAlarm();
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
