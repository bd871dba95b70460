/**
 * Ported from Kafka Streams' KGroupedTableImplTest: reduce, count and aggregate of a regrouped
 * table — the results downstream and in the materialized store, with their timestamps. In
 * shouldReduceWithInternalStoreName the store is queryable by its generated name (an aggregation's
 * store always is here; Kafka's is not without a name). Not ported: the checks of null arguments
 * (TypeScript's types rule them out).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { Materialized, Serdes, StreamsBuilder, TopologyError, TopologyTestDriver, type KGroupedTable, type KTable } from "../../../src/streams";
import { buildWithDefaultKeySerde, MockApiProcessorSupplier, STRING, STRING_ADDER, STRING_INIT, TestInputTopic, toStringAdder } from "./support";

const INVALID_STORE_NAME = "~foo bar~";
const topic = "input";
const DOUBLE = Serdes.number();
/** `MockReducer.STRING_REMOVER`, `INTEGER_ADDER` and `INTEGER_SUBTRACTOR`. */
const STRING_REMOVER = (a: string, b: string) => `${a}-${b}`;
const INTEGER_ADDER = (a: number, b: number) => a + b;
const INTEGER_SUBTRACTOR = (a: number, b: number) => a - b;
/** `(key, value) -> KeyValue.pair(key, value.intValue())`. */
const intProjection = (key: string, value: number) => ({ key, value: Math.trunc(value) });
const selectValueKeyValueMapper = (_key: string, value: string) => ({ key: value, value });

let builder: StreamsBuilder;
let groupedTable: KGroupedTable<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  groupedTable = builder.table("blah", { key: STRING, value: STRING }).groupBy(selectValueKeyValueMapper);
});

function getReducedResults(inputKTable: KTable<string, number>): MockApiProcessorSupplier<string, number | null> {
  const supplier = new MockApiProcessorSupplier<string, number | null>();
  inputKTable.toStream().process(supplier.supplier);
  return supplier;
}

function assertReduced(supplier: MockApiProcessorSupplier<string, number | null>, driver: TopologyTestDriver) {
  const inputTopic = new TestInputTopic(driver, topic, STRING, DOUBLE);
  const reducedResults = () => supplier.lastValueAndTimestampPerKey();
  inputTopic.pipeInput("A", 1.1, 10);
  inputTopic.pipeInput("B", 2.2, 11);
  expect(reducedResults().get('"A"')).toEqual({ value: 1, timestamp: 10 });
  expect(reducedResults().get('"B"')).toEqual({ value: 2, timestamp: 11 });
  inputTopic.pipeInput("A", 2.6, 30);
  inputTopic.pipeInput("B", 1.3, 30);
  inputTopic.pipeInput("A", 5.7, 50);
  inputTopic.pipeInput("B", 6.2, 20);
  expect(reducedResults().get('"A"')).toEqual({ value: 5, timestamp: 50 });
  expect(reducedResults().get('"B"')).toEqual({ value: 6, timestamp: 30 });
}

function processData(driver: TopologyTestDriver) {
  const inputTopic = new TestInputTopic(driver, topic, STRING, STRING);
  inputTopic.pipeInput("A", "1", 10);
  inputTopic.pipeInput("B", "1", 50);
  inputTopic.pipeInput("C", "1", 30);
  inputTopic.pipeInput("D", "2", 40);
  inputTopic.pipeInput("E", "2", 60);
}

describe("KGroupedTableImplTest", () => {
  it("shouldNotAllowInvalidStoreNameOnAggregate", () => {
    groupedTable.aggregate(STRING_INIT, toStringAdder("+"), toStringAdder("-"), Materialized.as(INVALID_STORE_NAME));
    expect(() => buildWithDefaultKeySerde(builder, STRING, "blah")).toThrow(TopologyError);
  });

  it("shouldNotAllowInvalidStoreNameOnReduce", () => {
    groupedTable.reduce(STRING_ADDER, STRING_REMOVER, Materialized.as(INVALID_STORE_NAME));
    expect(() => buildWithDefaultKeySerde(builder, STRING, "blah")).toThrow(TopologyError);
  });

  it("shouldReduce", () => {
    const reduced = builder
      .table(topic, { key: STRING, value: DOUBLE }, Materialized.as("store", { key: STRING, value: DOUBLE }))
      .groupBy(intProjection)
      .reduce(INTEGER_ADDER, INTEGER_SUBTRACTOR, Materialized.as("reduced"));
    const supplier = getReducedResults(reduced);
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "blah", topic));
    assertReduced(supplier, driver);
    expect(reduced.queryableStoreName).toBe("reduced");
  });

  it("shouldReduceWithInternalStoreName", () => {
    const reduced = builder
      .table(topic, { key: STRING, value: DOUBLE }, Materialized.as("store", { key: STRING, value: DOUBLE }))
      .groupBy(intProjection)
      .reduce(INTEGER_ADDER, INTEGER_SUBTRACTOR);
    const supplier = getReducedResults(reduced);
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "blah", topic));
    assertReduced(supplier, driver);
    // Every store of an aggregation is queryable here, by its generated name when it has no other.
    expect(reduced.queryableStoreName).toMatch(/^KTABLE-AGGREGATE-STATE-STORE-\d{10}$/);
  });

  it("shouldReduceAndMaterializeResults", () => {
    const reduced = builder
      .table(topic, { key: STRING, value: DOUBLE })
      .groupBy(intProjection)
      .reduce(INTEGER_ADDER, INTEGER_SUBTRACTOR, Materialized.as("reduce", { key: STRING, value: Serdes.number() }));
    const supplier = getReducedResults(reduced);
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "blah", topic));
    assertReduced(supplier, driver);
    expect(driver.get("reduce", "A")).toBe(5);
    expect(driver.get("reduce", "B")).toBe(6);
    expect(driver.getWithTimestamp("reduce", "A")).toEqual({ value: 5, timestamp: 50 });
    expect(driver.getWithTimestamp("reduce", "B")).toEqual({ value: 6, timestamp: 30 });
  });

  it("shouldCountAndMaterializeResults", () => {
    builder
      .table(topic, { key: STRING, value: STRING })
      .groupBy(selectValueKeyValueMapper, { key: STRING, value: STRING })
      .count(Materialized.as("count", { key: STRING, value: Serdes.number() }));
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "blah", topic));
    processData(driver);
    expect(driver.get("count", "1")).toBe(3);
    expect(driver.get("count", "2")).toBe(2);
    expect(driver.getWithTimestamp("count", "1")).toEqual({ value: 3, timestamp: 50 });
    expect(driver.getWithTimestamp("count", "2")).toEqual({ value: 2, timestamp: 60 });
  });

  it("shouldAggregateAndMaterializeResults", () => {
    builder
      .table(topic, { key: STRING, value: STRING })
      .groupBy(selectValueKeyValueMapper, { key: STRING, value: STRING })
      .aggregate(STRING_INIT, toStringAdder("+"), toStringAdder("-"), Materialized.as("aggregate", { key: STRING, value: STRING }));
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "blah", topic));
    processData(driver);
    expect(driver.get("aggregate", "1")).toBe("0+1+1+1");
    expect(driver.get("aggregate", "2")).toBe("0+2+2");
    expect(driver.getWithTimestamp("aggregate", "1")).toEqual({ value: "0+1+1+1", timestamp: 50 });
    expect(driver.getWithTimestamp("aggregate", "2")).toEqual({ value: "0+2+2", timestamp: 60 });
  });
});
