/**
 * WakeRuns (src/task/wake-runs.ts): a wake-up starts a run, arms the alarm, or is noted for the
 * run in progress, which takes it with another step or by arming the alarm as the last run ends.
 */
import { describe, expect, it } from "vitest";
import { WakeRuns } from "../../src/task/wake-runs";

describe("WakeRuns", () => {
  it("starts a run for an instance that would look now, arms the alarm for one that looks later", () => {
    const runs = new WakeRuns();
    expect(runs.wake(1_000, 1_000)).toBe("run");
    expect(runs.wake(900, 1_000)).toBe("run");
    expect(runs.wake(1_100, 1_000)).toBe("arm");
  });

  it("notes a wake-up during a run: a step takes it, once", () => {
    const runs = new WakeRuns();
    runs.started();
    expect(runs.takeWoken()).toBe(false);
    expect(runs.wake(1_000, 1_000)).toBe("noted");
    expect(runs.wake(5_000, 1_000)).toBe("noted");
    expect(runs.takeWoken()).toBe(true);
    expect(runs.takeWoken()).toBe(false);
    expect(runs.ended()).toBe(false); // taken: nothing to arm
    expect(runs.wake(1_000, 1_000)).toBe("run");
  });

  it("arms the alarm as the last run in progress ends, for a wake-up no step took", () => {
    const runs = new WakeRuns();
    runs.started();
    runs.started(); // an alarm's run and a wake-up's overlap
    expect(runs.wake(1_000, 1_000)).toBe("noted");
    expect(runs.ended()).toBe(false); // the other run is still in progress and may take it
    expect(runs.ended()).toBe(true);
    expect(runs.wake(2_000, 1_000)).toBe("arm");
  });
});
