/**
 * Ported from Kafka Streams' SuppressScenarioTest: the final-results tests
 * (`suppress(untilWindowCloses(unbounded()))` after windowed counts with caching disabled). The raw
 * updates carry each window's latest record time, and the suppressed final results carry their
 * result's own timestamp. Not ported: the `untilTimeLimit` and buffer-limit tests, suppression of
 * non-windowed tables and cogrouped streams (Edge Streams' `suppress` supports final results of
 * windowed tables only).
 */
import { describe, expect, it } from "vitest";
import { Materialized, SessionWindows, SlidingWindows, StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver, type KTable, type Windowed } from "../../src/streams";
import { build, INTEGER, kvt, STRING, TestInputTopic, TestOutputTopic, windowedString, type KeyValueTimestamp, compareStrings } from "./support";

/** The counts to `output-raw`, their final results to `output-suppressed`, both keyed by `Windowed#toString`. */
function scenario(valueCounts: (builder: StreamsBuilder) => KTable<Windowed<string>, number, null> | KTable<Windowed<string>, number>) {
  const builder = new StreamsBuilder();
  const counts = valueCounts(builder) as KTable<Windowed<string>, number, null>;
  counts
    .suppress(Suppressed.untilWindowCloses())
    .toStream()
    .map((k, v) => ({ key: windowedString(k), value: v }))
    .to("output-suppressed", { key: STRING, value: INTEGER });
  counts
    .toStream()
    .map((k, v) => ({ key: windowedString(k), value: v }))
    .to("output-raw", { key: STRING, value: INTEGER });
  const driver = new TopologyTestDriver(build(builder, "input", "output-raw", "output-suppressed"));
  return {
    inputTopic: new TestInputTopic(driver, "input", STRING, STRING),
    raw: () => new TestOutputTopic(driver, "output-raw", STRING, INTEGER).readRecordsToList(),
    suppressed: () => new TestOutputTopic(driver, "output-suppressed", STRING, INTEGER).readRecordsToList(),
  };
}

const grouped = (builder: StreamsBuilder) => builder.stream("input", { key: STRING, value: STRING }).groupBy((k) => k, { key: STRING, value: STRING });

