/**
 * Ported from Kafka Streams' KGroupedStreamImplTest: the results of count, reduce and aggregate
 * (plain, time-windowed, sliding and session windows), with Kafka's timestamps — in the store
 * (`getTimestampedKeyValueStore`) and on the results. Not ported: the checks of null arguments
 * (TypeScript's types rule them out), cogroup and the store-supplier variants (not in Edge Streams).
 */
import { beforeEach, describe, expect, it } from "vitest";
import {
  Materialized,
  SessionWindows,
  SlidingWindows,
  StreamsBuilder,
  TimeWindows,
  TopologyError,
  TopologyTestDriver,
  type KGroupedStream,
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
  toStringAdder,
  compareStrings,
} from "./support";

const TOPIC = "topic";
const INVALID_STORE_NAME = "~foo bar~";
let builder: StreamsBuilder;
let groupedStream: KGroupedStream<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  groupedStream = builder.stream(TOPIC, { key: STRING, value: STRING }).groupByKey({ key: STRING, value: STRING });
});

const driver = () => new TopologyTestDriver(build(builder, TOPIC));
const session = (key: string, start: number, end: number) => JSON.stringify({ key, window: { start, end } });
const windowed = (key: string, start: number, end: number): Windowed<string> => ({ key, window: { start, end } });

function doCountSlidingWindows(supplier: MockApiProcessorSupplier<Windowed<string>, number>) {
  const inputTopic = new TestInputTopic(driver(), TOPIC, STRING, STRING);
  inputTopic.pipeInput("1", "A", 500);
  inputTopic.pipeInput("1", "A", 999);
  inputTopic.pipeInput("1", "A", 600);
  inputTopic.pipeInput("2", "B", 500);
  inputTopic.pipeInput("2", "B", 600);
  inputTopic.pipeInput("2", "B", 700);
  inputTopic.pipeInput("3", "C", 501);
  inputTopic.pipeInput("1", "A", 1000);
  inputTopic.pipeInput("1", "A", 1000);
  inputTopic.pipeInput("2", "B", 1000);
  inputTopic.pipeInput("2", "B", 1000);
  inputTopic.pipeInput("3", "C", 600);
  // Sorted by key, then window start (a stable sort keeps each window's updates in order).
  const actual = [...supplier.processed].sort((a, b) => compareStrings(a.key.key, b.key.key) || a.key.window.start - b.key.window.start);
  expect(actual).toEqual([
    kvt(windowed("1", 0, 500), 1, 500),
    kvt(windowed("1", 100, 600), 2, 600),
    kvt(windowed("1", 499, 999), 2, 999),
    kvt(windowed("1", 499, 999), 3, 999),
    kvt(windowed("1", 500, 1000), 4, 1000),
    kvt(windowed("1", 500, 1000), 5, 1000),
    kvt(windowed("1", 501, 1001), 1, 999),
    kvt(windowed("1", 501, 1001), 2, 999),
    kvt(windowed("1", 501, 1001), 3, 1000),
    kvt(windowed("1", 501, 1001), 4, 1000),
    kvt(windowed("1", 601, 1101), 1, 999),
    kvt(windowed("1", 601, 1101), 2, 1000),
    kvt(windowed("1", 601, 1101), 3, 1000),
    kvt(windowed("1", 1000, 1500), 1, 1000),
    kvt(windowed("1", 1000, 1500), 2, 1000),

    kvt(windowed("2", 0, 500), 1, 500),
    kvt(windowed("2", 100, 600), 2, 600),
    kvt(windowed("2", 200, 700), 3, 700),
    kvt(windowed("2", 500, 1000), 4, 1000),
    kvt(windowed("2", 500, 1000), 5, 1000),
    kvt(windowed("2", 501, 1001), 1, 600),
    kvt(windowed("2", 501, 1001), 2, 700),
    kvt(windowed("2", 501, 1001), 3, 1000),
    kvt(windowed("2", 501, 1001), 4, 1000),
    kvt(windowed("2", 601, 1101), 1, 700),
    kvt(windowed("2", 601, 1101), 2, 1000),
    kvt(windowed("2", 601, 1101), 3, 1000),
    kvt(windowed("2", 701, 1201), 1, 1000),
    kvt(windowed("2", 701, 1201), 2, 1000),

    kvt(windowed("3", 1, 501), 1, 501),
    kvt(windowed("3", 100, 600), 2, 600),
    kvt(windowed("3", 502, 1002), 1, 600),
  ]);
}

