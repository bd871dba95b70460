/**
 * WakeRuns (src/task/wake-runs.ts): a wake-up starts a run, arms the alarm, or is noted for the
 * run in progress, which takes it with another step or by arming the alarm as the last run ends.
 */
import { describe, expect, it } from "vitest";
import { QuietInputs } from "../../src/task/quiet-inputs";
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

describe("QuietInputs (src/task/quiet-inputs.ts): which input partitions a step need not fetch", () => {
  const begun = (quiet: QuietInputs, now = 1_000) => quiet.beginFetch(now);

  it("knows nothing at first: every partition is fetched", () => {
    expect(new QuietInputs().quiet("orders/0", 0, 1_000)).toBe(false);
  });

  it("leaves out a partition a fetch saw ending at the position, until a wake-up tells of more", () => {
    const quiet = new QuietInputs();
    quiet.fetched("orders/0", 25, begun(quiet));
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(true);
    // Not from another position, nor another partition.
    expect(quiet.quiet("orders/0", 20, 1_000)).toBe(false);
    expect(quiet.quiet("orders/1", 25, 1_000)).toBe(false);
    // A wake-up telling of an end at the position changes nothing; one beyond it does.
    quiet.toldEnd("orders/0", 25);
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(true);
    quiet.toldEnd("orders/0", 50);
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
    // A push taken up to that end: quiet again at the new position.
    quiet.pushTaken("orders/0", 50);
    expect(quiet.quiet("orders/0", 50, 1_000)).toBe(true);
  });

  it("does not trust a fetch that began before a wake-up that told nothing (it may have overtaken the fetch)", () => {
    const quiet = new QuietInputs();
    const before = begun(quiet);
    quiet.toldNothing();
    quiet.fetched("orders/0", 25, before);
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
    quiet.fetched("orders/0", 25, begun(quiet));
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(true);
    // A wake-up that tells nothing: every partition is fetched again.
    quiet.toldNothing();
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
  });

  it("after answering under load, trusts only a fetch from the log begun once the partitions stopped skipping wake-ups", () => {
    const quiet = new QuietInputs();
    quiet.fetched("orders/0", 25, begun(quiet));
    quiet.answeredLooking(1_100);
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
    expect(quiet.quiet("orders/0", 25, 1_200)).toBe(false);
    // A fetch begun inside the window, or a push, says nothing of the appends the partition skipped.
    quiet.fetched("orders/0", 40, begun(quiet, 1_050));
    expect(quiet.quiet("orders/0", 40, 1_200)).toBe(false);
    quiet.pushTaken("orders/0", 60);
    expect(quiet.quiet("orders/0", 60, 1_200)).toBe(false);
    quiet.fetched("orders/0", 60, begun(quiet, 1_100));
    expect(quiet.quiet("orders/0", 60, 1_200)).toBe(true);
    // Pushes taken after it keep that trust.
    quiet.pushTaken("orders/0", 85);
    expect(quiet.quiet("orders/0", 85, 1_200)).toBe(true);
  });

  it("forgets what it saw when positions move (a reset, a wipe)", () => {
    const quiet = new QuietInputs();
    const fetch = begun(quiet);
    quiet.fetched("orders/0", 25, begun(quiet));
    quiet.forget();
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
    quiet.fetched("orders/0", 25, fetch);
    expect(quiet.quiet("orders/0", 25, 1_000)).toBe(false);
  });
});
