/**
 * Ported from Kafka Streams' SuppressScenarioTest: `suppress(untilTimeLimit(...))` with unbounded,
 * record-limited and byte-limited buffers after a grouped table's counts, the final results
 * (`suppress(untilWindowCloses(unbounded()))`) after windowed counts with caching disabled, and
 * suppression before a `groupBy` and on either side of a table-table join (read through the
 * suppressed view). The raw updates carry each window's latest record time, and the suppressed
 * results carry their result's own timestamp. Byte limits count Kafka's estimate of an entry (key,
 * values, timestamp, offset, partition, the record's topic name, headers); the application id is
 * Kafka's TopologyTestDriver default, so repartition topic names are as long as Kafka's. Not
 * ported: `shouldWorkWithCogroupedTimeWindows` and friends beyond `shouldWorkWithCogrouped` (they
 * only build the topology, as that one does).
 */
import { describe, expect, it } from "vitest";
import {
  BufferConfig,
  Materialized,
  SessionWindows,
  SlidingWindows,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  TopologyTestDriver,
  type KTable,
  type Windowed,
} from "../../../src/streams";
import { build, INTEGER, kvt, STRING, TestInputTopic, TestOutputTopic, windowedString, type KeyValueTimestamp, compareStrings } from "./support";

const { maxBytes, maxRecords, unbounded } = BufferConfig;
const { untilTimeLimit } = Suppressed;
/** Kafka's `Long.MAX_VALUE` milliseconds: never by time. */
const FOREVER = Number.MAX_SAFE_INTEGER;
/** Kafka's TopologyTestDriver names the application this when the test config does not. */
const KAFKA_TTD_APPLICATION_ID = "dummy-topology-test-driver-app-id";

function driverOf(builder: StreamsBuilder, ...topics: string[]) {
  return new TopologyTestDriver(builder.build({ applicationId: KAFKA_TTD_APPLICATION_ID, topics: Object.fromEntries(topics.map((t) => [t, 1])) }));
}

