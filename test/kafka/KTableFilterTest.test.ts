/**
 * Ported from Kafka Streams' KTableFilterTest (caching disabled, as Kafka's test configures it).
 * A filter keeps its input's timestamp, and a materialized filter stores its rows with it.
 * Kafka's `Change(new, null)` updates are the new values here. Not ported: the tests of sending
 * old values and of skipping duplicate tombstones downstream of a materialized or versioned
 * table (doTestSendingOldValue, shouldSkipNull…, shouldNotSkipNullIfVersionedUpstream): Edge
 * Streams' table updates carry no old values (see the README's differences).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver, type KTable } from "../../src/streams";
import { build, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const predicate = (_key: string, value: number) => value % 2 === 0;
const consumed = { key: STRING, value: INTEGER };

function doTestKTable(builder: StreamsBuilder, table2: KTable<string, number, null>, table3: KTable<string, number, null>, topic: string) {
  const processors = [new MockApiProcessorSupplier<string, number | null>(), new MockApiProcessorSupplier<string, number | null>()];
  table2.toStream().process(processors[0]!.supplier);
  table3.toStream().process(processors[1]!.supplier);
  const driver = new TopologyTestDriver(build(builder, topic));
  const inputTopic = new TestInputTopic(driver, topic, STRING, INTEGER, 0, 0);
  inputTopic.pipeInput("A", 1, 10);
  inputTopic.pipeInput("B", 2, 5);
  inputTopic.pipeInput("C", 3, 8);
  inputTopic.pipeInput("D", 4, 14);
  inputTopic.pipeInput("A", null, 18);
  inputTopic.pipeInput("B", null, 15);
  processors[0]!.checkAndClearProcessResult(kvt("A", null, 10), kvt("B", 2, 5), kvt("C", null, 8), kvt("D", 4, 14), kvt("A", null, 18), kvt("B", null, 15));
  processors[1]!.checkAndClearProcessResult(kvt("A", 1, 10), kvt("B", null, 5), kvt("C", 3, 8), kvt("D", null, 14), kvt("A", null, 18), kvt("B", null, 15));
}

function doTestValueGetter(driver: TopologyTestDriver, topic1: string) {
  const inputTopic = new TestInputTopic(driver, topic1, STRING, INTEGER, 0, 0);
  const getter2 = (key: string) => driver.getWithTimestamp<string, number>("store2", key) ?? null;
  const getter3 = (key: string) => driver.getWithTimestamp<string, number>("store3", key) ?? null;
  const make = (value: number, timestamp: number) => ({ value, timestamp });

  inputTopic.pipeInput("A", 1, 5);
  inputTopic.pipeInput("B", 1, 10);
  inputTopic.pipeInput("C", 1, 15);
  expect(getter2("A")).toBeNull();
  expect(getter2("B")).toBeNull();
  expect(getter2("C")).toBeNull();
  expect(getter3("A")).toEqual(make(1, 5));
  expect(getter3("B")).toEqual(make(1, 10));
  expect(getter3("C")).toEqual(make(1, 15));

  inputTopic.pipeInput("A", 2, 10);
  inputTopic.pipeInput("B", 2, 5);
  expect(getter2("A")).toEqual(make(2, 10));
  expect(getter2("B")).toEqual(make(2, 5));
  expect(getter2("C")).toBeNull();
  expect(getter3("A")).toBeNull();
  expect(getter3("B")).toBeNull();
  expect(getter3("C")).toEqual(make(1, 15));

  inputTopic.pipeInput("A", 3, 15);
  expect(getter2("A")).toBeNull();
  expect(getter2("B")).toEqual(make(2, 5));
  expect(getter2("C")).toBeNull();
  expect(getter3("A")).toEqual(make(3, 15));
  expect(getter3("B")).toBeNull();
  expect(getter3("C")).toEqual(make(1, 15));

  inputTopic.pipeInput("A", null, 10);
  inputTopic.pipeInput("B", null, 20);
  expect(getter2("A")).toBeNull();
  expect(getter2("B")).toBeNull();
  expect(getter2("C")).toBeNull();
  expect(getter3("A")).toBeNull();
  expect(getter3("B")).toBeNull();
  expect(getter3("C")).toEqual(make(1, 15));
}

function doTestNotSendingOldValue(builder: StreamsBuilder, table1: KTable<string, number>, table2: KTable<string, number, null>, topic1: string) {
  const proc1 = new MockApiProcessorSupplier<string, number | null>();
  const proc2 = new MockApiProcessorSupplier<string, number | null>();
  table1.toStream().process(proc1.supplier);
  table2.toStream().process(proc2.supplier);
  const driver = new TopologyTestDriver(build(builder, topic1));
  const inputTopic = new TestInputTopic(driver, topic1, STRING, INTEGER, 0, 0);

  inputTopic.pipeInput("A", 1, 5);
  inputTopic.pipeInput("B", 1, 10);
  inputTopic.pipeInput("C", 1, 15);
  proc1.checkAndClearProcessResult(kvt("A", 1, 5), kvt("B", 1, 10), kvt("C", 1, 15));
  proc2.checkAndClearProcessResult(kvt("A", null, 5), kvt("B", null, 10), kvt("C", null, 15));

  inputTopic.pipeInput("A", 2, 15);
  inputTopic.pipeInput("B", 2, 8);
  proc1.checkAndClearProcessResult(kvt("A", 2, 15), kvt("B", 2, 8));
  proc2.checkAndClearProcessResult(kvt("A", 2, 15), kvt("B", 2, 8));

  inputTopic.pipeInput("A", 3, 20);
  proc1.checkAndClearProcessResult(kvt("A", 3, 20));
  proc2.checkAndClearProcessResult(kvt("A", null, 20));

  inputTopic.pipeInput("A", null, 10);
  inputTopic.pipeInput("B", null, 20);
  proc1.checkAndClearProcessResult(kvt("A", null, 10), kvt("B", null, 20));
  proc2.checkAndClearProcessResult(kvt("A", null, 10), kvt("B", null, 20));
}

describe("KTableFilterTest", () => {
  it("shouldPassThroughWithoutMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate);
    const table3 = table1.filterNot(predicate);
    expect(table1.queryableStoreName).toBeUndefined();
    expect(table2.queryableStoreName).toBeUndefined();
    expect(table3.queryableStoreName).toBeUndefined();
    doTestKTable(builder, table2, table3, "topic1");
  });

  it("shouldPassThroughOnMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate, Materialized.as("store2"));
    const table3 = table1.filterNot(predicate);
    expect(table1.queryableStoreName).toBeUndefined();
    expect(table2.queryableStoreName).toBe("store2");
    expect(table3.queryableStoreName).toBeUndefined();
    doTestKTable(builder, table2, table3, "topic1");
  });

  it("shouldGetValuesOnMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate, Materialized.as("store2"));
    const table3 = table1.filterNot(predicate, Materialized.as("store3"));
    const table4 = table1.filterNot(predicate);
    expect(table1.queryableStoreName).toBeUndefined();
    expect(table2.queryableStoreName).toBe("store2");
    expect(table3.queryableStoreName).toBe("store3");
    expect(table4.queryableStoreName).toBeUndefined();
    doTestValueGetter(new TopologyTestDriver(build(builder, "topic1")), "topic1");
  });

  it("shouldNotSendOldValuesWithoutMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    doTestNotSendingOldValue(builder, table1, table1.filter(predicate), "topic1");
  });

  it("shouldNotSendOldValuesOnMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    doTestNotSendingOldValue(builder, table1, table1.filter(predicate, Materialized.as("store2")), "topic1");
  });

  it("testTypeVariance", () => {
    const numberKeyPredicate = (_key: number, _value: unknown) => false;
    const builder = new StreamsBuilder();
    builder.table<number, string>("empty").filter(numberKeyPredicate).filterNot(numberKeyPredicate).toStream().to("nirvana");
    expect(() => build(builder, "empty", "nirvana")).not.toThrow();
  });
});
