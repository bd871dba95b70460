/**
 * WakeUps (src/log/wake-ups.ts): a partition skips waking a subscriber that said it looks at its
 * input by a given time anyway, until WAKE_MARGIN_MS before that time; then, and for subscribers
 * that rely on wake-ups, every append wakes.
 */
import { describe, expect, it } from "vitest";
import { CoordinatorNotice, COORDINATOR_RETRY_MS } from "../../src/log/partition/coordinator-notice";
import { WAKE_MARGIN_MS, WakeUps, wakeRetryDelay } from "../../src/log/wake-ups";

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
