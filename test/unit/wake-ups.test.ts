/**
 * WakeUps (src/log/wake-ups.ts): a partition skips waking a subscriber that said it looks at its
 * input by a given time anyway, until WAKE_MARGIN_MS before that time; then, and for subscribers
 * that rely on wake-ups, every append wakes.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CoordinatorNotice, COORDINATOR_RETRY_MS } from "../../src/log/partition/coordinator-notice";
import { PartitionWakes } from "../../src/log/partition-wakes";
import type { PushedFetch, WakeTold } from "../../src/log/pushed-fetches";
import { LINGER_MIN_RECORDS_PER_S, RATE_WINDOW_MS, WAKE_LINGER_MS, WakeLinger } from "../../src/log/wake-linger";
import { WAKE_MARGIN_MS, WakeUps, wakeRetryDelay } from "../../src/log/wake-ups";
import { restoreWorkerName, subscriptionHubName } from "../../src/names";

describe("WakeUps", () => {
  it("wakes a subscriber it has not heard from, and one that relies on wake-ups", () => {
    const wakeUps = new WakeUps();
    expect(wakeUps.needed("t@a", 1_000)).toBe(true);
    wakeUps.answered("t@a", null);
    expect(wakeUps.needed("t@a", 1_000)).toBe(true);
  });

  it("skips a subscriber that looks by a later time anyway, until the margin before it", () => {
    const wakeUps = new WakeUps();
    wakeUps.answered("t@a", 1_100);
    expect(wakeUps.needed("t@a", 1_000)).toBe(false);
    expect(wakeUps.needed("t@a", 1_100 - WAKE_MARGIN_MS - 1)).toBe(false);
    // Within the margin: woken again, and from then on until it answers otherwise.
    expect(wakeUps.needed("t@a", 1_100 - WAKE_MARGIN_MS)).toBe(true);
    expect(wakeUps.needed("t@a", 1_000)).toBe(true);
    // Others are not affected.
    wakeUps.answered("t@a", 5_000);
    expect(wakeUps.needed("u@a", 1_000)).toBe(true);
    expect(wakeUps.needed("t@a", 1_000)).toBe(false);
  });

  it("forgets what a subscriber said once it relies on wake-ups again", () => {
    const wakeUps = new WakeUps();
    wakeUps.answered("t@a", 5_000);
    wakeUps.answered("t@a", null);
    expect(wakeUps.needed("t@a", 1_000)).toBe(true);
  });

  it("pushes the next fetch only to subscribers that did not say they are under load", () => {
    const wakeUps = new WakeUps();
    expect(wakeUps.wantsPush("t@a")).toBe(true);
    wakeUps.answered("t@a", 1_100);
    expect(wakeUps.wantsPush("t@a")).toBe(false);
    // Woken again near its time, it is still under load until it answers otherwise.
    expect(wakeUps.needed("t@a", 1_100)).toBe(true);
    expect(wakeUps.wantsPush("t@a")).toBe(false);
    wakeUps.answered("t@a", null);
    expect(wakeUps.wantsPush("t@a")).toBe(true);
    expect(wakeUps.wantsPush("u@a")).toBe(true);
  });
});

describe("wakeRetryDelay", () => {
  it("tries a failed wake-up twice more, after 100 ms and 1 s, then gives up", () => {
    expect([0, 1, 2].map(wakeRetryDelay)).toEqual([100, 1_000, undefined]);
  });
});

describe("CoordinatorNotice (src/log/partition/coordinator-notice.ts)", () => {
  const kvOf = (map: Map<string, unknown>) => ({
    get: <T>(key: string) => map.get(key) as T | undefined,
    put: <T>(key: string, value: T) => void map.set(key, value),
    delete: (key: string) => map.delete(key),
  });

  it("the first append to task input no task listens to tells the coordinator, once it heard never again", () => {
    const map = new Map<string, unknown>();
    const notice = new CoordinatorNotice(kvOf(map));
    expect(notice.mustHear(true, false)).toBe(true);
    expect(notice.mustHear(false, false)).toBe(false);
    expect(notice.mustHear(true, true)).toBe(false);
    notice.owe();
    expect(notice.owed).toBe(true);
    // The debt is durable: a restarted partition (a new notice on the same storage) still owes it.
    expect(new CoordinatorNotice(kvOf(map)).owed).toBe(true);
    notice.told(1_000);
    expect(notice.owed).toBe(false);
    expect(notice.mustHear(true, false)).toBe(false);
    expect(new CoordinatorNotice(kvOf(map)).mustHear(true, false)).toBe(false);
  });

  it("retries a call that did not get through COORDINATOR_RETRY_MS later", () => {
    expect(new CoordinatorNotice(kvOf(new Map())).retryAt(1_000)).toBe(1_000 + COORDINATOR_RETRY_MS);
  });
});

describe("WakeLinger (src/log/wake-linger.ts): a task's wake-ups held under a steady stream of appends", () => {
  /** Appends of `records` every `every` ms from `start` while `until`, each decided for "t@a": the decisions. */
  function stream(linger: WakeLinger, { start, every, records, until }: { start: number; every: number; records: number; until: number }) {
    const decisions: { at: number; from: number; decision: ReturnType<WakeLinger["decide"]> }[] = [];
    let from = 0;
    for (let now = start; now < until; now += every) {
      // A held wake-up goes at its time (the partition's timer).
      const held = linger.heldFor("t@a");
      if (held && held.at <= now) linger.release("t@a", held.at);
      linger.appended(now, records);
      decisions.push({ at: now, from, decision: linger.decide("t@a", now, from) });
      from += records;
    }
    return decisions;
  }

  it("wakes at once for every append while the partition takes fewer records per second than the threshold", () => {
    const linger = new WakeLinger();
    // One order every 5 ms: 200 records/s, a closed loop of single orders (the e2e bench).
    const decisions = stream(linger, { start: 1_000, every: 5, records: 1, until: 2_000 });
    expect(decisions.every((d) => d.decision.kind === "now")).toBe(true);
  });

  it("holds the wake-ups of a steady stream until a linger after the last, and gathers the appends meanwhile", () => {
    const linger = new WakeLinger();
    // 25 records every 20 ms: 1,250 records/s (a partition of the cost-load bench).
    const decisions = stream(linger, { start: 1_000, every: 20, records: 25, until: 3_000 });
    const woken = decisions.filter((d) => d.decision.kind === "now").length;
    const holds = decisions.filter((d) => d.decision.kind === "hold");
    // The first appends wake at once (until the rate window shows the stream); then one wake-up per linger.
    expect(woken).toBeLessThanOrEqual(RATE_WINDOW_MS / 20 + 2);
    expect(holds.length).toBeGreaterThan(0);
    const gathered = woken + holds.length;
    expect(gathered).toBeLessThanOrEqual(Math.ceil(2_000 / WAKE_LINGER_MS) + RATE_WINDOW_MS / 20 + 2);
    expect(gathered).toBeLessThan(decisions.length * 0.75);
    // A held wake-up starts at the first append it holds, and goes a linger after the wake-up before.
    for (const hold of holds) {
      if (hold.decision.kind !== "hold") continue;
      expect(hold.decision.at).toBeGreaterThan(hold.at);
      expect(hold.decision.at - hold.at).toBeLessThanOrEqual(WAKE_LINGER_MS);
    }
    // No record waits longer than the linger for its wake-up.
    let heldSince: number | undefined;
    for (const d of decisions) {
      if (d.decision.kind === "hold") heldSince = d.at;
      if (d.decision.kind === "held") expect(heldSince).toBeDefined();
    }
  });

  it("wakes at once again once the stream stops, and a wake-up made anyway voids the one held", () => {
    const linger = new WakeLinger();
    stream(linger, { start: 1_000, every: 20, records: 25, until: 1_500 });
    const held = linger.heldFor("t@a");
    if (held) expect(linger.release("t@a", held.at)?.at).toBe(held.at);
    // Quiet for longer than the rate window: a lone append is woken for at once.
    expect(linger.decide("t@a", 1_500 + RATE_WINDOW_MS + WAKE_LINGER_MS, 999).kind).toBe("now");
    // Streaming again, one held; an echo wakes it at once and the held one is void.
    const again = stream(linger, { start: 5_000, every: 10, records: LINGER_MIN_RECORDS_PER_S / 50, until: 5_300 });
    expect(again.some((d) => d.decision.kind === "hold")).toBe(true);
    if (!linger.heldFor("t@a")) linger.decide("t@a", 5_301, 12_345);
    expect(linger.heldFor("t@a")).toBeDefined();
    linger.wokeNow("t@a", 5_302);
    expect(linger.heldFor("t@a")).toBeUndefined();
    expect(linger.release("t@a", 5_340)).toBeUndefined();
  });
});

