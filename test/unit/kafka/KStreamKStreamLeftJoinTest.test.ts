/**
 * Ported from Kafka Streams' KStreamKStreamLeftJoinTest (inputs, expected results and their
 * timestamps as Kafka states them; Kafka's comments listing the window stores' contents are left
 * out). A left record with no partner is joined with null once stream time passes its window's
 * end + grace (Kafka 3.1+), or at once when it arrives that late; late records still join the
 * partners kept in the other side's store. Not ported: the tests of the old API
 * (JoinWindows.of, spurious results fix disabled) and testLeftJoinWithInMemoryCustomSuppliers
 * (store suppliers); runLeftJoin is ported as testLeftJoinWithDefaultSuppliers.
 */
import { describe, expect, it } from "vitest";
import { JoinWindows } from "../../../src/streams";
import { joinedStreams, kvt, type MockApiProcessorSupplier, STRING, type TestInputTopic } from "./support";

const expectedKeys = [0, 1, 2, 3];

/** Kafka's set-up: Integer keys, String values on the left and String values on the right, joined with TOSTRING_JOINER into a captured processor. */
function setUp(windows: JoinWindows) {
  return joinedStreams("leftJoin", windows, STRING);
}

type Processor = MockApiProcessorSupplier<number, string>;
type Input<V> = TestInputTopic<number, V>;

function testUpperWindowBound(inputTopic1: Input<string>, inputTopic2: Input<string>, processor: Processor) {
  let time: number;
  // push four items with larger and increasing timestamp (out of window) to the other stream; this should produce no items
  time = 1000;
  for (let i = 0; i < expectedKeys.length; i++) {
    inputTopic2.pipeInput(expectedKeys[i]!, "b" + expectedKeys[i]!, time + i);
  }
  processor.checkAndClearProcessResult();

  // push four items with larger timestamp to the primary stream; this should produce four full-join items
  time = 1000 + 100;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "B" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "B0+b0", 1100), kvt(1, "B1+b1", 1100), kvt(2, "B2+b2", 1100), kvt(3, "B3+b3", 1100));

  // push four items with increased timestamp to the primary stream; this should produce one left-join and three full-join items (non-joined item is not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "C" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(1, "C1+b1", 1101), kvt(2, "C2+b2", 1101), kvt(3, "C3+b3", 1101));

  // push four items with increased timestamp to the primary stream; this should produce two left-join and two full-join items (non-joined items are not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "D" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(2, "D2+b2", 1102), kvt(3, "D3+b3", 1102));

  // push four items with increased timestamp to the primary stream; this should produce one full-join items (three non-joined left-join are not produced yet)
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "E" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(3, "E3+b3", 1103));

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

function testLowerWindowBound(inputTopic1: Input<string>, inputTopic2: Input<string>, processor: Processor) {
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
  processor.checkAndClearProcessResult(kvt(0, "H0+b0", 1000), kvt(1, "H1+null", 900), kvt(2, "H2+null", 900), kvt(3, "H3+null", 900));

  // push four items with increase timestamp to the primary stream; this should produce two left-join and two full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "I" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "I0+b0", 1000), kvt(1, "I1+b1", 1001), kvt(2, "I2+null", 901), kvt(3, "I3+null", 901));

  // push four items with increase timestamp to the primary stream; this should produce one left-join and three full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "J" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "J0+b0", 1000), kvt(1, "J1+b1", 1001), kvt(2, "J2+b2", 1002), kvt(3, "J3+null", 902));

  // push four items with increase timestamp to the primary stream; this should produce one left-join and three full-join items
  time += 1;
  for (const expectedKey of expectedKeys) {
    inputTopic1.pipeInput(expectedKey, "K" + expectedKey, time);
  }
  processor.checkAndClearProcessResult(kvt(0, "K0+b0", 1000), kvt(1, "K1+b1", 1001), kvt(2, "K2+b2", 1002), kvt(3, "K3+b3", 1003));

  // push a dummy record that should expire non-joined items; it should produce only the dummy+null record because
  // all previous late records were emitted immediately
  inputTopic1.pipeInput(0, "dummy", time + 300);
  processor.checkAndClearProcessResult(kvt(0, "dummy+null", 1203));
}

