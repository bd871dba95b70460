/**
 * Ported from Kafka Streams' KStreamSlidingWindowAggregateTest, ON_WINDOW_UPDATE variants (the
 * in-order and reverse iterator variants expect the same), and the ON_WINDOW_CLOSE variants of
 * the small-input tests (each window once, when it closes, with its final value). Records are folded into the windows in
 * arrival order, as Kafka's incremental algorithm does; each window carries its latest record's
 * timestamp; only windows whose contents change are written and forwarded. Kafka's window store
 * suppliers (in-memory, retention 50 000 or 500 ms) are the store's retention here. Not ported:
 * the ON_WINDOW_CLOSE variants of the large and random inputs, testJoin and the grace test
 * (the small-input ones cover the strategy's bounds), and the lateness metrics.
 */
import { describe, expect, it } from "vitest";
import {
  EmitStrategy,
  Materialized,
  SlidingWindows,
  StreamsBuilder,
  TopologyTestDriver,
  type KTable,
  type TimeWindowedKStream,
  type Windowed,
} from "../../../src/streams";
import {
  build,
  droppedRecordsTotal,
  kvt,
  MockApiProcessorSupplier,
  STRING,
  STRING_ADDER,
  STRING_INIT,
  TestInputTopic,
  TestOutputTopic,
  toStringAdder,
  windowedString,
  type KeyValueTimestamp,
  compareStrings,
} from "./support";

const TOSTRING_ADDER = toStringAdder("+");
const windowed = (key: string, start: number, end: number): Windowed<string> => ({ key, window: { start, end } });
const vat = (value: string, timestamp: number) => JSON.stringify({ value, timestamp });
/** Kafka's `Set.of(ValueAndTimestamp…)`: distinct, in no particular order. */
const vats = (...values: string[]) => [...new Set(values)].sort();

/** Kafka's gatherOutput: per window start, the distinct values and timestamps forwarded. */
function gatherOutput(supplier: MockApiProcessorSupplier<Windowed<string>, string>): Map<number, string[]> {
  const actual = new Map<number, string[]>();
  for (const entry of supplier.processed) {
    const start = entry.key.window.start;
    actual.set(start, vats(...(actual.get(start) ?? []), vat(entry.value, entry.timestamp)));
  }
  return actual;
}

/** Kafka's comparator: by key, then window start (a stable sort keeps each window's updates in order). */
function sortByKeyAndStart(processed: readonly KeyValueTimestamp<Windowed<string>, string>[]) {
  return [...processed].sort((a, b) => compareStrings(a.key.key, b.key.key) || a.key.window.start - b.key.window.start);
}

function setUp(windows: SlidingWindows, aggregate: (grouped: TimeWindowedKStream<string, string>) => KTable<Windowed<string>, string>, topic: string) {
  const builder = new StreamsBuilder();
  const table = aggregate(builder.stream(topic, { key: STRING, value: STRING }).groupByKey({ key: STRING, value: STRING }).windowedBy(windows));
  const supplier = new MockApiProcessorSupplier<Windowed<string>, string>();
  table.toStream().process(supplier.supplier);
  const driver = new TopologyTestDriver(build(builder, topic));
  return { driver, supplier, inputTopic: new TestInputTopic(driver, topic, STRING, STRING) };
}