describe("PartitionWakes (src/log/partition-wakes.ts): what a held wake-up carries", () => {
  /** A partition of `end` records, with every wake-up noted. */
  function partition() {
    const log = { end: 0 };
    const woken: { name: string; pushed?: PushedFetch; told: WakeTold; at: number }[] = [];
    const wakes = new PartitionWakes({
      wakeTask: async (name, pushed, _echo, told) => {
        woken.push({ name, ...(pushed ? { pushed } : {}), told, at: Date.now() });
        return null;
      },
      wakeListener: async () => {},
      fetchEncoded: (_tp, offset, bounds) => ({ batches: [], nextOffset: Math.min(offset + bounds.maxRecords, log.end), earliest: 0, latest: log.end }),
      end: () => log.end,
      heard: () => {},
      background: () => {},
    });
    const append = (count: number) => {
      const appended = { baseOffset: log.end, count, duplicate: false };
      log.end += count;
      wakes.wake(TP, log.end, ["t@a"], appended);
    };
    return { wakes, woken, append, log };
  }
  const TP = { topic: "orders", partition: 0 };

  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("wakes a lone append at once, with its records and the end", () => {
    const { woken, append } = partition();
    append(1);
    expect(woken).toHaveLength(1);
    expect(woken[0]!.pushed?.from).toBe(0);
    expect(woken[0]!.told).toEqual({ tp: TP, end: 1 });
  });

  it("under a steady stream, sends one wake-up per linger carrying every record appended since the first it held", async () => {
    const { woken, append, log } = partition();
    for (let i = 0; i < 100; i++) {
      append(25);
      await vi.advanceTimersByTimeAsync(20);
    }
    await vi.advanceTimersByTimeAsync(WAKE_LINGER_MS);
    // Fewer wake-ups than appends, none later than a linger after its first record.
    expect(woken.length).toBeLessThan(70);
    // Every record is covered by a push that starts where the one before ended: a reader at its position uses each.
    let position = 0;
    for (const w of woken) {
      expect(w.pushed?.from).toBe(position);
      position = w.pushed!.fetch.nextOffset;
      expect(w.told.end).toBe(position);
    }
    expect(position).toBe(log.end);
  });

  it("under a steady stream, holds a task's wake-ups but wakes a subscription hub at once for every append (a push must not wait a linger)", async () => {
    const log = { end: 0 };
    const tasks: number[] = [];
    const hubs: number[] = [];
    const hub = subscriptionHubName({ topic: "edge-streams-totals-changelog", partition: 0 });
    const wakes = new PartitionWakes({
      wakeTask: async () => {
        tasks.push(log.end);
        return null;
      },
      wakeListener: async () => {
        hubs.push(log.end);
      },
      fetchEncoded: (_tp, offset, bounds) => ({ batches: [], nextOffset: Math.min(offset + bounds.maxRecords, log.end), earliest: 0, latest: log.end }),
      end: () => log.end,
      heard: () => {},
      background: () => {},
    });
    for (let i = 0; i < 50; i++) {
      const appended = { baseOffset: log.end, count: 25, duplicate: false };
      log.end += 25;
      wakes.wake(TP, log.end, ["t@a", hub], appended);
      await vi.advanceTimersByTimeAsync(10);
    }
    expect(wakes.linger.streaming(Date.now())).toBe(true);
    // The task's wake-ups were gathered; the hub heard of each append as it was made.
    expect(tasks.length).toBeLessThan(25);
    expect(hubs).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 25));
    expect(wakes.linger.heldFor(hub)).toBeUndefined();
  });

  it("an echo wakes at once and voids the wake-up held", async () => {
    const { wakes, woken, append, log } = partition();
    for (let i = 0; i < 20; i++) {
      append(25);
      await vi.advanceTimersByTimeAsync(20);
    }
    append(25);
    expect(wakes.linger.heldFor("t@a")).toBeDefined();
    const before = woken.length;
    wakes.wake(TP, log.end, ["t@a"], undefined, true);
    expect(woken).toHaveLength(before + 1);
    expect(woken.at(-1)!.pushed).toBeUndefined();
    expect(woken.at(-1)!.told.end).toBe(log.end);
    await vi.advanceTimersByTimeAsync(WAKE_LINGER_MS * 2);
    expect(woken).toHaveLength(before + 1);
  });
});

