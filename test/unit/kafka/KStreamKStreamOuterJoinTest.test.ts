/**
 * Ported from Kafka Streams' KStreamKStreamOuterJoinTest (inputs, expected results and their
 * timestamps as Kafka states them; Kafka's comments listing the window stores' contents are left
 * out). A record of either side with no partner is joined with null once stream time passes its
 * window's end + grace, in the order of Kafka's outer-join store (time, right before left, key),
 * or at once when it arrives that late; right values are Kafka's Longs, numbers here. Not ported:
 * the old API test (JoinWindows.of), testOuterJoinWithInMemoryCustomSuppliers (store suppliers)
 * and testShouldJoinWithNonTimestampedStore (store types); runOuterJoin is ported as
 * testOuterJoinWithDefaultSuppliers.
 */
import { describe, expect, it } from "vitest";
import { JoinWindows, StreamsBuilder, TopologyTestDriver, type Header } from "../../../src/streams";
import { build, INTEGER, joinedStreams, kvt, type MockApiProcessorSupplier, STRING, type TestInputTopic, TOSTRING_JOINER } from "./support";

const topic1 = "topic1";
const topic2 = "topic2";
const expectedKeys = [0, 1, 2, 3];

/** Kafka's set-up: Integer keys, String values on the left and Long values on the right, joined with TOSTRING_JOINER into a captured processor. */
function setUp(windows: JoinWindows) {
  return joinedStreams("outerJoin", windows, INTEGER);
}

type Processor = MockApiProcessorSupplier<number, string>;
type Input<V> = TestInputTopic<number, V>;

function testUpperWindowBound(inputTopic1: Input<string>, inputTopic2: Input<number>, processor: Processor) {
  let time: number;
  // push four items with larger and increasing timestamp (out of window) to the other stream; this should produced 2 expired non-joined records
  time = 1000;
  for (let i = 0; i < expectedKeys.length; i++) {
    inputTopic2.pipeInput(expectedKeys[i]!, expectedKeys[i]! + 20, time + i);
  }
  processor.checkAndClearProcessResult(kvt(2, "null+12", 0), kvt(3, "null+13", 0));

  // push four items with larger timestamp to the primary stream; this should produce four full-join items
  time = 1000 + 100;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "B" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "B0+20", 1100), kvt(1, "B1+21", 1100), kvt(2, "B2+22", 1100), kvt(3, "B3+23", 1100));

  // push four items with increased timestamp to the primary stream; this should produce three full-join items (non-joined item is not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "C" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(1, "C1+21", 1101), kvt(2, "C2+22", 1101), kvt(3, "C3+23", 1101));

  // push four items with increased timestamp to the primary stream; this should produce two full-join items (non-joined items are not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "D" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(2, "D2+22", 1102), kvt(3, "D3+23", 1102));

  // push four items with increased timestamp to the primary stream; this should produce one full-join items (three non-joined left-join are not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "E" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(3, "E3+23", 1103));

  // push four items with increased timestamp to the primary stream; this should produce no full-join items (four non-joined left-join are not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "F" + expectedKey, time);
  }
  processor.checkAndClearProcessResult();

  // push a dummy record to produce all left-join non-joined items
  time += 301;
  inputTopic1.pipeInput(0, "dummy", time);
  processor.checkAndClearProcessResult(
    kvt(0, "C0+null", 1101),
    kvt(0, "D0+null", 1102),
    kvt(1, "D1+null", 1102),
    kvt(0, "E0+null", 1103),
    kvt(1, "E1+null", 1103),
    kvt(2, "E2+null", 1103),
    kvt(0, "F0+null", 1104),
    kvt(1, "F1+null", 1104),
    kvt(2, "F2+null", 1104),
    kvt(3, "F3+null", 1104),
  );
}

function testLowerWindowBound(inputTopic1: Input<string>, inputTopic2: Input<number>, processor: Processor) {
  let time: number;
  // push four items with smaller timestamp (before the window) to the primary stream; this should produce four left-join and no full-join items
  time = 1000 - 100 - 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "G" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "G0+null", 899), kvt(1, "G1+null", 899), kvt(2, "G2+null", 899), kvt(3, "G3+null", 899));

  // push four items with increase timestamp to the primary stream; this should produce three left-join and one full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "H" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "H0+20", 1000), kvt(1, "H1+null", 900), kvt(2, "H2+null", 900), kvt(3, "H3+null", 900));

  // push four items with increase timestamp to the primary stream; this should produce two left-join and two full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "I" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "I0+20", 1000), kvt(1, "I1+21", 1001), kvt(2, "I2+null", 901), kvt(3, "I3+null", 901));

  // push four items with increase timestamp to the primary stream; this should produce one left-join and three full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "J" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "J0+20", 1000), kvt(1, "J1+21", 1001), kvt(2, "J2+22", 1002), kvt(3, "J3+null", 902));

  // push four items with increase timestamp to the primary stream; this should produce one left-join and three full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "K" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "K0+20", 1000), kvt(1, "K1+21", 1001), kvt(2, "K2+22", 1002), kvt(3, "K3+23", 1003));

  // push a dummy record to verify there are no expired records to produce
  // dummy window is behind the max. stream time seen (1205 used in testUpperWindowBound)
  inputTopic1.pipeInput(0, "dummy", time + 200);
  processor.checkAndClearProcessResult(kvt(0, "dummy+null", 1103));
}

