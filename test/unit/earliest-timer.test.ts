/**
 * EarliestTimer: an in-memory timer armed at the earliest time asked for; asking for a later time
 * changes nothing, a sooner one moves it, and it fires once.
 */
import { describe, expect, it } from "vitest";
import { EarliestTimer } from "../../src/util/timer";
import { until } from "../support/until";

describe("EarliestTimer", () => {
  it("fires once, at the earliest time asked for", async () => {
    const fired: number[] = [];
    const timer = new EarliestTimer(() => fired.push(Date.now()));
    const start = Date.now();
    timer.armBy(start + 150);
    timer.armBy(start + 50); // sooner: moves it
    timer.armBy(start + 30_000); // later: changes nothing
    expect(timer.armedAt).toBe(start + 50);
    await until(async () => fired.length > 0, 5_000, "the timer to fire", 10);
    expect(fired[0]!).toBeGreaterThanOrEqual(start + 50);
    expect(timer.armedAt).toBeUndefined();
    // The time it was moved from passes without a second firing (a later timer marks when).
    let passed = false;
    new EarliestTimer(() => (passed = true)).armBy(start + 400);
    await until(async () => passed, 5_000, "the time it was moved from to pass", 10);
    expect(fired).toHaveLength(1);
  });

  it("never fires before its time, even when the platform's timer runs a millisecond early", async () => {
    // What the clock says at each look: when armed, when the platform's timer first runs (1 ms
    // early), then at the time itself.
    const readings = [1_000, 1_009];
    const clock = () => readings.shift() ?? 1_010;
    const fired: number[] = [];
    const timer = new EarliestTimer(() => fired.push(clock()), clock);
    timer.armBy(1_010);
    await until(async () => fired.length > 0, 5_000, "the timer to fire", 10);
    expect(fired).toEqual([1_010]);
    expect(readings).toEqual([]);
  });

  it("is armed again after it fired, and fires at once for a time already past", async () => {
    let fired = 0;
    const timer = new EarliestTimer(() => fired++);
    timer.armBy(Date.now() - 1_000);
    await until(async () => fired === 1, 5_000, "the first firing", 10);
    timer.armBy(Date.now());
    await until(async () => fired === 2, 5_000, "the second firing", 10);
  });
});