describe("PartitionWakes: a restore worker that promised to read is not woken again until it fetched", () => {
  const TP = { topic: "edge-streams-totals-changelog", partition: 0 };
  const worker = restoreWorkerName("a");

  /** A changelog partition whose restore worker answers every wake-up with `promise`; the heard ends noted. */
  function changelog(promise: boolean) {
    const log = { end: 0 };
    const woken: number[] = [];
    const answers: (() => void)[] = [];
    const wakes = new PartitionWakes({
      wakeTask: async () => null,
      wakeListener: async () => {
        woken.push(log.end);
        // The answer comes when the test lets it (a wake-up in flight), or at once.
        await new Promise<void>((resolve) => answers.push(resolve));
        return promise;
      },
      fetchEncoded: () => ({ batches: [], nextOffset: log.end, earliest: 0, latest: log.end }),
      end: () => log.end,
      heard: () => {},
      background: () => {},
    });
    const append = () => {
      const appended = { baseOffset: log.end, count: 1, duplicate: false };
      log.end += 1;
      wakes.wake(TP, log.end, [worker], appended);
    };
    const answer = async () => {
      for (const resolve of answers.splice(0)) resolve();
      // The answers' continuations run (microtasks only: no timer is involved).
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    const unheard = () => wakes.wakeUps.unheard([worker], log.end);
    return { wakes, woken, append, answer, unheard };
  }

  it("skips the appends after a promise, counts them heard, and wakes again after the worker's fetch", async () => {
    const { wakes, woken, append, answer, unheard } = changelog(true);
    append();
    await answer();
    expect(woken).toEqual([1]);
    for (let i = 0; i < 5; i++) append();
    // Five appends, no wake-up: the round it promised reads them; none is left for the echo.
    expect(woken).toEqual([1]);
    expect(unheard()).toEqual([]);
    wakes.readBy(worker);
    append();
    expect(woken).toEqual([1, 7]);
  });

  it("wakes every append while a wake-up is in flight, and a fetch made meanwhile voids the promise", async () => {
    const { wakes, woken, append, answer } = changelog(true);
    append();
    append();
    expect(woken).toEqual([1, 2]);
    // The worker's round fetched before the answers came back: the promise may predate the fetch.
    wakes.readBy(worker);
    await answer();
    append();
    expect(woken).toEqual([1, 2, 3]);
  });

  it("wakes every append of a listener that makes no promise (a hub, a stopping worker)", async () => {
    const { woken, append, answer, unheard } = changelog(false);
    for (let i = 0; i < 3; i++) {
      append();
      await answer();
    }
    expect(woken).toEqual([1, 2, 3]);
    expect(unheard()).toEqual([]);
  });

  it("an echo wakes it whatever it promised, and a new subscription forgets the promise", async () => {
    const { wakes, woken, append, answer } = changelog(true);
    append();
    await answer();
    append();
    expect(woken).toEqual([1]);
    wakes.wake(TP, 2, [worker], undefined, true);
    expect(woken).toEqual([1, 2]);
    await answer();
    wakes.subscribed(worker);
    append();
    expect(woken).toEqual([1, 2, 3]);
  });
});
