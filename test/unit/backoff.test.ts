/** The exponential back-off of the objects' alarms (src/util/backoff.ts): pure. */
import { describe, expect, it } from "vitest";
import { backoffDelay } from "../../src/util/backoff";

describe("backoffDelay", () => {
  it("doubles from the initial delay up to the maximum, and stays finite for any number of doublings", () => {
    expect([0, 1, 2, 3].map((n) => backoffDelay(250, 30_000, n))).toEqual([250, 500, 1_000, 2_000]);
    expect(backoffDelay(250, 30_000, 7)).toBe(30_000);
    expect(backoffDelay(1, Number.POSITIVE_INFINITY, 1_000)).toBe(2 ** 16);
  });
});
