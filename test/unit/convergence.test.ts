/** When the coordinator's alarm comes back after a round (src/coordinator/convergence.ts): pure pacing; and an injected outage. */
import { describe, expect, it } from "vitest";
import { REBALANCE_CHECK_MS } from "../../src/coordinator/coordinator-context";
import { Convergence } from "../../src/coordinator/convergence";
import { InjectedOutage, isCoordinatorUnavailable } from "../../src/coordinator/unavailable";

/** Only the pacing is exercised: the parts a round would call are never reached. */
const pacing = () => new Convergence(...([undefined, undefined, undefined, undefined] as unknown as ConstructorParameters<typeof Convergence>));

const DONE = { done: true, more: false };
const MORE = { done: false, more: true };
const STUCK = { done: false, more: false };

describe("the coordinator's alarm pacing", () => {
  it("comes back at once while a full chunk leaves more to push", () => {
    expect(pacing().nextAlarmIn(MORE, false, 60_000)).toBe(0);
  });

  it("backs off, doubling per stuck round in a row up to 30 s, and starts over after progress", () => {
    const p = pacing();
    const delays = [1, 2, 3, 4, 5, 6, 7].map(() => p.nextAlarmIn(STUCK, false, 60_000));
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(p.nextAlarmIn(MORE, false, 60_000)).toBe(0);
    expect(p.nextAlarmIn(STUCK, false, 60_000)).toBe(REBALANCE_CHECK_MS);
  });

  it("once done, continues a sweep under way soon, else sleeps until the next sweep is due", () => {
    expect(pacing().nextAlarmIn(DONE, true, 60_000)).toBe(REBALANCE_CHECK_MS);
    expect(pacing().nextAlarmIn(DONE, false, 60_000)).toBe(60_000);
    expect(pacing().nextAlarmIn(DONE, false, -5)).toBe(0);
  });
});

describe("InjectedOutage (src/coordinator/unavailable.ts)", () => {
  const setting = (initial = 0) => {
    let stored = initial;
    return {
      failingUntil: () => stored,
      setFailingUntil: (at: number) => {
        stored = at;
      },
      stored: () => stored,
    };
  };

  it("refuses every call until its end, and has the alarm wait for the end; 0 ends it", () => {
    const kept = setting();
    const outage = new InjectedOutage(kept);
    expect(() => outage.refuse(0)).not.toThrow();
    expect(outage.start(5_000, 1_000)).toBe(6_000);
    expect(kept.stored()).toBe(6_000);
    expect(() => outage.refuse(2_000)).toThrow(/injected failure, 4 s left/);
    expect(isCoordinatorUnavailable(catching(() => outage.refuse(2_000)))).toBe(true);
    expect(outage.endAfter(2_000)).toBe(6_000);
    expect(outage.endAfter(6_000)).toBeUndefined();
    expect(() => outage.refuse(6_000)).not.toThrow();
    outage.start(0, 3_000);
    expect(kept.stored()).toBe(0);
    expect(() => outage.refuse(3_000)).not.toThrow();
  });

  it("outlives a restart: a new coordinator reads the outage from its settings", () => {
    expect(() => new InjectedOutage(setting(10_000)).refuse(9_000)).toThrow(/1 s left/);
  });
});

function catching(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}
