/**
 * Ported from Kafka Streams' JoinWindowsTest (org.apache.kafka.streams.kstream): asymmetric join
 * windows with `before` and `after` (either may be negative, as long as the window does not end
 * before it starts), grace kept by both, and the bounds. Equality is structural here (`toEqual`),
 * where Kafka checks `equals` and `hashCode`. Not ported: the deprecated API (`of`, `grace`,
 * `until` and its 24-hour default grace), which Edge Streams does not have.
 */
import { describe, expect, it } from "vitest";
import { JoinWindows, TopologyError } from "../../../src/streams";

const ANY_SIZE = 123;
const ANY_OTHER_SIZE = 456; // should be larger than anySize
const ANY_GRACE = 1024;
const ofSeconds = (s: number) => s * 1000;

describe("JoinWindowsTest", () => {
  it("validWindows", () => {
    expect(
      () =>
        JoinWindows.ofTimeDifferenceWithNoGrace(ANY_OTHER_SIZE) // [ -anyOtherSize ; anyOtherSize ]
          .before(ANY_SIZE) // [ -anySize ; anyOtherSize ]
          .before(0) // [ 0 ; anyOtherSize ]
          .before(-ANY_SIZE) // [ anySize ; anyOtherSize ]
          .before(-ANY_OTHER_SIZE), // [ anyOtherSize ; anyOtherSize ]
    ).not.toThrow();
    expect(
      () =>
        JoinWindows.ofTimeDifferenceWithNoGrace(ANY_OTHER_SIZE) // [ -anyOtherSize ; anyOtherSize ]
          .after(ANY_SIZE) // [ -anyOtherSize ; anySize ]
          .after(0) // [ -anyOtherSize ; 0 ]
          .after(-ANY_SIZE) // [ -anyOtherSize ; -anySize ]
          .after(-ANY_OTHER_SIZE), // [ -anyOtherSize ; -anyOtherSize ]
    ).not.toThrow();
    const window = JoinWindows.ofTimeDifferenceWithNoGrace(ANY_OTHER_SIZE).before(-ANY_SIZE);
    expect([window.beforeMs, window.afterMs]).toEqual([-ANY_SIZE, ANY_OTHER_SIZE]);
  });

  it("beforeShouldNotModifyGrace", () => {
    const joinWindows = JoinWindows.ofTimeDifferenceAndGrace(ANY_SIZE, ANY_OTHER_SIZE).before(ofSeconds(ANY_SIZE));
    expect(joinWindows.graceMs).toBe(ANY_OTHER_SIZE);
  });

  it("afterShouldNotModifyGrace", () => {
    const joinWindows = JoinWindows.ofTimeDifferenceAndGrace(ANY_SIZE, ANY_OTHER_SIZE).after(ofSeconds(ANY_SIZE));
    expect(joinWindows.graceMs).toBe(ANY_OTHER_SIZE);
  });

  it("timeDifferenceMustNotBeNegative", () => {
    expect(() => JoinWindows.ofTimeDifferenceWithNoGrace(-1)).toThrow(TopologyError);
    expect(() => JoinWindows.ofTimeDifferenceAndGrace(-1, ANY_GRACE)).toThrow(TopologyError);
  });

  it("endTimeShouldNotBeBeforeStart", () => {
    const windowSpec = JoinWindows.ofTimeDifferenceWithNoGrace(ANY_SIZE);
    expect(() => windowSpec.after(-ANY_SIZE - 1)).toThrow(TopologyError);
  });

  it("startTimeShouldNotBeAfterEnd", () => {
    const windowSpec = JoinWindows.ofTimeDifferenceWithNoGrace(ANY_SIZE);
    expect(() => windowSpec.before(-ANY_SIZE - 1)).toThrow(TopologyError);
  });

  it("gracePeriodShouldEnforceBoundaries", () => {
    expect(() => JoinWindows.ofTimeDifferenceAndGrace(3, 0)).not.toThrow();
    expect(() => JoinWindows.ofTimeDifferenceAndGrace(3, -1)).toThrow(TopologyError);
  });

  it("noGraceAPIShouldNotSetGracePeriod", () => {
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3).graceMs).toBe(0);
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(ANY_SIZE).graceMs).toBe(0);
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(ANY_OTHER_SIZE).graceMs).toBe(0);
  });

  it("withGraceAPIShouldSetGracePeriod", () => {
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, ANY_GRACE).graceMs).toBe(ANY_GRACE);
    expect(JoinWindows.ofTimeDifferenceAndGrace(ANY_SIZE, ANY_GRACE).graceMs).toBe(ANY_GRACE);
    expect(JoinWindows.ofTimeDifferenceAndGrace(ANY_OTHER_SIZE, ANY_GRACE).graceMs).toBe(ANY_GRACE);
  });

  it("equalsAndHashcodeShouldBeValidForPositiveCases", () => {
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3)).toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 2)).toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 2));
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3).after(2)).toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3).after(2));
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3).before(2)).toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3).before(2));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 2).after(4)).toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 2).after(4));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 2).before(4)).toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 2).before(4));
  });

  it("equalsAndHashcodeShouldBeValidForNegativeCases", () => {
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(9)).not.toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 9)).not.toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 2));
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3).after(9)).not.toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3).after(2));
    expect(JoinWindows.ofTimeDifferenceWithNoGrace(3).before(9)).not.toEqual(JoinWindows.ofTimeDifferenceWithNoGrace(3).before(2));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 3).before(9).after(2)).not.toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 3).before(1).after(2));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 3).before(1).after(9)).not.toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 3).before(1).after(2));
    expect(JoinWindows.ofTimeDifferenceAndGrace(3, 9).before(1).after(2)).not.toEqual(JoinWindows.ofTimeDifferenceAndGrace(3, 3).before(1).after(2));
  });
});
