/**
 * Ported from Kafka Streams' KStreamKStreamJoinTest (inputs, expected results and their timestamps
 * as Kafka states them; Kafka's comments listing the window stores' contents are left out). A
 * result carries the later of the two records' timestamps. Not ported: the tests of store
 * suppliers, logging configuration and repartition topic names (Kafka's configuration surface),
 * and shouldThrottleEmitNonJoinedOuterRecordsEvenWhenClockDrift (Edge Streams does not throttle
 * the emission of non-joined records; Kafka's TopologyTestDriver disables it too).
 */
import { describe, expect, it } from "vitest";
import { JoinWindows, StreamsBuilder, TopologyTestDriver } from "../../../src/streams";
import { build, droppedRecordsTotal, INTEGER, joinedStreams, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const expectedKeys = [0, 1, 2, 3];

/** Two streams of Integer keys and String values joined with TOSTRING_JOINER into a captured processor. */
function setUp(kind: "join" | "leftJoin" | "outerJoin", windows: JoinWindows) {
  return joinedStreams(kind, windows, STRING);
}

describe("KStreamKStreamJoinTest", () => {
  it("shouldLogAndMeterOnSkippedRecordsWithNullValueWithBuiltInMetricsVersionLatest", () => {
    const builder = new StreamsBuilder();
    const left = builder.stream("left", { key: STRING, value: INTEGER });
    const right = builder.stream("right", { key: STRING, value: INTEGER });
    left.join(right, (a, b) => a + b, JoinWindows.ofTimeDifferenceWithNoGrace(100), { key: STRING, value: INTEGER, otherValue: INTEGER });
    const driver = new TopologyTestDriver(build(builder, "left", "right"));
    new TestInputTopic(driver, "left", STRING, INTEGER).pipeInput("A", null);
    // Kafka logs "Skipping record due to null key or value" and counts it as dropped.
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldJoinWithDslStoreSuppliersIfNoStoreSupplied", () => {
    // Kafka's runJoin, which its store-supplier tests share.
    const builder = new StreamsBuilder();
    const left = builder.stream("left", { key: STRING, value: INTEGER });
    const right = builder.stream("right", { key: STRING, value: INTEGER });
    const processor = new MockApiProcessorSupplier<string, number>();
    left
      .join(right, (a, b) => a + b, JoinWindows.ofTimeDifferenceWithNoGrace(100), { key: STRING, value: INTEGER, otherValue: INTEGER })
      .process(processor.supplier);
    const driver = new TopologyTestDriver(build(builder, "left", "right"));
    const inputTopicLeft = new TestInputTopic(driver, "left", STRING, INTEGER, 0, 0);
    const inputTopicRight = new TestInputTopic(driver, "right", STRING, INTEGER, 0, 0);
    inputTopicLeft.pipeInput("A", 1, 1);
    inputTopicLeft.pipeInput("B", 1, 2);
    inputTopicRight.pipeInput("A", 1, 1);
    inputTopicRight.pipeInput("B", 2, 2);
    processor.checkAndClearProcessResult(kvt("A", 2, 1), kvt("B", 3, 2));
  });

  it("testJoin", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp("join", JoinWindows.ofTimeDifferenceWithNoGrace(100));
    // push two items to the primary stream; the other window is empty
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult();

    // push two items to the other stream; this should produce two items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, "a" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 0), kvt(1, "A1+a1", 0));

    // push all four items to the primary stream; this should produce two items
    for (const expectedKey of expectedKeys) {
      inputTopic1.pipeInput(expectedKey, "B" + expectedKey);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+a0", 0), kvt(1, "B1+a1", 0));

    // push all items to the other stream; this should produce six items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "A0+b0", 0),
      kvt(0, "B0+b0", 0),
      kvt(1, "A1+b1", 0),
      kvt(1, "B1+b1", 0),
      kvt(2, "B2+b2", 0),
      kvt(3, "B3+b3", 0),
    );

    // push all four items to the primary stream; this should produce six items
    for (const expectedKey of expectedKeys) {
      inputTopic1.pipeInput(expectedKey, "C" + expectedKey);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "C0+a0", 0),
      kvt(0, "C0+b0", 0),
      kvt(1, "C1+a1", 0),
      kvt(1, "C1+b1", 0),
      kvt(2, "C2+b2", 0),
      kvt(3, "C3+b3", 0),
    );

    // push two items to the other stream; this should produce six items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, "c" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "A0+c0", 0),
      kvt(0, "B0+c0", 0),
      kvt(0, "C0+c0", 0),
      kvt(1, "A1+c1", 0),
      kvt(1, "B1+c1", 0),
      kvt(1, "C1+c1", 0),
    );
  });

  it("testOuterJoin", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp("outerJoin", JoinWindows.ofTimeDifferenceAndGrace(100, 24 * 60 * 60 * 1000));
    // push two items to the primary stream; the other window is empty; this should not produce items yet
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult();

    // push two items to the other stream; this should produce two items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, "a" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 0), kvt(1, "A1+a1", 0));

    // push all four items to the primary stream; this should produce two items
    for (const expectedKey of expectedKeys) {
      inputTopic1.pipeInput(expectedKey, "B" + expectedKey);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+a0", 0), kvt(1, "B1+a1", 0));

    // push all items to the other stream; this should produce six items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "A0+b0", 0),
      kvt(0, "B0+b0", 0),
      kvt(1, "A1+b1", 0),
      kvt(1, "B1+b1", 0),
      kvt(2, "B2+b2", 0),
      kvt(3, "B3+b3", 0),
    );

    // push all four items to the primary stream; this should produce six items
    for (const expectedKey of expectedKeys) {
      inputTopic1.pipeInput(expectedKey, "C" + expectedKey);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "C0+a0", 0),
      kvt(0, "C0+b0", 0),
      kvt(1, "C1+a1", 0),
      kvt(1, "C1+b1", 0),
      kvt(2, "C2+b2", 0),
      kvt(3, "C3+b3", 0),
    );

    // push two items to the other stream; this should produce six items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, "c" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "A0+c0", 0),
      kvt(0, "B0+c0", 0),
      kvt(0, "C0+c0", 0),
      kvt(1, "A1+c1", 0),
      kvt(1, "B1+c1", 0),
      kvt(1, "C1+c1", 0),
    );
  });

  it("testWindowing", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp("join", JoinWindows.ofTimeDifferenceWithNoGrace(100));
    let time = 0;

    // push two items to the primary stream; the other window is empty; this should produce no items
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time);
    }
    processor.checkAndClearProcessResult();

    // push two items to the other stream; this should produce two items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, "a" + expectedKeys[i]!, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 0), kvt(1, "A1+a1", 0));

    // push four items to the primary stream with larger and increasing timestamp; this should produce no items
    time = 1000;
    for (let i = 0; i < expectedKeys.length; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "B" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult();

    // push four items to the other stream with fixed larger timestamp; this should produce four items
    time += 100;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+b0", 1100), kvt(1, "B1+b1", 1100), kvt(2, "B2+b2", 1100), kvt(3, "B3+b3", 1100));

    // push four items to the other stream with incremented timestamp; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "c" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(1, "B1+c1", 1101), kvt(2, "B2+c2", 1101), kvt(3, "B3+c3", 1101));

    // push four items to the other stream with incremented timestamp; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "d" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(2, "B2+d2", 1102), kvt(3, "B3+d3", 1102));

    // push four items to the other stream with incremented timestamp; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "e" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(3, "B3+e3", 1103));

    // push four items to the other stream with incremented timestamp; this should produce no items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "f" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();

    // push four items to the other stream with timestamp before the window bound; this should produce no items
    time = 1000 - 100 - 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "g" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();

    // push four items to the other stream with with incremented timestamp; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "h" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+h0", 1000));

    // push four items to the other stream with with incremented timestamp; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "i" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+i0", 1000), kvt(1, "B1+i1", 1001));

    // push four items to the other stream with with incremented timestamp; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "j" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+j0", 1000), kvt(1, "B1+j1", 1001), kvt(2, "B2+j2", 1002));

    // push four items to the other stream with with incremented timestamp; this should produce four items
  });

  it("testAsymmetricWindowingAfter", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp("join", JoinWindows.ofTimeDifferenceWithNoGrace(0).after(100));
    let time = 1000;

    // push four items with increasing timestamps to the primary stream; the other window is empty; this should produce no items
    for (let i = 0; i < expectedKeys.length; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult();

    // push four items smaller timestamps (out of window) to the secondary stream; this should produce no items
    time = 1000 - 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "a" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();

    // push four items with increased timestamps to the secondary stream; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+b0", 1000));

    // push four items with increased timestamps to the secondary stream; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "c" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+c0", 1001), kvt(1, "A1+c1", 1001));

    // push four items with increased timestamps to the secondary stream; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "d" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+d0", 1002), kvt(1, "A1+d1", 1002), kvt(2, "A2+d2", 1002));

    // push four items with increased timestamps to the secondary stream; this should produce four items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "e" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+e0", 1003), kvt(1, "A1+e1", 1003), kvt(2, "A2+e2", 1003), kvt(3, "A3+e3", 1003));

    // push four items with larger timestamps to the secondary stream; this should produce four items
    time = 1000 + 100;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "f" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+f0", 1100), kvt(1, "A1+f1", 1100), kvt(2, "A2+f2", 1100), kvt(3, "A3+f3", 1100));

    // push four items with increased timestamps to the secondary stream; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "g" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(1, "A1+g1", 1101), kvt(2, "A2+g2", 1101), kvt(3, "A3+g3", 1101));

    // push four items with increased timestamps to the secondary stream; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "h" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(2, "A2+h2", 1102), kvt(3, "A3+h3", 1102));

    // push four items with increased timestamps to the secondary stream; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "i" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(3, "A3+i3", 1103));

    // push four items with increased timestamps (no out of window) to the secondary stream; this should produce no items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "j" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();
  });

  it("testAsymmetricWindowingBefore", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp("join", JoinWindows.ofTimeDifferenceWithNoGrace(0).before(100));
    let time = 1000;

    // push four items with increasing timestamps to the primary stream; the other window is empty; this should produce no items
    for (let i = 0; i < expectedKeys.length; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult();

    // push four items with smaller timestamps (before the window) to the other stream; this should produce no items
    time = 1000 - 100 - 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "a" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();

    // push four items with increased timestamp to the other stream; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+b0", 1000));

    // push four items with increased timestamp to the other stream; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "c" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+c0", 1000), kvt(1, "A1+c1", 1001));

    // push four items with increased timestamp to the other stream; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "d" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+d0", 1000), kvt(1, "A1+d1", 1001), kvt(2, "A2+d2", 1002));

    // push four items with increased timestamp to the other stream; this should produce four items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "e" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+e0", 1000), kvt(1, "A1+e1", 1001), kvt(2, "A2+e2", 1002), kvt(3, "A3+e3", 1003));

    // push four items with larger timestamp to the other stream; this should produce four items
    time = 1000;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "f" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+f0", 1000), kvt(1, "A1+f1", 1001), kvt(2, "A2+f2", 1002), kvt(3, "A3+f3", 1003));

    // push four items with increase timestamp to the other stream; this should produce three items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "g" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(1, "A1+g1", 1001), kvt(2, "A2+g2", 1002), kvt(3, "A3+g3", 1003));

    // push four items with increase timestamp to the other stream; this should produce two items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "h" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(2, "A2+h2", 1002), kvt(3, "A3+h3", 1003));

    // push four items with increase timestamp to the other stream; this should produce one item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "i" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(3, "A3+i3", 1003));

    // push four items with increase timestamp (no out of window) to the other stream; this should produce no items
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "j" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();
  });
});