describe("KStreamSlidingWindowAggregateTest", () => {
  it("testAggregateSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 5),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 50000 })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", "2", 10);
    inputTopic.pipeInput("A", "3", 14);
    inputTopic.pipeInput("A", "4", 15);
    inputTopic.pipeInput("A", "5", 20);
    inputTopic.pipeInput("A", "6", 22);
    inputTopic.pipeInput("A", "7", 30);
    const expected = new Map<number, string[]>();
    expected.set(0, vats(vat("0+1", 10), vat("0+1+2", 10)));
    expected.set(4, vats(vat("0+1+2+3", 14)));
    expected.set(5, vats(vat("0+1+2+3+4", 15)));
    expected.set(10, vats(vat("0+1+2+3+4+5", 20)));
    expected.set(11, vats(vat("0+3", 14), vat("0+3+4", 15), vat("0+3+4+5", 20)));
    expected.set(12, vats(vat("0+3+4+5+6", 22)));
    expected.set(15, vats(vat("0+4", 15), vat("0+4+5", 20), vat("0+4+5+6", 22)));
    expected.set(16, vats(vat("0+5", 20), vat("0+5+6", 22)));
    expected.set(20, vats(vat("0+5+6+7", 30)));
    expected.set(21, vats(vat("0+6", 22), vat("0+6+7", 30)));
    expected.set(23, vats(vat("0+7", 30)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testReduceSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 5),
      (grouped) => grouped.reduce(STRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 50000 })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", "2", 14);
    inputTopic.pipeInput("A", "3", 15);
    inputTopic.pipeInput("A", "4", 22);
    inputTopic.pipeInput("A", "5", 26);
    inputTopic.pipeInput("A", "6", 30);
    const expected = new Map<number, string[]>();
    expected.set(0, vats(vat("1", 10)));
    expected.set(4, vats(vat("1+2", 14)));
    expected.set(5, vats(vat("1+2+3", 15)));
    expected.set(11, vats(vat("2", 14), vat("2+3", 15)));
    expected.set(12, vats(vat("2+3+4", 22)));
    expected.set(15, vats(vat("3", 15), vat("3+4", 22)));
    expected.set(16, vats(vat("4", 22), vat("4+5", 26)));
    expected.set(20, vats(vat("4+5+6", 30)));
    expected.set(23, vats(vat("5", 26), vat("5+6", 30)));
    expected.set(27, vats(vat("6", 30)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testAggregateLargeInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 50),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 50000 })),
      "topic1",
    );
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", "2", 20);
    inputTopic.pipeInput("A", "3", 22);
    inputTopic.pipeInput("A", "4", 15);
    inputTopic.pipeInput("B", "1", 12);
    inputTopic.pipeInput("B", "2", 13);
    inputTopic.pipeInput("B", "3", 18);
    inputTopic.pipeInput("B", "4", 19);
    inputTopic.pipeInput("B", "5", 25);
    inputTopic.pipeInput("B", "6", 14); // skip for emit final [4, 14], close time 15
    inputTopic.pipeInput("C", "1", 11); // skip for emit final [1, 11], close time 15
    inputTopic.pipeInput("C", "2", 15);
    inputTopic.pipeInput("C", "3", 16);
    inputTopic.pipeInput("C", "4", 21);
    inputTopic.pipeInput("C", "5", 23);
    inputTopic.pipeInput("D", "4", 11); // skip for emit final [1, 11], close time 15
    inputTopic.pipeInput("D", "2", 12); // skip for emit final [2, 12], close time 15
    inputTopic.pipeInput("D", "3", 29);
    inputTopic.pipeInput("D", "5", 16); // skip for emit final [6, 16], close time: 19

    expect(sortByKeyAndStart(supplier.processed)).toEqual([
      // FINAL WINDOW: A@10 left window created when A@10 processed
      kvt(windowed("A", 0, 10), "0+1", 10),
      // FINAL WINDOW: A@15 left window created when A@15 processed
      kvt(windowed("A", 5, 15), "0+1+4", 15),
      // A@20 left window created when A@20 processed
      kvt(windowed("A", 10, 20), "0+1+2", 20),
      // FINAL WINDOW: A@20 left window updated when A@15 processed
      kvt(windowed("A", 10, 20), "0+1+2+4", 20),
      // A@10 right window created when A@20 processed
      kvt(windowed("A", 11, 21), "0+2", 20),
      // FINAL WINDOW: A@10 right window updated when A@15 processed
      kvt(windowed("A", 11, 21), "0+2+4", 20),
      // A@22 left window created when A@22 processed
      kvt(windowed("A", 12, 22), "0+2+3", 22),
      // FINAL WINDOW: A@22 left window updated when A@15 processed
      kvt(windowed("A", 12, 22), "0+2+3+4", 22),
      // FINAL WINDOW: A@15 right window created when A@15 processed
      kvt(windowed("A", 16, 26), "0+2+3", 22),
      // FINAL WINDOW: A@20 right window created when A@22 processed
      kvt(windowed("A", 21, 31), "0+3", 22),
      // FINAL WINDOW: B@12 left window created when B@12 processed
      kvt(windowed("B", 2, 12), "0+1", 12),
      // FINAL WINDOW: B@13 left window created when B@13 processed
      kvt(windowed("B", 3, 13), "0+1+2", 13),
      // FINAL WINDOW: B@14 left window created when B@14 processed
      kvt(windowed("B", 4, 14), "0+1+2+6", 14),
      // B@18 left window created when B@18 processed
      kvt(windowed("B", 8, 18), "0+1+2+3", 18),
      // FINAL WINDOW: B@18 left window updated when B@14 processed
      kvt(windowed("B", 8, 18), "0+1+2+3+6", 18),
      // B@19 left window created when B@19 processed
      kvt(windowed("B", 9, 19), "0+1+2+3+4", 19),
      // FINAL WINDOW: B@19 left window updated when B@14 processed
      kvt(windowed("B", 9, 19), "0+1+2+3+4+6", 19),
      // B@12 right window created when B@13 processed
      kvt(windowed("B", 13, 23), "0+2", 13),
      // B@12 right window updated when B@18 processed
      kvt(windowed("B", 13, 23), "0+2+3", 18),
      // B@12 right window updated when B@19 processed
      kvt(windowed("B", 13, 23), "0+2+3+4", 19),
      // FINAL WINDOW: B@12 right window updated when B@14 processed
      kvt(windowed("B", 13, 23), "0+2+3+4+6", 19),
      // B@13 right window created when B@18 processed
      kvt(windowed("B", 14, 24), "0+3", 18),
      // B@13 right window updated when B@19 processed
      kvt(windowed("B", 14, 24), "0+3+4", 19),
      // FINAL WINDOW: B@13 right window updated when B@14 processed
      kvt(windowed("B", 14, 24), "0+3+4+6", 19),
      // FINAL WINDOW: B@25 left window created when B@25 processed
      kvt(windowed("B", 15, 25), "0+3+4+5", 25),
      // B@18 right window created when B@19 processed
      kvt(windowed("B", 19, 29), "0+4", 19),
      // FINAL WINDOW: B@18 right window updated when B@25 processed
      kvt(windowed("B", 19, 29), "0+4+5", 25),
      // FINAL WINDOW: B@19 right window updated when B@25 processed
      kvt(windowed("B", 20, 30), "0+5", 25),
      // FINAL WINDOW: C@11 left window created when C@11 processed
      kvt(windowed("C", 1, 11), "0+1", 11),
      // FINAL WINDOW: C@15 left window created when C@15 processed
      kvt(windowed("C", 5, 15), "0+1+2", 15),
      // FINAL WINDOW: C@16 left window created when C@16 processed
      kvt(windowed("C", 6, 16), "0+1+2+3", 16),
      // FINAL WINDOW: C@21 left window created when C@21 processed
      kvt(windowed("C", 11, 21), "0+1+2+3+4", 21),
      // C@11 right window created when C@15 processed
      kvt(windowed("C", 12, 22), "0+2", 15),
      // C@11 right window updated when C@16 processed
      kvt(windowed("C", 12, 22), "0+2+3", 16),
      // FINAL WINDOW: C@11 right window updated when C@21 processed
      kvt(windowed("C", 12, 22), "0+2+3+4", 21),
      // FINAL WINDOW: C@23 left window created when C@23 processed
      kvt(windowed("C", 13, 23), "0+2+3+4+5", 23),
      // C@15 right window created when C@16 processed
      kvt(windowed("C", 16, 26), "0+3", 16),
      // C@15 right window updated when C@21 processed
      kvt(windowed("C", 16, 26), "0+3+4", 21),
      // FINAL WINDOW: C@15 right window updated when C@23 processed
      kvt(windowed("C", 16, 26), "0+3+4+5", 23),
      // C@16 right window created when C@21 processed
      kvt(windowed("C", 17, 27), "0+4", 21),
      // FINAL WINDOW: C@16 right window updated when C@23 processed
      kvt(windowed("C", 17, 27), "0+4+5", 23),
      // FINAL WINDOW: C@21 right window created when C@23 processed
      kvt(windowed("C", 22, 32), "0+5", 23),
      // FINAL WINDOW: D@11 left window created when D@11 processed
      kvt(windowed("D", 1, 11), "0+4", 11),
      // FINAL WINDOW: D@12 left window created when D@12 processed
      kvt(windowed("D", 2, 12), "0+4+2", 12),
      // FINAL WINDOW: D@16 left window created when D@16 processed
      kvt(windowed("D", 6, 16), "0+4+2+5", 16),
      // D@11 right window created when D@12 processed
      kvt(windowed("D", 12, 22), "0+2", 12),
      // FINAL WINDOW: D@11 right window updated when D@16 processed
      kvt(windowed("D", 12, 22), "0+2+5", 16),
      // FINAL WINDOW: D@12 right window created when D@16 processed
      kvt(windowed("D", 13, 23), "0+5", 16),
      // FINAL WINDOW: D@29 left window created when D@29 processed
      kvt(windowed("D", 19, 29), "0+3", 29),
    ]);
  });

  it("testEarlyRecordsSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(50, 0),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 5);
    inputTopic.pipeInput("A", "3", 6);
    inputTopic.pipeInput("A", "4", 3);
    inputTopic.pipeInput("A", "5", 13);
    inputTopic.pipeInput("A", "6", 10);
    inputTopic.pipeInput("A", "7", 70);
    const expected = new Map<number, string[]>();
    expected.set(0, vats(vat("0+1", 0), vat("0+1+2", 5), vat("0+1+2+3", 6), vat("0+1+2+3+4", 6), vat("0+1+2+3+4+5", 13), vat("0+1+2+3+4+5+6", 13)));
    expected.set(1, vats(vat("0+2", 5), vat("0+2+3", 6), vat("0+2+3+4", 6), vat("0+2+3+4+5", 13), vat("0+2+3+4+5+6", 13)));
    expected.set(4, vats(vat("0+2+3", 6), vat("0+2+3+5", 13), vat("0+2+3+5+6", 13)));
    expected.set(6, vats(vat("0+3", 6), vat("0+3+5", 13), vat("0+3+5+6", 13)));
    expected.set(7, vats(vat("0+5", 13), vat("0+5+6", 13)));
    expected.set(11, vats(vat("0+5", 13)));
    expected.set(20, vats(vat("0+7", 70)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testEarlyRecordsRepeatedInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(5, 0),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 2);
    inputTopic.pipeInput("A", "3", 4);
    inputTopic.pipeInput("A", "4", 0);
    inputTopic.pipeInput("A", "5", 2);
    inputTopic.pipeInput("A", "6", 2);
    inputTopic.pipeInput("A", "7", 0);
    inputTopic.pipeInput("A", "8", 7);
    const expected = new Map<number, string[]>();
    expected.set(
      0,
      vats(vat("0+1", 0), vat("0+1+2", 2), vat("0+1+2+3+4+5", 4), vat("0+1+2+3+4+5+6", 4), vat("0+1+2+3", 4), vat("0+1+2+3+4", 4), vat("0+1+2+3+4+5+6+7", 4)),
    );
    expected.set(1, vats(vat("0+2+3+5+6", 4), vat("0+2", 2), vat("0+2+3", 4), vat("0+2+3+5", 4)));
    expected.set(2, vats(vat("0+2+3+5+6+8", 7)));
    expected.set(3, vats(vat("0+3", 4), vat("0+3+8", 7)));
    expected.set(5, vats(vat("0+8", 7)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testEarlyRecordsLargeInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 50),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 50000 })),
      "topic",
    );
    inputTopic.pipeInput("E", "1", 0);
    inputTopic.pipeInput("E", "3", 5);
    inputTopic.pipeInput("E", "4", 6);
    inputTopic.pipeInput("E", "2", 3);
    inputTopic.pipeInput("E", "6", 13);
    inputTopic.pipeInput("E", "5", 10);
    inputTopic.pipeInput("E", "7", 4);
    inputTopic.pipeInput("E", "8", 2);
    inputTopic.pipeInput("E", "9", 15);

    expect(sortByKeyAndStart(supplier.processed)).toEqual([
      // E@0
      kvt(windowed("E", 0, 10), "0+1", 0),
      // E@5
      kvt(windowed("E", 0, 10), "0+1+3", 5),
      // E@6
      kvt(windowed("E", 0, 10), "0+1+3+4", 6),
      // E@3
      kvt(windowed("E", 0, 10), "0+1+3+4+2", 6),
      //E@10
      kvt(windowed("E", 0, 10), "0+1+3+4+2+5", 10),
      //E@4
      kvt(windowed("E", 0, 10), "0+1+3+4+2+5+7", 10),
      //E@2
      kvt(windowed("E", 0, 10), "0+1+3+4+2+5+7+8", 10),
      // E@5
      kvt(windowed("E", 1, 11), "0+3", 5),
      // E@6
      kvt(windowed("E", 1, 11), "0+3+4", 6),
      // E@3
      kvt(windowed("E", 1, 11), "0+3+4+2", 6),
      //E@10
      kvt(windowed("E", 1, 11), "0+3+4+2+5", 10),
      //E@4
      kvt(windowed("E", 1, 11), "0+3+4+2+5+7", 10),
      //E@2
      kvt(windowed("E", 1, 11), "0+3+4+2+5+7+8", 10),
      //E@13
      kvt(windowed("E", 3, 13), "0+3+4+2+6", 13),
      //E@10
      kvt(windowed("E", 3, 13), "0+3+4+2+6+5", 13),
      //E@4
      kvt(windowed("E", 3, 13), "0+3+4+2+6+5+7", 13),
      // E@3
      kvt(windowed("E", 4, 14), "0+3+4", 6),
      //E@13
      kvt(windowed("E", 4, 14), "0+3+4+6", 13),
      //E@10
      kvt(windowed("E", 4, 14), "0+3+4+6+5", 13),
      //E@4
      kvt(windowed("E", 4, 14), "0+3+4+6+5+7", 13),
      //E@4
      kvt(windowed("E", 5, 15), "0+3+4+6+5", 13),
      //E@15
      kvt(windowed("E", 5, 15), "0+3+4+6+5+9", 15),
      // E@6
      kvt(windowed("E", 6, 16), "0+4", 6),
      //E@13
      kvt(windowed("E", 6, 16), "0+4+6", 13),
      //E@10
      kvt(windowed("E", 6, 16), "0+4+6+5", 13),
      //E@15
      kvt(windowed("E", 6, 16), "0+4+6+5+9", 15),
      //E@13
      kvt(windowed("E", 7, 17), "0+6", 13),
      //E@10
      kvt(windowed("E", 7, 17), "0+6+5", 13),
      //E@15
      kvt(windowed("E", 7, 17), "0+6+5+9", 15),
      //E@10
      kvt(windowed("E", 11, 21), "0+6", 13),
      //E@15
      kvt(windowed("E", 11, 21), "0+6+9", 15),
      //E@15
      kvt(windowed("E", 14, 24), "0+9", 15),
    ]);
  });

  it("testEarlyNoGracePeriodSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(50),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 5);
    inputTopic.pipeInput("A", "3", 6);
    inputTopic.pipeInput("A", "4", 3);
    inputTopic.pipeInput("A", "5", 13);
    inputTopic.pipeInput("A", "6", 10);
    inputTopic.pipeInput("A", "6", 70);
    const expected = new Map<number, string[]>();
    expected.set(0, vats(vat("0+1", 0), vat("0+1+2", 5), vat("0+1+2+3", 6), vat("0+1+2+3+4", 6), vat("0+1+2+3+4+5", 13), vat("0+1+2+3+4+5+6", 13)));
    expected.set(1, vats(vat("0+2", 5), vat("0+2+3", 6), vat("0+2+3+4", 6), vat("0+2+3+4+5", 13), vat("0+2+3+4+5+6", 13)));
    expected.set(4, vats(vat("0+2+3", 6), vat("0+2+3+5", 13), vat("0+2+3+5+6", 13)));
    expected.set(6, vats(vat("0+3", 6), vat("0+3+5", 13), vat("0+3+5+6", 13)));
    expected.set(7, vats(vat("0+5", 13), vat("0+5+6", 13)));
    expected.set(11, vats(vat("0+5", 13)));
    expected.set(20, vats(vat("0+6", 70)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testNoGracePeriodSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(50),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 100);
    inputTopic.pipeInput("A", "2", 105);
    inputTopic.pipeInput("A", "3", 106);
    inputTopic.pipeInput("A", "4", 103);
    inputTopic.pipeInput("A", "5", 113);
    inputTopic.pipeInput("A", "6", 110);
    const expected = new Map<number, string[]>();
    expected.set(50, vats(vat("0+1", 100)));
    expected.set(55, vats(vat("0+1+2", 105)));
    expected.set(56, vats(vat("0+1+2+3", 106), vat("0+1+2+3+4", 106)));
    expected.set(63, vats(vat("0+1+2+3+4+5", 113), vat("0+1+2+3+4+5+6", 113)));
    expected.set(101, vats(vat("0+2", 105), vat("0+2+3", 106), vat("0+2+3+4", 106), vat("0+2+3+4+5", 113), vat("0+2+3+4+5+6", 113)));
    expected.set(104, vats(vat("0+2+3", 106), vat("0+2+3+5", 113), vat("0+2+3+5+6", 113)));
    expected.set(106, vats(vat("0+3", 106), vat("0+3+5", 113), vat("0+3+5+6", 113)));
    expected.set(107, vats(vat("0+5", 113), vat("0+5+6", 113)));
    expected.set(111, vats(vat("0+5", 113)));
    expect(gatherOutput(supplier)).toEqual(expected);
  });

  it("testEarlyNoGracePeriodLargeInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(10),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 500 })),
      "topic",
    );
    inputTopic.pipeInput("E", "1", 0);
    inputTopic.pipeInput("E", "3", 5);
    inputTopic.pipeInput("E", "4", 6);
    inputTopic.pipeInput("E", "2", 3);
    inputTopic.pipeInput("E", "6", 13);
    inputTopic.pipeInput("E", "5", 10);
    inputTopic.pipeInput("E", "7", 4);
    inputTopic.pipeInput("E", "8", 2);
    inputTopic.pipeInput("E", "9", 15);

    expect(sortByKeyAndStart(supplier.processed)).toEqual([
      // E@0
      kvt(windowed("E", 0, 10), "0+1", 0),
      // E@5
      kvt(windowed("E", 0, 10), "0+1+3", 5),
      // E@6
      kvt(windowed("E", 0, 10), "0+1+3+4", 6),
      // E@3
      kvt(windowed("E", 0, 10), "0+1+3+4+2", 6),
      // E@5
      kvt(windowed("E", 1, 11), "0+3", 5),
      // E@6
      kvt(windowed("E", 1, 11), "0+3+4", 6),
      // E@3
      kvt(windowed("E", 1, 11), "0+3+4+2", 6),
      //E@13
      kvt(windowed("E", 3, 13), "0+3+4+2+6", 13),
      //E@10
      kvt(windowed("E", 3, 13), "0+3+4+2+6+5", 13),
      //E@4
      kvt(windowed("E", 3, 13), "0+3+4+2+6+5+7", 13),
      // E@3
      kvt(windowed("E", 4, 14), "0+3+4", 6),
      //E@13
      kvt(windowed("E", 4, 14), "0+3+4+6", 13),
      //E@10
      kvt(windowed("E", 4, 14), "0+3+4+6+5", 13),
      //E@4
      kvt(windowed("E", 4, 14), "0+3+4+6+5+7", 13),
      //E@4
      kvt(windowed("E", 5, 15), "0+3+4+6+5", 13),
      //E@15
      kvt(windowed("E", 5, 15), "0+3+4+6+5+9", 15),
      // E@6
      kvt(windowed("E", 6, 16), "0+4", 6),
      //E@13
      kvt(windowed("E", 6, 16), "0+4+6", 13),
      //E@10
      kvt(windowed("E", 6, 16), "0+4+6+5", 13),
      //E@15
      kvt(windowed("E", 6, 16), "0+4+6+5+9", 15),
      //E@13
      kvt(windowed("E", 7, 17), "0+6", 13),
      //E@10
      kvt(windowed("E", 7, 17), "0+6+5", 13),
      //E@15
      kvt(windowed("E", 7, 17), "0+6+5+9", 15),
      //E@10
      kvt(windowed("E", 11, 21), "0+6", 13),
      //E@15
      kvt(windowed("E", 11, 21), "0+6+9", 15),
      //E@15
      kvt(windowed("E", 14, 24), "0+9", 15),
    ]);
  });

  it("testNoGracePeriodLargeInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(10),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 500 })),
      "topic",
    );
    inputTopic.pipeInput("E", "1", 100);
    inputTopic.pipeInput("E", "3", 105);
    inputTopic.pipeInput("E", "4", 106);
    inputTopic.pipeInput("E", "2", 103);
    inputTopic.pipeInput("E", "6", 113);
    inputTopic.pipeInput("E", "5", 110);
    inputTopic.pipeInput("E", "7", 104);
    inputTopic.pipeInput("E", "8", 102);
    inputTopic.pipeInput("E", "9", 115);

    expect(sortByKeyAndStart(supplier.processed)).toEqual([
      // E@0
      kvt(windowed("E", 90, 100), "0+1", 100),
      // E@5
      kvt(windowed("E", 95, 105), "0+1+3", 105),
      // E@6
      kvt(windowed("E", 96, 106), "0+1+3+4", 106),
      // E@3
      kvt(windowed("E", 96, 106), "0+1+3+4+2", 106),
      // E@5
      kvt(windowed("E", 101, 111), "0+3", 105),
      // E@6
      kvt(windowed("E", 101, 111), "0+3+4", 106),
      // E@3
      kvt(windowed("E", 101, 111), "0+3+4+2", 106),
      //E@13
      kvt(windowed("E", 103, 113), "0+3+4+2+6", 113),
      //E@10
      kvt(windowed("E", 103, 113), "0+3+4+2+6+5", 113),
      //E@4
      kvt(windowed("E", 103, 113), "0+3+4+2+6+5+7", 113),
      // E@3
      kvt(windowed("E", 104, 114), "0+3+4", 106),
      //E@13
      kvt(windowed("E", 104, 114), "0+3+4+6", 113),
      //E@10
      kvt(windowed("E", 104, 114), "0+3+4+6+5", 113),
      //E@4
      kvt(windowed("E", 104, 114), "0+3+4+6+5+7", 113),
      //E@4
      kvt(windowed("E", 105, 115), "0+3+4+6+5", 113),
      //E@15
      kvt(windowed("E", 105, 115), "0+3+4+6+5+9", 115),
      // E@6
      kvt(windowed("E", 106, 116), "0+4", 106),
      //E@13
      kvt(windowed("E", 106, 116), "0+4+6", 113),
      //E@10
      kvt(windowed("E", 106, 116), "0+4+6+5", 113),
      //E@15
      kvt(windowed("E", 106, 116), "0+4+6+5+9", 115),
      //E@13
      kvt(windowed("E", 107, 117), "0+6", 113),
      //E@10
      kvt(windowed("E", 107, 117), "0+6+5", 113),
      //E@15
      kvt(windowed("E", 107, 117), "0+6+5+9", 115),
      //E@10
      kvt(windowed("E", 111, 121), "0+6", 113),
      //E@15
      kvt(windowed("E", 111, 121), "0+6+9", 115),
      //E@15
      kvt(windowed("E", 114, 124), "0+9", 115),
    ]);
  });

  it("testJoin", () => {
    const builder = new StreamsBuilder();
    const grace = 100;
    const aggregated = (topic: string, store: string) =>
      builder
        .stream(topic, { key: STRING, value: STRING })
        .groupByKey({ key: STRING, value: STRING })
        .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, grace))
        .aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as(store, { value: STRING, retentionMs: 50000 }));
    const processors = [
      new MockApiProcessorSupplier<Windowed<string>, string>(),
      new MockApiProcessorSupplier<Windowed<string>, string>(),
      new MockApiProcessorSupplier<Windowed<string>, string | null>(),
    ];
    const table1 = aggregated("topic1", "store1");
    const table2 = aggregated("topic2", "store2");
    table1.toStream().process(processors[0]!.supplier);
    table2.toStream().process(processors[1]!.supplier);
    table1
      .join(table2, (p1, p2) => `${p1}%${p2}`)
      .toStream()
      .process(processors[2]!.supplier);
    const driver = new TopologyTestDriver(build(builder, "topic1", "topic2"));
    const inputTopic1 = new TestInputTopic(driver, "topic1", STRING, STRING);
    const inputTopic2 = new TestInputTopic(driver, "topic2", STRING, STRING);
    inputTopic1.pipeInput("A", "1", 10);
    inputTopic1.pipeInput("B", "2", 11);
    inputTopic1.pipeInput("C", "3", 12);
    processors[0]!.checkAndClearProcessResult(
      // left windows created by the first set of records to table 1
      kvt(windowed("A", 0, 10), "0+1", 10),
      kvt(windowed("B", 1, 11), "0+2", 11),
      kvt(windowed("C", 2, 12), "0+3", 12),
    );
    processors[1]!.checkAndClearProcessResult();
    processors[2]!.checkAndClearProcessResult();

    inputTopic1.pipeInput("A", "1", 15);
    inputTopic1.pipeInput("B", "2", 16);
    inputTopic1.pipeInput("C", "3", 19);
    processors[0]!.checkAndClearProcessResult(
      // right windows from previous records are created, and left windows from new records to table 1
      kvt(windowed("A", 11, 21), "0+1", 15),
      kvt(windowed("A", 5, 15), "0+1+1", 15),
      kvt(windowed("B", 12, 22), "0+2", 16),
      kvt(windowed("B", 6, 16), "0+2+2", 16),
      kvt(windowed("C", 13, 23), "0+3", 19),
      kvt(windowed("C", 9, 19), "0+3+3", 19),
    );
    processors[1]!.checkAndClearProcessResult();
    processors[2]!.checkAndClearProcessResult();

    inputTopic2.pipeInput("A", "a", 10);
    inputTopic2.pipeInput("C", "c", 12);
    processors[0]!.checkAndClearProcessResult();
    processors[1]!.checkAndClearProcessResult(
      // left windows from first set of records sent to table 2
      kvt(windowed("A", 0, 10), "0+a", 10),
      kvt(windowed("C", 2, 12), "0+c", 12),
    );
    processors[2]!.checkAndClearProcessResult(
      // set of join windows from windows created by table 1 and table 2
      kvt(windowed("A", 0, 10), "0+1%0+a", 10),
      kvt(windowed("C", 2, 12), "0+3%0+c", 12),
    );

    inputTopic2.pipeInput("A", "a", 15);
    inputTopic2.pipeInput("B", "b", 16);
    inputTopic2.pipeInput("C", "c", 17);
    processors[0]!.checkAndClearProcessResult();
    processors[1]!.checkAndClearProcessResult(
      // right windows from previous records are created (where applicable), and left windows from new records to table 2
      kvt(windowed("A", 11, 21), "0+a", 15),
      kvt(windowed("A", 5, 15), "0+a+a", 15),
      kvt(windowed("B", 6, 16), "0+b", 16),
      kvt(windowed("C", 13, 23), "0+c", 17),
      kvt(windowed("C", 7, 17), "0+c+c", 17),
    );
    processors[2]!.checkAndClearProcessResult(
      // set of join windows from windows created by table 1 and table 2
      kvt(windowed("A", 11, 21), "0+1%0+a", 15),
      kvt(windowed("A", 5, 15), "0+1+1%0+a+a", 15),
      kvt(windowed("B", 6, 16), "0+2+2%0+b", 16),
      kvt(windowed("C", 13, 23), "0+3%0+c", 19),
    );
  });

  it("shouldLogAndMeterWhenSkippingNullKey", () => {
    const { driver, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 100),
      (grouped) => grouped.aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("topic1-Canonized", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput(null, "1");
    // Kafka logs "Skipping record due to null key or value" and counts it as dropped.
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldLogAndMeterWhenSkippingExpiredWindowByGrace", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("topic", { key: STRING, value: STRING })
      .groupByKey({ key: STRING, value: STRING })
      .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 90))
      .aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store", { value: STRING, retentionMs: 50000 }))
      .toStream()
      .map((key, value) => ({ key: windowedString(key), value }))
      .to("output", { key: STRING, value: STRING });
    const driver = new TopologyTestDriver(build(builder, "topic", "output"));
    const inputTopic = new TestInputTopic(driver, "topic", STRING, STRING);
    inputTopic.pipeInput("k", "100", 200);
    inputTopic.pipeInput("k", "0", 100);
    inputTopic.pipeInput("k", "1", 101);
    inputTopic.pipeInput("k", "2", 102);
    inputTopic.pipeInput("k", "3", 103);
    inputTopic.pipeInput("k", "4", 104);
    inputTopic.pipeInput("k", "5", 105);
    inputTopic.pipeInput("k", "6", 15);
    inputTopic.pipeInput("k", "101", 300);
    inputTopic.pipeInput("k", "102", 400);
    expect(droppedRecordsTotal(driver)).toBe(7);
    const outputTopic = new TestOutputTopic(driver, "output", STRING, STRING);
    expect(outputTopic.readRecord()).toEqual(kvt("[k@190/200]", "0+100", 200));
    expect(outputTopic.readRecord()).toEqual(kvt("[k@290/300]", "0+101", 300));
    expect(outputTopic.readRecord()).toEqual(kvt("[k@390/400]", "0+102", 400));
    expect(outputTopic.isEmpty()).toBe(true);
  });

  it("testAggregateRandomInput", () => {
    const input: [string, number][] = [
      ["A", 10],
      ["B", 15],
      ["C", 16],
      ["D", 18],
      ["E", 30],
      ["F", 40],
      ["G", 55],
      ["H", 56],
      ["I", 58],
      ["J", 58],
      ["K", 62],
      ["L", 63],
      ["M", 63],
      ["N", 63],
      ["O", 76],
      ["P", 77],
      ["Q", 80],
      ["R", 2],
      ["S", 3],
      ["T", 5],
      ["U", 8],
    ];
    const expected = new Map<number, string>([
      [0, vat("ARSTU", 10)],
      [3, vat("ASTU", 10)],
      [4, vat("ATU", 10)],
      [5, vat("ABTU", 15)],
      [6, vat("ABCU", 16)],
      [8, vat("ABCDU", 18)],
      [9, vat("ABCD", 18)],
      [11, vat("BCD", 18)],
      [16, vat("CD", 18)],
      [17, vat("D", 18)],
      [20, vat("E", 30)],
      [30, vat("EF", 40)],
      [31, vat("F", 40)],
      [45, vat("G", 55)],
      [46, vat("GH", 56)],
      [48, vat("GHIJ", 58)],
      [52, vat("GHIJK", 62)],
      [53, vat("GHIJKLMN", 63)],
      [56, vat("HIJKLMN", 63)],
      [57, vat("IJKLMN", 63)],
      [59, vat("KLMN", 63)],
      [63, vat("LMN", 63)],
      [66, vat("O", 76)],
      [67, vat("OP", 77)],
      [70, vat("OPQ", 80)],
      [77, vat("PQ", 80)],
      [78, vat("Q", 80)],
      [171, vat("V", 181)],
    ]);
    // Kafka shuffles with a random seed; here a handful of fixed seeds, so a failure reproduces.
    for (const seed of [1, 7, 42, 1234, 99991]) {
      let state = seed;
      const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
      const shuffled = [...input];
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      // The aggregator sorts its characters, so a window's value does not depend on the order of its records.
      const { supplier, inputTopic } = setUp(
        SlidingWindows.ofTimeDifferenceAndGrace(10, 100),
        (grouped) =>
          grouped.aggregate(
            () => "",
            (_key, value, aggregate) => [...(aggregate + value)].sort().join(""),
            Materialized.as("store", { value: STRING, retentionMs: 50000 }),
          ),
        "topic1",
      );
      for (const [value, timestamp] of shuffled) inputTopic.pipeInput("A", value, timestamp);
      inputTopic.pipeInput("A", "V", 181);
      const results = new Map<number, string>();
      for (const entry of supplier.processed) results.set(entry.key.window.start, vat(entry.value, entry.timestamp));
      expect({ seed, results }).toEqual({ seed, results: expected });
    }
  });
});