describe("SuppressScenarioTest", () => {
  it("shouldSupportFinalResultsForTimeWindows", () => {
    const { inputTopic, raw, suppressed } = scenario((b) => grouped(b).windowedBy(TimeWindows.ofSizeAndGrace(2, 1)).count(Materialized.as("counts")));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 1);
    inputTopic.pipeInput("k1", "v1", 2);
    inputTopic.pipeInput("k1", "v1", 1);
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 5);
    // note this last record gets dropped because it is out of the grace period
    inputTopic.pipeInput("k1", "v1", 0);
    expect(raw()).toEqual([kvt("[k1@0/2]", 1, 0), kvt("[k1@0/2]", 2, 1), kvt("[k1@2/4]", 1, 2), kvt("[k1@0/2]", 3, 1), kvt("[k1@0/2]", 4, 1), kvt("[k1@4/6]", 1, 5)]);
    expect(suppressed()).toEqual([kvt("[k1@0/2]", 4, 1), kvt("[k1@2/4]", 1, 2)]);
  });

  it("shouldSupportFinalResultsForTimeWindowsWithLargeJump", () => {
    const { inputTopic, raw, suppressed } = scenario((b) => grouped(b).windowedBy(TimeWindows.ofSizeAndGrace(2, 2)).count(Materialized.as("counts", { key: STRING })));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 1);
    inputTopic.pipeInput("k1", "v1", 2);
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 3);
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 4);
    // this update should get dropped, since the previous event advanced the stream time and closed the window.
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 30);
    expect(raw()).toEqual([
      kvt("[k1@0/2]", 1, 0),
      kvt("[k1@0/2]", 2, 1),
      kvt("[k1@2/4]", 1, 2),
      kvt("[k1@0/2]", 3, 1),
      kvt("[k1@2/4]", 2, 3),
      kvt("[k1@0/2]", 4, 1),
      kvt("[k1@4/6]", 1, 4),
      kvt("[k1@30/32]", 1, 30),
    ]);
    expect(suppressed()).toEqual([kvt("[k1@0/2]", 4, 1), kvt("[k1@2/4]", 2, 3), kvt("[k1@4/6]", 1, 4)]);
  });

  it("shouldSupportFinalResultsForSlidingWindows", () => {
    const { inputTopic, raw, suppressed } = scenario((b) => grouped(b).windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(5, 15)).count(Materialized.as("counts", { key: STRING })));
    inputTopic.pipeInput("k1", "v1", 10);
    inputTopic.pipeInput("k1", "v1", 11);
    inputTopic.pipeInput("k1", "v1", 10);
    inputTopic.pipeInput("k1", "v1", 13);
    inputTopic.pipeInput("k1", "v1", 10);
    inputTopic.pipeInput("k1", "v1", 24);
    // this update should get dropped, since the previous event advanced the stream time and closed the window.
    inputTopic.pipeInput("k1", "v1", 5);
    inputTopic.pipeInput("k1", "v1", 7);
    // final record to advance stream time and flush windows
    inputTopic.pipeInput("k1", "v1", 90);
    const byKeyThenTime = (records: KeyValueTimestamp<string | null, number | null>[]) =>
      [...records].sort((a, b) => compareStrings(String(a.key), String(b.key)) || a.timestamp - b.timestamp);
    expect(byKeyThenTime(raw())).toEqual([
      // right window for k1@10 created when k1@11 is processed
      kvt("[k1@11/16]", 1, 11),
      // right window for k1@10 updated when k1@13 is processed
      kvt("[k1@11/16]", 2, 13),
      // right window for k1@11 created when k1@13 is processed
      kvt("[k1@12/17]", 1, 13),
      // left window for k1@24 created when k1@24 is processed
      kvt("[k1@19/24]", 1, 24),
      // left window for k1@10 created when k1@10 is processed
      kvt("[k1@5/10]", 1, 10),
      // left window for k1@10 updated when k1@10 is processed
      kvt("[k1@5/10]", 2, 10),
      // left window for k1@10 updated when k1@10 is processed
      kvt("[k1@5/10]", 3, 10),
      // left window for k1@10 updated when k1@5 is processed
      kvt("[k1@5/10]", 4, 10),
      // left window for k1@10 updated when k1@7 is processed
      kvt("[k1@5/10]", 5, 10),
      // left window for k1@11 created when k1@11 is processed
      kvt("[k1@6/11]", 2, 11),
      // left window for k1@11 updated when k1@10 is processed
      kvt("[k1@6/11]", 3, 11),
      // left window for k1@11 updated when k1@10 is processed
      kvt("[k1@6/11]", 4, 11),
      // left window for k1@11 updated when k1@7 is processed
      kvt("[k1@6/11]", 5, 11),
      // left window for k1@13 created when k1@13 is processed
      kvt("[k1@8/13]", 4, 13),
      // left window for k1@13 updated when k1@10 is processed
      kvt("[k1@8/13]", 5, 13),
      // right window for k1@90 created when k1@90 is processed
      kvt("[k1@85/90]", 1, 90),
    ]);
    expect(suppressed()).toEqual([
      kvt("[k1@5/10]", 5, 10),
      kvt("[k1@6/11]", 5, 11),
      kvt("[k1@8/13]", 5, 13),
      kvt("[k1@11/16]", 2, 13),
      kvt("[k1@12/17]", 1, 13),
      kvt("[k1@19/24]", 1, 24),
    ]);
  });

  it("shouldSupportFinalResultsForSessionWindows", () => {
    const { inputTopic, raw, suppressed } = scenario((b) => grouped(b).windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).count(Materialized.as("counts")));
    // first window
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v1", 5);
    // arbitrarily disordered records are admitted, because the *window* is not closed until stream-time > window-end + grace
    inputTopic.pipeInput("k1", "v1", 1);
    // any record in the same partition advances stream time (note the key is different)
    inputTopic.pipeInput("k2", "v1", 11);
    // late event for first window - this should get dropped from all streams, since the first window is now closed.
    inputTopic.pipeInput("k1", "v1", 5);
    // just pushing stream time forward to flush the other events through.
    inputTopic.pipeInput("k1", "v1", 30);
    expect(raw()).toEqual([
      kvt("[k1@0/0]", 1, 0),
      kvt("[k1@0/0]", null, 0),
      kvt("[k1@0/5]", 2, 5),
      kvt("[k1@0/5]", null, 5),
      kvt("[k1@0/5]", 3, 5),
      kvt("[k2@11/11]", 1, 11),
      kvt("[k1@30/30]", 1, 30),
    ]);
    expect(suppressed()).toEqual([kvt("[k1@0/5]", 3, 5), kvt("[k2@11/11]", 1, 11)]);
  });
});
