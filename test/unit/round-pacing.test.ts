/**
 * RoundPacing (src/restore/round-pacing.ts): when the restore worker's alarm brings the next round.
 */
import { describe, expect, it } from "vitest";
import { MAX_RETRY_MS, RETRY_MS, RoundPacing } from "../../src/restore/round-pacing";

const never = () => {
  throw new Error("asked whether changelogs grew");
};

describe("RoundPacing", () => {
  it("follows a round that applied something and left work at once", () => {
    expect(new RoundPacing(false).next({ more: true, progressed: true }, never)).toBe(0);
  });

  it("backs off, doubling up to MAX_RETRY_MS, while rounds apply nothing though work remains; progress starts it over", () => {
    const pacing = new RoundPacing(false);
    const waits = Array.from({ length: 10 }, () => pacing.next({ more: true, progressed: false }, never));
    expect(waits.slice(0, 4)).toEqual([RETRY_MS, 2 * RETRY_MS, 4 * RETRY_MS, 8 * RETRY_MS]);
    expect(waits.at(-1)).toBe(MAX_RETRY_MS);
    expect(pacing.next({ more: true, progressed: true }, never)).toBe(0);
    expect(pacing.next({ more: true, progressed: false }, never)).toBe(RETRY_MS);
  });

  it("with nothing left, arms nothing on a log that wakes readers", () => {
    expect(new RoundPacing(false).next({ more: false, progressed: false }, never)).toBeUndefined();
  });

  it("on a log that wakes no one, polls caught-up standbys with the back-off while a changelog may have grown", () => {
    const pacing = new RoundPacing(true);
    expect(pacing.next({ more: false, progressed: false }, () => true)).toBe(RETRY_MS);
    expect(pacing.next({ more: false, progressed: false }, () => true)).toBe(2 * RETRY_MS);
    expect(pacing.next({ more: false, progressed: false }, () => false)).toBeUndefined();
  });

  it("feeds standbys at most every update interval: growth heard is read that long after the last round began", () => {
    const pacing = new RoundPacing(false, 1_000);
    // A worker that has run no round (or restarted) reads growth at once.
    expect(pacing.afterGrowth(5_000)).toBe(0);
    pacing.began(10_000);
    expect(pacing.afterGrowth(10_050)).toBe(950);
    expect(pacing.afterGrowth(11_000)).toBe(0);
    expect(pacing.afterGrowth(12_500)).toBe(0);
    // A round that left only growth heard meanwhile is followed at the next update, not at once.
    expect(pacing.next({ more: true, backlog: false, progressed: true }, never, 10_200)).toBe(800);
    // One that left a backlog (a changelog not reached, or behind where it was read) at once.
    expect(pacing.next({ more: true, backlog: true, progressed: true }, never, 10_200)).toBe(0);
    // Without a time, or with the interval 0, as before: at once.
    expect(pacing.next({ more: true, backlog: false, progressed: true }, never)).toBe(0);
    expect(new RoundPacing(false, 0).next({ more: true, backlog: false, progressed: true }, never, 10_200)).toBe(0);
  });
});