/** A table's value counts (`groupBy((k, v) -> (v, k)).count()`), suppressed to `output-suppressed` and raw to `output-raw`. */
function valueCountsScenario(suppressed: Suppressed) {
  const builder = new StreamsBuilder();
  const valueCounts = builder
    .table("input", { key: STRING, value: STRING })
    .groupBy((k, v) => ({ key: v, value: k }), { key: STRING, value: STRING })
    .count(Materialized.with(STRING, INTEGER));
  valueCounts.suppress(suppressed).toStream().to("output-suppressed", { key: STRING, value: INTEGER });
  valueCounts.toStream().to("output-raw", { key: STRING, value: INTEGER });
  const driver = driverOf(builder, "input", "output-raw", "output-suppressed");
  const raw = new TestOutputTopic(driver, "output-raw", STRING, INTEGER);
  const suppressedOut = new TestOutputTopic(driver, "output-suppressed", STRING, INTEGER);
  return {
    inputTopic: new TestInputTopic(driver, "input", STRING, STRING),
    raw: () => raw.readRecordsToList(),
    suppressed: () => suppressedOut.readRecordsToList(),
  };
}

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
  it("shouldImmediatelyEmitEventsWithZeroEmitAfter", () => {
    const { inputTopic, raw, suppressed } = valueCountsScenario(untilTimeLimit(0, unbounded()));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v2", 1);
    inputTopic.pipeInput("k2", "v1", 2);
    const all = [kvt("v1", 1, 0), kvt("v1", 0, 1), kvt("v2", 1, 1), kvt("v1", 1, 2)];
    expect(raw()).toEqual(all);
    expect(suppressed()).toEqual(all);
    inputTopic.pipeInput("x", "x", 3);
    expect(raw()).toEqual([kvt("x", 1, 3)]);
    expect(suppressed()).toEqual([kvt("x", 1, 3)]);
    inputTopic.pipeInput("x", "y", 4);
    expect(raw()).toEqual([kvt("x", 0, 4), kvt("y", 1, 4)]);
    expect(suppressed()).toEqual([kvt("x", 0, 4), kvt("y", 1, 4)]);
  });

  it("shouldSuppressIntermediateEventsWithTimeLimit", () => {
    const { inputTopic, raw, suppressed } = valueCountsScenario(untilTimeLimit(2, unbounded()));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v2", 1);
    inputTopic.pipeInput("k2", "v1", 2);
    expect(raw()).toEqual([kvt("v1", 1, 0), kvt("v1", 0, 1), kvt("v2", 1, 1), kvt("v1", 1, 2)]);
    expect(suppressed()).toEqual([kvt("v1", 1, 2)]);
    // inserting a dummy "tick" record just to advance stream time
    inputTopic.pipeInput("tick", "tick", 3);
    expect(raw()).toEqual([kvt("tick", 1, 3)]);
    // the stream time is now 3, so it's time to emit this record
    expect(suppressed()).toEqual([kvt("v2", 1, 1)]);
    inputTopic.pipeInput("tick", "tock", 4);
    expect(raw()).toEqual([kvt("tick", 0, 4), kvt("tock", 1, 4)]);
    // tick is still buffered, since it was first inserted at time 3, and it is only time 4 right now.
    expect(suppressed()).toEqual([]);
  });

  it("shouldSuppressIntermediateEventsWithRecordLimit", () => {
    const { inputTopic, raw, suppressed } = valueCountsScenario(untilTimeLimit(FOREVER, maxRecords(1).emitEarlyWhenFull()));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v2", 1);
    inputTopic.pipeInput("k2", "v1", 2);
    expect(raw()).toEqual([kvt("v1", 1, 0), kvt("v1", 0, 1), kvt("v2", 1, 1), kvt("v1", 1, 2)]);
    // consecutive updates to v1 get suppressed into only the latter; the last update won't be
    // evicted until another key comes along.
    expect(suppressed()).toEqual([kvt("v1", 0, 1), kvt("v2", 1, 1)]);
    inputTopic.pipeInput("x", "x", 3);
    expect(raw()).toEqual([kvt("x", 1, 3)]);
    // now we see that last update to v1, but we won't see the update to x until it gets evicted
    expect(suppressed()).toEqual([kvt("v1", 1, 2)]);
  });

  it("shouldSuppressIntermediateEventsWithBytesLimit", () => {
    // this is a bit brittle, but I happen to know that the entries are a little over 100 bytes in size.
    const { inputTopic, raw, suppressed } = valueCountsScenario(untilTimeLimit(FOREVER, maxBytes(200).emitEarlyWhenFull()));
    inputTopic.pipeInput("k1", "v1", 0);
    inputTopic.pipeInput("k1", "v2", 1);
    inputTopic.pipeInput("k2", "v1", 2);
    expect(raw()).toEqual([kvt("v1", 1, 0), kvt("v1", 0, 1), kvt("v2", 1, 1), kvt("v1", 1, 2)]);
    expect(suppressed()).toEqual([kvt("v1", 0, 1), kvt("v2", 1, 1)]);
    inputTopic.pipeInput("x", "x", 3);
    expect(raw()).toEqual([kvt("x", 1, 3)]);
    expect(suppressed()).toEqual([kvt("v1", 1, 2)]);
  });

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
    expect(raw()).toEqual([
      kvt("[k1@0/2]", 1, 0),
      kvt("[k1@0/2]", 2, 1),
      kvt("[k1@2/4]", 1, 2),
      kvt("[k1@0/2]", 3, 1),
      kvt("[k1@0/2]", 4, 1),
      kvt("[k1@4/6]", 1, 5),
    ]);
    expect(suppressed()).toEqual([kvt("[k1@0/2]", 4, 1), kvt("[k1@2/4]", 1, 2)]);
  });

  it("shouldSupportFinalResultsForTimeWindowsWithLargeJump", () => {
    const { inputTopic, raw, suppressed } = scenario((b) =>
      grouped(b)
        .windowedBy(TimeWindows.ofSizeAndGrace(2, 2))
        .count(Materialized.as("counts", { key: STRING })),
    );
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
    const { inputTopic, raw, suppressed } = scenario((b) =>
      grouped(b)
        .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(5, 15))
        .count(Materialized.as("counts", { key: STRING })),
    );
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
    const { inputTopic, raw, suppressed } = scenario((b) =>
      grouped(b).windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).count(Materialized.as("counts")),
    );
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

  it("shouldWorkBeforeGroupBy", () => {
    const builder = new StreamsBuilder();
    builder
      .table("topic", { key: STRING, value: STRING })
      .suppress(untilTimeLimit(10, unbounded()))
      .groupBy((k, v) => ({ key: k, value: v }), { key: STRING, value: STRING })
      .count()
      .toStream()
      .to("output", { key: STRING, value: INTEGER });
    const driver = driverOf(builder, "topic", "output");
    const inputTopic = new TestInputTopic(driver, "topic", STRING, STRING);
    inputTopic.pipeInput("A", "a", 0);
    inputTopic.pipeInput("tick", "tick", 10);
    expect(new TestOutputTopic(driver, "output", STRING, INTEGER).readRecordsToList()).toEqual([kvt("A", 1, 0)]);
  });

  it("shouldWorkBeforeJoinRight", () => {
    const builder = new StreamsBuilder();
    const left = builder.table("left", { key: STRING, value: STRING });
    const right = builder.table("right", { key: STRING, value: STRING }).suppress(untilTimeLimit(10, unbounded()));
    left
      .outerJoin(right, (l, r) => `(${l},${r})`)
      .toStream()
      .to("output", { key: STRING, value: STRING });
    const driver = driverOf(builder, "left", "right", "output");
    const inputTopicRight = new TestInputTopic(driver, "right", STRING, STRING);
    const inputTopicLeft = new TestInputTopic(driver, "left", STRING, STRING);
    const output = new TestOutputTopic(driver, "output", STRING, STRING);
    inputTopicRight.pipeInput("B", "1", 0);
    inputTopicRight.pipeInput("A", "1", 0);
    // buffered, no output
    expect(output.readRecordsToList()).toEqual([]);
    inputTopicRight.pipeInput("tick", "tick", 10);
    // flush buffer
    expect(output.readRecordsToList()).toEqual([kvt("A", "(null,1)", 0), kvt("B", "(null,1)", 0)]);
    inputTopicRight.pipeInput("A", "2", 11);
    // buffered, no output
    expect(output.readRecordsToList()).toEqual([]);
    inputTopicLeft.pipeInput("A", "a", 12);
    // should join with previously emitted right side
    expect(output.readRecordsToList()).toEqual([kvt("A", "(a,1)", 12)]);
    inputTopicLeft.pipeInput("B", "b", 12);
    // should view through to the parent KTable, since B is no longer buffered
    expect(output.readRecordsToList()).toEqual([kvt("B", "(b,1)", 12)]);
    inputTopicLeft.pipeInput("A", "b", 13);
    // should join with previously emitted right side
    expect(output.readRecordsToList()).toEqual([kvt("A", "(b,1)", 13)]);
    inputTopicRight.pipeInput("tick", "tick1", 21);
    expect(output.readRecordsToList()).toEqual([
      kvt("tick", "(null,tick1)", 21), // just a testing artifact
      kvt("A", "(b,2)", 13),
    ]);
  });

  it("shouldWorkBeforeJoinLeft", () => {
    const builder = new StreamsBuilder();
    const left = builder.table("left", { key: STRING, value: STRING }).suppress(untilTimeLimit(10, unbounded()));
    const right = builder.table("right", { key: STRING, value: STRING });
    left
      .outerJoin(right, (l, r) => `(${l},${r})`)
      .toStream()
      .to("output", { key: STRING, value: STRING });
    const driver = driverOf(builder, "left", "right", "output");
    const inputTopicRight = new TestInputTopic(driver, "right", STRING, STRING);
    const inputTopicLeft = new TestInputTopic(driver, "left", STRING, STRING);
    const output = new TestOutputTopic(driver, "output", STRING, STRING);
    inputTopicLeft.pipeInput("B", "1", 0);
    inputTopicLeft.pipeInput("A", "1", 0);
    // buffered, no output
    expect(output.readRecordsToList()).toEqual([]);
    inputTopicLeft.pipeInput("tick", "tick", 10);
    // flush buffer
    expect(output.readRecordsToList()).toEqual([kvt("A", "(1,null)", 0), kvt("B", "(1,null)", 0)]);
    inputTopicLeft.pipeInput("A", "2", 11);
    // buffered, no output
    expect(output.readRecordsToList()).toEqual([]);
    inputTopicRight.pipeInput("A", "a", 12);
    // should join with previously emitted left side
    expect(output.readRecordsToList()).toEqual([kvt("A", "(1,a)", 12)]);
    inputTopicRight.pipeInput("B", "b", 12);
    // should view through to the parent KTable, since B is no longer buffered
    expect(output.readRecordsToList()).toEqual([kvt("B", "(1,b)", 12)]);
    inputTopicRight.pipeInput("A", "b", 13);
    // should join with previously emitted left side
    expect(output.readRecordsToList()).toEqual([kvt("A", "(1,b)", 13)]);
    inputTopicLeft.pipeInput("tick", "tick1", 21);
    expect(output.readRecordsToList()).toEqual([
      kvt("tick", "(tick1,null)", 21), // just a testing artifact
      kvt("A", "(2,b)", 13),
    ]);
  });

  it("shouldWorkWithCogrouped", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", { key: STRING, value: STRING }).groupByKey({ key: STRING, value: STRING });
    const stream2 = builder.stream("two", { key: STRING, value: STRING }).groupByKey({ key: STRING, value: STRING });
    const cogrouped = stream1
      .cogroup((_key, value, aggregate: string) => aggregate + value)
      .cogroup(stream2, (_key, value, aggregate) => aggregate + value)
      .windowedBy(TimeWindows.ofSizeWithNoGrace(15 * 60_000))
      .aggregate(() => "", Materialized.as("store"))
      .suppress(Suppressed.untilWindowCloses(unbounded()))
      .toStream();
    expect(() => driverOf(builder, "one", "two")).not.toThrow();
    expect(cogrouped).toBeDefined();
  });
});