function doAggregateSessionWindows(supplier: MockApiProcessorSupplier<Windowed<string>, number | null>) {
  const inputTopic = new TestInputTopic(driver(), TOPIC, STRING, STRING);
  inputTopic.pipeInput("1", "1", 10);
  inputTopic.pipeInput("2", "2", 15);
  inputTopic.pipeInput("1", "1", 30);
  inputTopic.pipeInput("1", "1", 70);
  inputTopic.pipeInput("1", "1", 100);
  inputTopic.pipeInput("1", "1", 90);
  const result = supplier.lastValueAndTimestampPerKey();
  expect(result.get(session("1", 10, 30))).toEqual({ value: 2, timestamp: 30 });
  expect(result.get(session("2", 15, 15))).toEqual({ value: 1, timestamp: 15 });
  expect(result.get(session("1", 70, 100))).toEqual({ value: 3, timestamp: 100 });
}

function doReduceSessionWindows(supplier: MockApiProcessorSupplier<Windowed<string>, string | null>) {
  const inputTopic = new TestInputTopic(driver(), TOPIC, STRING, STRING);
  inputTopic.pipeInput("1", "A", 10);
  inputTopic.pipeInput("2", "Z", 15);
  inputTopic.pipeInput("1", "B", 30);
  inputTopic.pipeInput("1", "A", 70);
  inputTopic.pipeInput("1", "B", 100);
  inputTopic.pipeInput("1", "C", 90);
  const result = supplier.lastValueAndTimestampPerKey();
  expect(result.get(session("1", 10, 30))).toEqual({ value: "A:B", timestamp: 30 });
  expect(result.get(session("2", 15, 15))).toEqual({ value: "Z", timestamp: 15 });
  expect(result.get(session("1", 70, 100))).toEqual({ value: "A:B:C", timestamp: 100 });
}

function processData(d: TopologyTestDriver) {
  const inputTopic = new TestInputTopic(d, TOPIC, STRING, STRING);
  inputTopic.pipeInput("1", "A", 5);
  inputTopic.pipeInput("2", "B", 1);
  inputTopic.pipeInput("1", "C", 3);
  inputTopic.pipeInput("1", "D", 10);
  inputTopic.pipeInput("3", "E", 8);
  inputTopic.pipeInput("3", "F", 9);
  inputTopic.pipeInput("3", null);
}

function doCountWindowed(supplier: MockApiProcessorSupplier<Windowed<string>, number>) {
  const inputTopic = new TestInputTopic(driver(), TOPIC, STRING, STRING);
  inputTopic.pipeInput("1", "A", 0);
  inputTopic.pipeInput("1", "A", 499);
  inputTopic.pipeInput("1", "A", 100);
  inputTopic.pipeInput("2", "B", 0);
  inputTopic.pipeInput("2", "B", 100);
  inputTopic.pipeInput("2", "B", 200);
  inputTopic.pipeInput("3", "C", 1);
  inputTopic.pipeInput("1", "A", 500);
  inputTopic.pipeInput("1", "A", 500);
  inputTopic.pipeInput("2", "B", 500);
  inputTopic.pipeInput("2", "B", 500);
  inputTopic.pipeInput("3", "B", 100);
  expect(supplier.processed).toEqual([
    kvt(windowed("1", 0, 500), 1, 0),
    kvt(windowed("1", 0, 500), 2, 499),
    kvt(windowed("1", 0, 500), 3, 499),
    kvt(windowed("2", 0, 500), 1, 0),
    kvt(windowed("2", 0, 500), 2, 100),
    kvt(windowed("2", 0, 500), 3, 200),
    kvt(windowed("3", 0, 500), 1, 1),
    kvt(windowed("1", 500, 1000), 1, 500),
    kvt(windowed("1", 500, 1000), 2, 500),
    kvt(windowed("2", 500, 1000), 1, 500),
    kvt(windowed("2", 500, 1000), 2, 500),
    kvt(windowed("3", 0, 500), 2, 100),
  ]);
}