describe("KStreamKStreamLeftJoinTest", () => {
  it("testLeftJoinDuplicates", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 10));
    // verifies non-joined duplicates are emitted when window has closed
    inputTopic1.pipeInput(0, "A0", 0);
    inputTopic1.pipeInput(0, "A0-0", 0);
    inputTopic2.pipeInput(1, "a0", 111);
    // bump stream-time to trigger left-join results
    inputTopic2.pipeInput(2, "dummy", 500);

    processor.checkAndClearProcessResult(kvt(0, "A0+null", 0), kvt(0, "A0-0+null", 0));

    // verifies joined duplicates are emitted
    inputTopic1.pipeInput(2, "A2", 1000);
    inputTopic1.pipeInput(2, "A2-0", 1000);
    inputTopic2.pipeInput(2, "a2", 1001);

    processor.checkAndClearProcessResult(kvt(2, "A2+a2", 1001), kvt(2, "A2-0+a2", 1001));

    // this record should expired non-joined records, but because A2 and A2-0 are joined and
    // emitted already, then they won't be emitted again
    inputTopic2.pipeInput(3, "a3", 315);

    processor.checkAndClearProcessResult();
  });

  it("testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 0));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic1.pipeInput(0, "A0", windowStart + 1);
    inputTopic1.pipeInput(1, "A1", windowStart + 2);
    inputTopic1.pipeInput(0, "A0-0", windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic2.pipeInput(1, "a1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+a1", windowStart + 3));

    // Dummy record in left topic will emit expired non-joined records from the left topic
    inputTopic1.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", windowStart + 1), kvt(0, "A0-0+null", windowStart + 3));

    // Flush internal non-joined state store by joining the dummy record
    inputTopic2.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult(kvt(2, "dummy+dummy", windowStart + 401));
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
    inputTopic2.pipeInput(1, "a1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "A1+a1", windowStart + 3));

    // Dummy record in right topic will emit expired non-joined records from the left topic
    inputTopic2.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", windowStart + 1), kvt(0, "A0-0+null", windowStart + 3));

    // Flush internal non-joined state store by joining the dummy record
    inputTopic1.pipeInput(2, "dummy", windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+dummy", windowStart + 402));
  });

  it("testRightNonJoinedRecordsAreNeverEmittedByTheLeftProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 0));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic2.pipeInput(0, "A0", windowStart + 1);
    inputTopic2.pipeInput(1, "A1", windowStart + 2);
    inputTopic2.pipeInput(0, "A0-0", windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic1.pipeInput(1, "a1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "a1+A1", windowStart + 3));

    // Dummy record in left topic will not emit records
    inputTopic1.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult();

    // Process the dummy joined record
    inputTopic2.pipeInput(2, "dummy", windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+dummy", windowStart + 402));
  });

  it("testRightNonJoinedRecordsAreNeverEmittedByTheRightProcessor", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    const windowStart = 0;

    // No joins detected; No null-joins emitted
    inputTopic2.pipeInput(0, "A0", windowStart + 1);
    inputTopic2.pipeInput(1, "A1", windowStart + 2);
    inputTopic2.pipeInput(0, "A0-0", windowStart + 3);
    processor.checkAndClearProcessResult();

    // Join detected; No null-joins emitted
    inputTopic1.pipeInput(1, "a1", windowStart + 3);
    processor.checkAndClearProcessResult(kvt(1, "a1+A1", windowStart + 3));

    // Dummy record in right topic will not emit records
    inputTopic2.pipeInput(2, "dummy", windowStart + 401);
    processor.checkAndClearProcessResult();

    // Process the dummy joined record
    inputTopic1.pipeInput(2, "dummy", windowStart + 402);
    processor.checkAndClearProcessResult(kvt(2, "dummy+dummy", windowStart + 402));
  });

  it("testLeftJoinedRecordsWithZeroAfterAreEmitted", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100).after(0));

    // push four items with increasing timestamps to the primary stream; the other window is empty;
    // this should emit the first three left-joined items;
    // A3 is not triggered yet
    let time = 1000;
    for (let i = 0; i < expectedKeys.length; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 1000), kvt(1, "A1+null", 1001), kvt(2, "A2+null", 1002));

    // push four items smaller timestamps (out of window) to the secondary stream;
    // this should produce four joined items
    time = 1000 - 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "a" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 1000), kvt(1, "A1+a1", 1001), kvt(2, "A2+a2", 1002), kvt(3, "A3+a3", 1003));

    // push four items with increased timestamps to the secondary stream;
    // this should produce four joined item
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+b0", 1000), kvt(1, "A1+b1", 1001), kvt(2, "A2+b2", 1002), kvt(3, "A3+b3", 1003));

    // push four items with increased timestamps to the secondary stream;
    // this should produce only three joined items;
    // c0 arrives too late to be joined with A0
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "c" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(1, "A1+c1", 1001), kvt(2, "A2+c2", 1002), kvt(3, "A3+c3", 1003));

    // push four items with increased timestamps to the secondary stream;
    // this should produce only two joined items;
    // d0 and d1 arrive too late to be joined with A0 and A1
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "d" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(2, "A2+d2", 1002), kvt(3, "A3+d3", 1003));

    // push four items with increased timestamps to the secondary stream;
    // this should produce one joined item;
    // only e3 can be joined with A3;
    // e0, e1 and e2 arrive too late to be joined with A0, A1 and A2
    time += 1;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "e" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(3, "A3+e3", 1003));

    // push four items with larger timestamps to the secondary stream;
    // no (non-)joined items can be produced
    //
    time = 1000 + 100;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "f" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();
  });

  it("testLeftJoinWithDefaultSuppliers", () => {
    const { topology, processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    // 2 window stores + 1 shared window store should be available
    expect(topology.subtopologies[0]!.stores).toHaveLength(3);

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

    // push three items to the primary stream; this should produce two joined items
    for (let i = 0; i < 3; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "B" + expectedKeys[i]);
    }
    processor.checkAndClearProcessResult(kvt(0, "B0+a0", 0), kvt(1, "B1+a1", 0));

    // push all items to the other stream; this should produce five items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "b" + expectedKey);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+b0", 0), kvt(0, "B0+b0", 0), kvt(1, "A1+b1", 0), kvt(1, "B1+b1", 0), kvt(2, "B2+b2", 0));

    // push all four items to the primary stream; this should produce six joined items
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

    // push a dummy record that should expire non-joined items; it should not produce any items because
    // all of them are joined
    inputTopic1.pipeInput(0, "dummy", 1000);
    processor.checkAndClearProcessResult();
  });

  it("testOrdering", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    // push two items to the primary stream; the other window is empty; this should not produce any item yet
    inputTopic1.pipeInput(0, "A0", 0);
    inputTopic1.pipeInput(1, "A1", 100);
    processor.checkAndClearProcessResult();

    // push one item to the other window that has a join;
    // this should produce the joined record first;
    // then non-joined record with a closed window
    // by the time they were produced before
    inputTopic2.pipeInput(1, "a1", 110);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 0), kvt(1, "A1+a1", 110));
  });

  it("testGracePeriod", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceAndGrace(100, 10));
    // push two items to the primary stream; the other window is empty; this should not produce items because window has not closed
    let time = 0;
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time);
    }
    processor.checkAndClearProcessResult();

    // push two items to the other stream with a window time after the previous window ended (not closed); this should not produce
    // joined records because the window has ended, but not closed.
    time += 101;
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "a" + expectedKey, time);
    }
    processor.checkAndClearProcessResult();

    // push a dummy item to the other stream after the window is closed; this should only produced the expired non-joined records, but
    // not the joined records because the window has closed
    time += 1100;
    inputTopic2.pipeInput(0, "dummy", time);
    processor.checkAndClearProcessResult(kvt(0, "A0+null", 0), kvt(1, "A1+null", 0));
  });

  it("testWindowing", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100));
    const time = 0;

    // push two items to the primary stream; the other window is empty; this should not produce any items
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time);
    }
    processor.checkAndClearProcessResult();

    // push four items to the other stream; this should produce two full-join items
    for (const expectedKey of expectedKeys) {
      inputTopic2.pipeInput(expectedKey, "a" + expectedKey, time);
    }
    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 0), kvt(1, "A1+a1", 0));
    testUpperWindowBound(inputTopic1, inputTopic2, processor);
    testLowerWindowBound(inputTopic1, inputTopic2, processor);
  });

  it("shouldNotEmitLeftJoinResultForAsymmetricWindow", () => {
    const { processor, inputTopic1, inputTopic2 } = setUp(JoinWindows.ofTimeDifferenceWithNoGrace(100).before(0));
    let time = 0;

    // push two items to the primary stream; the other window is empty; this should not produce any items
    for (let i = 0; i < 2; i++) {
      inputTopic1.pipeInput(expectedKeys[i]!, "A" + expectedKeys[i]!, time + i);
    }
    processor.checkAndClearProcessResult();

    // push one item to the other stream; this should produce one full-join item
    time += 100;
    inputTopic2.pipeInput(expectedKeys[0]!, "a" + expectedKeys[0]!, time);

    processor.checkAndClearProcessResult(kvt(0, "A0+a0", 100));

    // push one item to the other stream; this should produce one left-join item
    time += 2;
    inputTopic2.pipeInput(expectedKeys[1]!, "a" + expectedKeys[1]!, time);

    processor.checkAndClearProcessResult(kvt(1, "A1+null", 1));
  });
});