describe("KStreamKStreamOuterJoinTest", () => {
  it("testOuterJoinDuplicates", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 10));
    // verifies non-joined duplicates are emitted when window has closed
    inputTopic1.pipeInput(0, "A0", 0);
    inputTopic1.pipeInput(0, "A0-0", 0);
    inputTopic2.pipeInput(1, 11, 0);
    inputTopic2.pipeInput(1, 12, 0);
    inputTopic2.pipeInput(1, 10, 111);
    // bump stream-time to trigger outer-join results
    inputTopic2.pipeInput(3, 100, 211);

    processor.checkAndClearProcessResult(kvt(1, "null+11", 0), kvt(1, "null+12", 0), kvt(0, "A0+null", 0), kvt(0, "A0-0+null", 0));

    // verifies joined duplicates are emitted
    inputTopic1.pipeInput(2, "A2", 200);
    inputTopic1.pipeInput(2, "A2-0", 200);
    inputTopic2.pipeInput(2, 13, 201);
    inputTopic2.pipeInput(2, 14, 201);

    processor.checkAndClearProcessResult(kvt(2, "A2+13", 201), kvt(2, "A2-0+13", 201), kvt(2, "A2+14", 201), kvt(2, "A2-0+14", 201));

    // this record should expired non-joined records; only null+10 will be emitted because
    // it did not have a join
    inputTopic2.pipeInput(3, 100, 1500);

    processor.checkAndClearProcessResult(kvt(1, "null+10", 111), kvt(3, "null+100", 211));
  });

  it("testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic1.pipeInput(0, "A0", windowStart + 1);
    inputTopic1.pipeInput(1, "A1", windowStart + 2);
    inputTopic1.pipeInput(0, "A0-0", windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic2.pipeInput(1, 11, windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+11", windowStart + 3));

    // Dummy record in left topic will emit expired non-joined records from the left topic
    inputTopic1.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", windowStart + 1), kvt(0, "A0-0+null", windowStart + 3));

    // Flush internal non-joined state store by joining the dummy record
    inputTopic2.pipeInput(2, 100, windowStart + 401);
    processor.checkAndClearProcessResult(kvt(2, "dummy+100", windowStart + 401));
  });

  it("testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 0));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic1.pipeInput(0, "A0", windowStart + 1);
    inputTopic1.pipeInput(1, "A1", windowStart + 2);
    inputTopic1.pipeInput(0, "A0-0", windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic2.pipeInput(1, 11, windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+11", windowStart + 3));

    // Dummy record in right topic will emit expired non-joined records from the left topic
    inputTopic2.pipeInput(2, 100, windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", windowStart + 1), kvt(0, "A0-0+null", windowStart + 3));

    // Flush internal non-joined state store by joining the dummy record
    inputTopic1.pipeInput(2, "dummy", windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+100", windowStart + 402));
  });

  it("testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic2.pipeInput(0, 10, windowStart + 1);
    inputTopic2.pipeInput(1, 11, windowStart + 2);
    inputTopic2.pipeInput(0, 12, windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic1.pipeInput(1, "A1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+11", windowStart + 3));

    // Dummy record in left topic will emit expired non-joined records from the right topic
    inputTopic1.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "null+10", windowStart + 1), kvt(0, "null+12", windowStart + 3));

    // Process the dummy joined record
    inputTopic2.pipeInput(2, 100, windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+100", windowStart + 402));
  });

  it("testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 0));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic2.pipeInput(0, 10, windowStart + 1);
    inputTopic2.pipeInput(1, 11, windowStart + 2);
    inputTopic2.pipeInput(0, 12, windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic1.pipeInput(1, "A1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+11", windowStart + 3));

    // Dummy record in right topic will emit expired non-joined records from the right topic
    inputTopic2.pipeInput(2, 100, windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "null+10", windowStart + 1), kvt(0, "null+12", windowStart + 3));

    // Process the dummy joined record
    inputTopic1.pipeInput(2, "dummy", windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+100", windowStart + 402));
  });

  it("testOrdering", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    // push two items to the primary stream; the other window is empty; this should not produce any item yet
    inputTopic1.pipeInput(0, "A0", 0);
    inputTopic1.pipeInput(1, "A1", 100);
    processor.checkAndClearProcessResult();

    // push one item to the other window that has a join;
    // this should produce the not-joined record first;
    // then the joined record
    inputTopic2.pipeInput(1, 11, 110);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 0), kvt(1, "A1+11", 110));
  });

  it("testGracePeriod", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 10));
    // push one item to the primary stream; and one item in other stream; this should not produce items because there are no joins
    // and window has not ended
    inputTopic1.pipeInput(0, "A0", 0);
    inputTopic2.pipeInput(1, 11, 0);
    processor.checkAndClearProcessResult();

    // push one item on each stream with a window time after the previous window ended (not closed); this should not produce
    // joined records because the window has ended, but will not produce non-joined records because the window has not closed.
    inputTopic1.pipeInput(1, "A1", 101);
    inputTopic2.pipeInput(0, 10, 101);
    processor.checkAndClearProcessResult();

    // push a 100 item to the any stream after the window is closed; this should produced all expired non-joined records because
    // the window has closed
    inputTopic2.pipeInput(0, 100, 112);
    processor.checkAndClearProcessResult(kvt(1, "null+11", 0), kvt(0, "A0+null", 0));
  });

  it("testEmitAllNonJoinedResultsForAsymmetricWindow", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(5).after(20));
    // push one item to the primary stream; this should not produce any items because there are no matching keys
    // and window has not ended
    inputTopic1.pipeInput(0, "A0", 29);
    processor.checkAndClearProcessResult();

    // push another item to the primary stream; this should not produce any items because there are no matching keys
    // and window has not ended
    inputTopic1.pipeInput(1, "A1", 30);
    processor.checkAndClearProcessResult();

    // push one item to the other stream; this should not produce any items because there are no matching keys
    // and window has not ended
    inputTopic2.pipeInput(2, 12, 31);
    processor.checkAndClearProcessResult();

    // push another item to the other stream; this should produce no inner joined-items because there are no matching keys
    // and window has not ended
    inputTopic2.pipeInput(3, 13, 36);
    processor.checkAndClearProcessResult();

    // push another item to the other stream; this should produce no inner joined-items because there are no matching keys
    // and should produce a right-join-item because before window has ended
    inputTopic2.pipeInput(4, 14, 37);
    processor.checkAndClearProcessResult(kvt(2, "null+12", 31));

    // push another item to the other stream; this should produce no inner joined-items because there are no matching keys
    // and should produce a left-join-item because after window has ended
    // and should produce two right-join-items because before window has ended
    inputTopic2.pipeInput(5, 15, 50);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 29), kvt(3, "null+13", 36), kvt(4, "null+14", 37));
  });

  it("testOuterJoinWithDefaultSuppliers", () => {
    const { topology, processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    // 2 window stores + 1 shared window store should be available
    expect(topology.subtopologies[0]!.stores).toHaveLength(3);

    // push two items to the primary stream; the other window is empty; this should not
    // produce any items because window has not expired
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult();

    // push two items to the other stream; this should produce two full-joined items
    for (let i = 0; i < 2; i++) {
      inputTopic2.pipeInput(expectedKeys[i]!, expectedKeys[i]! + 10);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+10", 0), kvt(1, "A1+11", 0));

    // push three items to the primary stream; this should produce two full-joined items
    for (let i = 0; i < 3; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "B" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+10", 0), kvt(1, "B1+11", 0));

    // push all items to the other stream; this should produce five full-joined items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, expectedKey + 20);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+20", 0), kvt(0, "B0+20", 0), kvt(1, "A1+21", 0), kvt(1, "B1+21", 0), kvt(2, "B2+22", 0));

    // push all four items to the primary stream; this should produce six full-joined items
    for (const expectedKey of expectedKeys) {
      inputTopic1.pipeInput(expectedKey, "C" + expectedKey);
    }
    processor.checkAndClearProcessResult(
      kvt(0, "C0+10", 0),
      kvt(0, "C0+20", 0),
      kvt(1, "C1+11", 0),
      kvt(1, "C1+21", 0),
      kvt(2, "C2+22", 0),
      kvt(3, "C3+23", 0),
    );

    // push a dummy record that should expire non-joined items; it should not produce any items because
    // all of them are joined
    inputTopic1.pipeInput(0, "dummy", 400);
    processor.checkAndClearProcessResult();
  });

  it("testWindowing", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    const time = 0;

    // push two items to the primary stream; the other window is empty; this should not produce items because window has not closed
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time);
    }
    processor.checkAndClearProcessResult();

    // push four items to the other stream; this should produce two full-join items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, expectedKey + 10, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+10", 0), kvt(1, "A1+11", 0));

    testUpperWindowBound(inputTopic1, inputTopic2, processor);
    testLowerWindowBound(inputTopic1, inputTopic2, processor);
  });

  it("testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100).before(0));
    let time = 0;

    // push two items to the primary stream; the other window is empty; this should not produce any items
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult();

    // push one item to the other stream; this should produce one full-join item
    time += 100;
    inputTopic2.pipeInput(expectedKeys[0]!, expectedKeys[0]! + 10, time);

    processor.checkAndClearProcessResult(kvt(0, "A0+10", 100));

    // push one item to the other stream; this should produce one left-join item
    time += 2;
    inputTopic2.pipeInput(expectedKeys[1]!, expectedKeys[1]! + 10, time);

    processor.checkAndClearProcessResult(kvt(1, "A1+null", 1));

    // push one item to the other stream; this should produce one right-join item
    time += 1;
    inputTopic2.pipeInput(expectedKeys[2]!, expectedKeys[2]! + 10, time);

    processor.checkAndClearProcessResult(kvt(1, "null+11", 102));

    // push one item to the first stream; this should not produce one full-join item
    inputTopic1.pipeInput(expectedKeys[2]!, "A" + expectedKeys[2]!, time);

    processor.checkAndClearProcessResult(kvt(2, "A2+12", 103));
  });

  it("testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100).after(0));
    let time = 0;

    // push two items to the primary stream; the other window is empty;
    // this should produce one left-joined item
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 0));

    // push one item to the other stream; this should produce one full-join item
    time += 1;
    inputTopic2.pipeInput(expectedKeys[1]!, expectedKeys[1]! + 10, time);

    processor.checkAndClearProcessResult(kvt(1, "A1+11", 1));

    // push one item to the other stream;
    // this should not produce any item
    time += 100;
    inputTopic2.pipeInput(expectedKeys[2]!, expectedKeys[2]! + 10, time);

    processor.checkAndClearProcessResult();

    // push one item to the other stream; this should not produce any item
    inputTopic2.pipeInput(expectedKeys[3]!, expectedKeys[3]! + 10, time);

    processor.checkAndClearProcessResult();

    // push one item to the first stream;
    // this should produce one inner-join item;
    time += 100;
    inputTopic1.pipeInput(expectedKeys[2]!, "A" + expectedKeys[2]!, time);

    processor.checkAndClearProcessResult(kvt(2, "A2+12", 201));
  });

  it("testShouldForwardCurrentHeaders", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream(topic1, { key: INTEGER, value: STRING });
    const stream2 = builder.stream(topic2, { key: INTEGER, value: INTEGER });
    const processed: { key: number; value: string; timestamp: number; headers: readonly Header[] }[] = [];
    stream1
      .outerJoin(stream2, TOSTRING_JOINER, JoinWindows.ofTimeDifferenceAndGrace(100, 10), { key: INTEGER, value: STRING, otherValue: INTEGER })
      .process(() => ({ process: ({ key, value, timestamp, headers }) => void processed.push({ key, value, timestamp, headers }) }));
    const driver = new TopologyTestDriver(build(builder, topic1, topic2));
    const pipe = (topic: string, key: number, value: string | number, header: string, timestamp: number) =>
      driver.pipe(topic, String(key), String(value), { timestamp, headers: [{ key: "h", value: header }] });
    const h = (value: string) => [{ key: "h", value }];

    pipe(topic1, 0, "A0", "1", 0);
    pipe(topic2, 1, 10, "2", 0);
    // bump stream-time to trigger outer-join results
    pipe(topic2, 3, 100, "3", 211);
    // Again, header forwarding is undefined, but the current observed behavior is that
    // the headers pass through the forwarding record.
    expect(processed.splice(0)).toEqual([
      { key: 1, value: "null+10", timestamp: 0, headers: h("3") },
      { key: 0, value: "A0+null", timestamp: 0, headers: h("3") },
    ]);
    // verifies joined duplicates are emitted
    pipe(topic1, 2, "A2", "4", 200);
    pipe(topic2, 2, 12, "5", 200);
    expect(processed.splice(0)).toEqual([{ key: 2, value: "A2+12", timestamp: 200, headers: h("5") }]);
  });
});