describe("KGroupedStreamImplTest", () => {
  it("shouldNotHaveInvalidStoreNameOnReduce", () => {
    groupedStream.reduce(STRING_ADDER, Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotHaveInvalidStoreNameWithWindowedReduce", () => {
    groupedStream.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).reduce(STRING_ADDER, Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotHaveInvalidStoreNameOnAggregate", () => {
    groupedStream.aggregate(STRING_INIT, toStringAdder(), Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotHaveInvalidStoreNameOnWindowedAggregate", () => {
    groupedStream.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).aggregate(STRING_INIT, toStringAdder(), Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotHaveInvalidStoreNameWithSlidingWindowedReduce", () => {
    groupedStream.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).reduce(STRING_ADDER, Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotHaveInvalidStoreNameOnSlidingWindowedAggregate", () => {
    groupedStream.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).aggregate(STRING_INIT, toStringAdder(), Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldCountSlidingWindows", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number>();
    groupedStream
      .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(500, 2000))
      .count(Materialized.as("aggregate-by-key-windowed"))
      .toStream()
      .process(supplier.supplier);
    doCountSlidingWindows(supplier);
  });

  it("shouldCountSlidingWindowsWithInternalStoreName", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number>();
    groupedStream.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(500, 2000)).count().toStream().process(supplier.supplier);
    doCountSlidingWindows(supplier);
  });

  it("shouldAggregateSessionWindows", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number | null>();
    const table = groupedStream.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30)).aggregate(
      () => 0,
      (_aggKey, _value, aggregate) => aggregate + 1,
      (_aggKey, aggOne, aggTwo) => aggOne + aggTwo,
      Materialized.as("session-store"),
    );
    table.toStream().process(supplier.supplier);
    doAggregateSessionWindows(supplier);
    expect(table.queryableStoreName).toBe("session-store");
  });

  it("shouldAggregateSessionWindowsWithInternalStoreName", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number | null>();
    const table = groupedStream.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30)).aggregate(
      () => 0,
      (_aggKey, _value, aggregate) => aggregate + 1,
      (_aggKey, aggOne, aggTwo) => aggOne + aggTwo,
    );
    table.toStream().process(supplier.supplier);
    doAggregateSessionWindows(supplier);
  });

  it("shouldCountSessionWindows", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number | null>();
    const table = groupedStream.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30)).count(Materialized.as("session-store"));
    table.toStream().process(supplier.supplier);
    doAggregateSessionWindows(supplier);
    expect(table.queryableStoreName).toBe("session-store");
  });

  it("shouldCountSessionWindowsWithInternalStoreName", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number | null>();
    groupedStream.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30)).count().toStream().process(supplier.supplier);
    doAggregateSessionWindows(supplier);
  });

  it("shouldReduceSessionWindows", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, string | null>();
    const table = groupedStream
      .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30))
      .reduce((value1, value2) => `${value1}:${value2}`, Materialized.as("session-store"));
    table.toStream().process(supplier.supplier);
    doReduceSessionWindows(supplier);
    expect(table.queryableStoreName).toBe("session-store");
  });

  it("shouldReduceSessionWindowsWithInternalStoreName", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, string | null>();
    groupedStream
      .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30))
      .reduce((value1, value2) => `${value1}:${value2}`)
      .toStream()
      .process(supplier.supplier);
    doReduceSessionWindows(supplier);
  });

  it("shouldNotAcceptInvalidStoreNameWhenReducingSessionWindows", () => {
    groupedStream.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(30)).reduce(STRING_ADDER, Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldNotAcceptInvalidStoreNameWhenAggregatingSessionWindows", () => {
    groupedStream
      .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10))
      .aggregate(STRING_INIT, toStringAdder(), (_k, a, b) => a + b, Materialized.as(INVALID_STORE_NAME));
    expect(() => build(builder, TOPIC)).toThrow(TopologyError);
  });

  it("shouldCountAndMaterializeResults", () => {
    groupedStream.count(Materialized.as("count", { key: STRING }));
    const d = driver();
    processData(d);
    expect(d.get("count", "1")).toBe(3);
    expect(d.get("count", "2")).toBe(1);
    expect(d.get("count", "3")).toBe(2);
    expect(d.getWithTimestamp("count", "1")).toEqual({ value: 3, timestamp: 10 });
    expect(d.getWithTimestamp("count", "2")).toEqual({ value: 1, timestamp: 1 });
    expect(d.getWithTimestamp("count", "3")).toEqual({ value: 2, timestamp: 9 });
  });

  it("shouldLogAndMeasureSkipsInAggregate", () => {
    groupedStream.count(Materialized.as("count", { key: STRING }));
    const d = driver();
    processData(d);
    // Kafka logs "Skipping record due to null key or value … offset=[6]" and counts it as dropped.
    expect(droppedRecordsTotal(d)).toBe(1);
  });

  it("shouldReduceAndMaterializeResults", () => {
    groupedStream.reduce(STRING_ADDER, Materialized.as("reduce", { key: STRING, value: STRING }));
    const d = driver();
    processData(d);
    expect(d.get("reduce", "1")).toBe("A+C+D");
    expect(d.get("reduce", "2")).toBe("B");
    expect(d.get("reduce", "3")).toBe("E+F");
    expect(d.getWithTimestamp("reduce", "1")).toEqual({ value: "A+C+D", timestamp: 10 });
    expect(d.getWithTimestamp("reduce", "2")).toEqual({ value: "B", timestamp: 1 });
    expect(d.getWithTimestamp("reduce", "3")).toEqual({ value: "E+F", timestamp: 9 });
  });

  it("shouldLogAndMeasureSkipsInReduce", () => {
    groupedStream.reduce(STRING_ADDER, Materialized.as("reduce", { key: STRING, value: STRING }));
    const d = driver();
    processData(d);
    expect(droppedRecordsTotal(d)).toBe(1);
  });

  it("shouldAggregateAndMaterializeResults", () => {
    groupedStream.aggregate(STRING_INIT, toStringAdder(), Materialized.as("aggregate", { key: STRING, value: STRING }));
    const d = driver();
    processData(d);
    expect(d.get("aggregate", "1")).toBe("0+A+C+D");
    expect(d.get("aggregate", "2")).toBe("0+B");
    expect(d.get("aggregate", "3")).toBe("0+E+F");
    expect(d.getWithTimestamp("aggregate", "1")).toEqual({ value: "0+A+C+D", timestamp: 10 });
    expect(d.getWithTimestamp("aggregate", "2")).toEqual({ value: "0+B", timestamp: 1 });
    expect(d.getWithTimestamp("aggregate", "3")).toEqual({ value: "0+E+F", timestamp: 9 });
  });

  it("shouldAggregateWithDefaultSerdes", () => {
    const supplier = new MockApiProcessorSupplier<string, string>();
    groupedStream.aggregate(STRING_INIT, toStringAdder()).toStream().process(supplier.supplier);
    processData(driver());
    const last = supplier.lastValueAndTimestampPerKey();
    expect(last.get(JSON.stringify("1"))).toEqual({ value: "0+A+C+D", timestamp: 10 });
    expect(last.get(JSON.stringify("2"))).toEqual({ value: "0+B", timestamp: 1 });
    expect(last.get(JSON.stringify("3"))).toEqual({ value: "0+E+F", timestamp: 9 });
  });

  it("shouldCountWindowed", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number>();
    groupedStream.windowedBy(TimeWindows.ofSizeAndGrace(500, 100)).count(Materialized.as("aggregate-by-key-windowed")).toStream().process(supplier.supplier);
    doCountWindowed(supplier);
  });

  it("shouldCountWindowedWithInternalStoreName", () => {
    const supplier = new MockApiProcessorSupplier<Windowed<string>, number>();
    groupedStream.windowedBy(TimeWindows.ofSizeAndGrace(500, 100)).count().toStream().process(supplier.supplier);
    doCountWindowed(supplier);
  });
});
