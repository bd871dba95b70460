import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TestDriver } from "../platform/testing/test-driver";
import { call } from "./support/api";
import { keyOn } from "./support/keys";
import { application } from "./support/orders-app";
import { EventReader } from "./support/sse";
import { recovered } from "./support/recovered";
import { injectFault, STORM_FAULTS } from "./support/storm";

const driver = new TestDriver(env, application);
const PARTITION = 1;
const TASK = `0_${PARTITION}`;
const ROUNDS = 12;
/** The storm's orders (issue #34's 1,000), spread over its rounds, posted BATCH per request. */
const ORDERS = 1_000;
const BATCH = 100;

/** The subscriber: its stream, the counts it saw, and its last id. */
class Subscriber {
  private stream: EventReader | undefined;
  private lastId: string | undefined;
  readonly counts: number[] = [];
  reconnects = 0;

  constructor(private readonly key: string) {}

  /** Subscribes before any order: the first event is the absent key. */
  async start(): Promise<void> {
    const response = await call(`/stores/totals/keys/${this.key}/watch`);
    expect(response.status).toBe(200);
    this.stream = new EventReader(response);
    const first = await this.stream.next();
    expect(JSON.parse(first.data)).toEqual({ key: this.key, value: null });
    this.lastId = first.id;
  }

  /** Reads until the count reaches `n`, reconnecting with the last id when the stream ends. */
  async readUpTo(n: number): Promise<void> {
    while ((this.counts.at(-1) ?? 0) < n) {
      if (!this.stream) {
        const response = await call(`/stores/totals/keys/${this.key}/watch`, { headers: this.lastId ? { "Last-Event-ID": this.lastId } : {} });
        // A snapshot the task cannot give yet (it restarts, restores): the client tries again.
        if (response.status === 503) continue;
        expect(response.status).toBe(200);
        this.stream = new EventReader(response);
      }
      let event: Awaited<ReturnType<EventReader["next"]>>;
      try {
        event = await this.stream.next(20_000);
      } catch (error) {
        if (!String(error).includes("the stream ended")) throw error;
        await this.leave();
        continue;
      }
      if (event.event === "error") {
        await this.leave();
        continue;
      }
      expect(event.event).toBe("message");
      const value = (JSON.parse(event.data) as { value: { count: number; sum: number } }).value;
      this.counts.push(value.count);
      this.lastId = event.id;
    }
  }

  /** The client goes away (it comes back with its last id). */
  async leave(): Promise<void> {
    await this.stream?.close();
    if (this.stream) this.reconnects++;
    this.stream = undefined;
  }
}

async function orders(key: string, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += BATCH) {
    const records = Array.from({ length: Math.min(BATCH, count - sent) }, () => ({ key, value: { amount: 1 } }));
    expect((await call("/topics/orders/records", { body: { records } })).status).toBe(200);
  }
}

describe("a subscriber through a storm", () => {
  it("sees count 1, 2, …, 1,000 once each across migrations, corruptions, crashes and a restart of the runtime", { timeout: 240_000 }, async () => {
    const key = keyOn(PARTITION, "storm");
    await driver.instances();
    await driver.runUntilQuiet();
    const subscriber = new Subscriber(key);
    await subscriber.start();

    let sent = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const want = Math.round((ORDERS * (round + 1)) / ROUNDS);
      const half = Math.floor((want - sent) / 2);
      await orders(key, half);
      // The five faults of a storm (connected meanwhile: a stream whose reads fail ends, and the
      // subscriber comes back), then the subscriber leaves and reconnects with its last id.
      const fault = STORM_FAULTS[round % 6];
      if (fault) await injectFault(driver, TASK, fault);
      else await subscriber.leave();
      await orders(key, want - sent - half);
      sent = want;
      await recovered(driver, TASK);
      await subscriber.readUpTo(want);
    }
    expect(subscriber.counts).toEqual(Array.from({ length: ORDERS }, (_, i) => i + 1));
    // One more change after all that comes next: nothing was repeated at the end.
    await orders(key, 1);
    await driver.runUntilQuiet();
    await subscriber.readUpTo(ORDERS + 1);
    expect(subscriber.counts.at(-1)).toBe(ORDERS + 1);
    expect(subscriber.counts.length).toBe(ORDERS + 1);
    expect(subscriber.reconnects).toBeGreaterThanOrEqual(2);
    await subscriber.leave();
  });
});