describe("KStreamSlidingWindowAggregateTest ON_WINDOW_CLOSE", () => {
  const onClose = (grouped: TimeWindowedKStream<string, string>) => grouped.emitStrategy(EmitStrategy.onWindowClose());

  it("testAggregateSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 5),
      (grouped) => onClose(grouped).aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("store-name", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", "2", 10);
    inputTopic.pipeInput("A", "3", 14);
    inputTopic.pipeInput("A", "4", 15);
    inputTopic.pipeInput("A", "5", 20);
    inputTopic.pipeInput("A", "6", 22);
    inputTopic.pipeInput("A", "7", 30);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [0, vats(vat("0+1+2", 10))],
        [4, vats(vat("0+1+2+3", 14))],
        [5, vats(vat("0+1+2+3+4", 15))],
        [10, vats(vat("0+1+2+3+4+5", 20))],
        [11, vats(vat("0+3+4+5", 20))],
        [12, vats(vat("0+3+4+5+6", 22))],
      ]),
    );
  });

  it("testReduceSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(10, 5),
      (grouped) => onClose(grouped).reduce(STRING_ADDER, Materialized.as("store-name")),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", "2", 14);
    inputTopic.pipeInput("A", "3", 15);
    inputTopic.pipeInput("A", "4", 22);
    inputTopic.pipeInput("A", "5", 26);
    inputTopic.pipeInput("A", "6", 30);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [0, vats(vat("1", 10))],
        [4, vats(vat("1+2", 14))],
        [5, vats(vat("1+2+3", 15))],
        [11, vats(vat("2+3", 15))],
        [12, vats(vat("2+3+4", 22))],
      ]),
    );
  });

  it("testEarlyRecordsSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(50, 0),
      (grouped) => onClose(grouped).aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("topic-Canonized", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 5);
    inputTopic.pipeInput("A", "3", 6);
    inputTopic.pipeInput("A", "4", 3);
    inputTopic.pipeInput("A", "5", 13);
    inputTopic.pipeInput("A", "6", 10);
    inputTopic.pipeInput("A", "7", 70);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [0, vats(vat("0+1+2+3+4+5+6", 13))],
        [1, vats(vat("0+2+3+4+5+6", 13))],
        [4, vats(vat("0+2+3+5+6", 13))],
        [6, vats(vat("0+3+5+6", 13))],
        [7, vats(vat("0+5+6", 13))],
        [11, vats(vat("0+5", 13))],
      ]),
    );
  });

  it("testEarlyRecordsRepeatedInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceAndGrace(5, 0),
      (grouped) => onClose(grouped).aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("topic-Canonized", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 2);
    inputTopic.pipeInput("A", "3", 4);
    inputTopic.pipeInput("A", "4", 0);
    inputTopic.pipeInput("A", "5", 2);
    inputTopic.pipeInput("A", "6", 2);
    inputTopic.pipeInput("A", "7", 0);
    inputTopic.pipeInput("A", "8", 7);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [0, vats(vat("0+1+2+3+4+5+6+7", 4))],
        [1, vats(vat("0+2+3+5+6", 4))],
      ]),
    );
  });

  it("testEarlyNoGracePeriodSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(50),
      (grouped) => onClose(grouped).aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("topic-Canonized", { value: STRING })),
      "topic",
    );
    // all events are considered as early events since record timestamp is less than time difference of the window
    inputTopic.pipeInput("A", "1", 0);
    inputTopic.pipeInput("A", "2", 5);
    inputTopic.pipeInput("A", "3", 6);
    inputTopic.pipeInput("A", "4", 3);
    inputTopic.pipeInput("A", "5", 13);
    inputTopic.pipeInput("A", "6", 10);
    inputTopic.pipeInput("A", "6", 70);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [0, vats(vat("0+1+2+3+4+5+6", 13))],
        [1, vats(vat("0+2+3+4+5+6", 13))],
        [4, vats(vat("0+2+3+5+6", 13))],
        [6, vats(vat("0+3+5+6", 13))],
        [7, vats(vat("0+5+6", 13))],
        [11, vats(vat("0+5", 13))],
      ]),
    );
  });

  it("testNoGracePeriodSmallInput", () => {
    const { supplier, inputTopic } = setUp(
      SlidingWindows.ofTimeDifferenceWithNoGrace(50),
      (grouped) => onClose(grouped).aggregate(STRING_INIT, TOSTRING_ADDER, Materialized.as("topic-Canonized", { value: STRING })),
      "topic",
    );
    inputTopic.pipeInput("A", "1", 100);
    inputTopic.pipeInput("A", "2", 105);
    inputTopic.pipeInput("A", "3", 106);
    inputTopic.pipeInput("A", "4", 103);
    inputTopic.pipeInput("A", "5", 113);
    inputTopic.pipeInput("A", "6", 110);
    expect(gatherOutput(supplier)).toEqual(
      new Map([
        [50, vats(vat("0+1", 100))],
        [55, vats(vat("0+1+2", 105))],
        [56, vats(vat("0+1+2+3+4", 106))],
      ]),
    );
  });
});
