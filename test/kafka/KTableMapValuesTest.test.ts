/**
 * Ported from Kafka Streams' KTableMapValuesTest: mapValues keeps each row's timestamp, and a
 * materialized mapValues stores its rows with it. Kafka's `Change(new, null)` updates are the new
 * values here. Not ported: the tests of sending old values (Edge Streams' table updates carry none).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver } from "../../src/streams";
import { build, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const consumed = { key: STRING, value: STRING };

function doTestKTable(builder: StreamsBuilder, topic1: string, supplier: MockApiProcessorSupplier<string, number | null>) {
  const driver = new TopologyTestDriver(build(builder, topic1));
  const inputTopic1 = new TestInputTopic(driver, topic1, STRING, STRING, 0, 0);
  inputTopic1.pipeInput("A", "1", 5);
  inputTopic1.pipeInput("B", "2", 25);
  inputTopic1.pipeInput("C", "3", 20);
  inputTopic1.pipeInput("D", "4", 10);
  expect(supplier.processed).toEqual([kvt("A", 1, 5), kvt("B", 2, 25), kvt("C", 3, 20), kvt("D", 4, 10)]);
}

describe("KTableMapValuesTest", () => {
  it("testKTable", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((value) => value.charCodeAt(0) - 48);
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    table2.toStream().process(supplier.supplier);
    doTestKTable(builder, "topic1", supplier);
  });

  it("testQueryableKTable", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((value) => value.charCodeAt(0) - 48, Materialized.as("anyName", { value: INTEGER }));
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    table2.toStream().process(supplier.supplier);
    doTestKTable(builder, "topic1", supplier);
  });

  it("testQueryableValueGetter", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((s) => Number.parseInt(s, 10), Materialized.as("store2", { value: INTEGER }));
    const table3 = table1.mapValues((value) => Number.parseInt(value, 10) * -1, Materialized.as("store3", { value: INTEGER }));
    const table4 = table1.mapValues((s) => Number.parseInt(s, 10));
    expect(table2.queryableStoreName).toBe("store2");
    expect(table3.queryableStoreName).toBe("store3");
    expect(table4.queryableStoreName).toBeUndefined();

    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic1 = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);
    const getter2 = (key: string) => driver.getWithTimestamp<string, number>("store2", key) ?? null;
    const getter3 = (key: string) => driver.getWithTimestamp<string, number>("store3", key) ?? null;
    const make = (value: number, timestamp: number) => ({ value, timestamp });

    inputTopic1.pipeInput("A", "01", 50);
    inputTopic1.pipeInput("B", "01", 10);
    inputTopic1.pipeInput("C", "01", 30);
    expect(getter2("A")).toEqual(make(1, 50));
    expect(getter2("B")).toEqual(make(1, 10));
    expect(getter2("C")).toEqual(make(1, 30));
    expect(getter3("A")).toEqual(make(-1, 50));
    expect(getter3("B")).toEqual(make(-1, 10));
    expect(getter3("C")).toEqual(make(-1, 30));

    inputTopic1.pipeInput("A", "02", 25);
    inputTopic1.pipeInput("B", "02", 20);
    expect(getter2("A")).toEqual(make(2, 25));
    expect(getter2("B")).toEqual(make(2, 20));
    expect(getter2("C")).toEqual(make(1, 30));
    expect(getter3("A")).toEqual(make(-2, 25));
    expect(getter3("B")).toEqual(make(-2, 20));
    expect(getter3("C")).toEqual(make(-1, 30));

    inputTopic1.pipeInput("A", "03", 35);
    expect(getter2("A")).toEqual(make(3, 35));
    expect(getter2("B")).toEqual(make(2, 20));
    expect(getter2("C")).toEqual(make(1, 30));
    expect(getter3("A")).toEqual(make(-3, 35));
    expect(getter3("B")).toEqual(make(-2, 20));
    expect(getter3("C")).toEqual(make(-1, 30));

    inputTopic1.pipeInput("A", null, 1);
    expect(getter2("A")).toBeNull();
    expect(getter2("B")).toEqual(make(2, 20));
    expect(getter2("C")).toEqual(make(1, 30));
    expect(getter3("A")).toBeNull();
    expect(getter3("B")).toEqual(make(-2, 20));
    expect(getter3("C")).toEqual(make(-1, 30));
  });

  it("testNotSendingOldValue", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((s) => Number.parseInt(s, 10));
    const proc = new MockApiProcessorSupplier<string, number | null>();
    table2.toStream().process(proc.supplier);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic1 = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);

    inputTopic1.pipeInput("A", "01", 5);
    inputTopic1.pipeInput("B", "01", 10);
    inputTopic1.pipeInput("C", "01", 15);
    proc.checkAndClearProcessResult(kvt("A", 1, 5), kvt("B", 1, 10), kvt("C", 1, 15));

    inputTopic1.pipeInput("A", "02", 10);
    inputTopic1.pipeInput("B", "02", 8);
    proc.checkAndClearProcessResult(kvt("A", 2, 10), kvt("B", 2, 8));

    inputTopic1.pipeInput("A", "03", 20);
    proc.checkAndClearProcessResult(kvt("A", 3, 20));

    inputTopic1.pipeInput("A", null, 30);
    proc.checkAndClearProcessResult(kvt("A", null, 30));
  });
});
