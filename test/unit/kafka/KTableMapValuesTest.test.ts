/**
 * Ported from Kafka Streams' KTableMapValuesTest: mapValues keeps each row's timestamp, and a
 * materialized mapValues stores its rows with it. The old-value tests read the changes (new and
 * old value) right after the mapValues node, as Kafka's do: an unmaterialized mapValues asks its
 * parent for old values, a materialized one reads them from its own store.
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver, type Change, type KTable } from "../../../src/streams";
import { addTableProcessor, build, chg, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

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
    const proc = new MockApiProcessorSupplier<string, Change<number>>();
    addTableProcessor(table2, proc);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic1 = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);
    expect(table1.oldValues.sending).toBe(false);
    expect(table2.oldValues.sending).toBe(false);

    inputTopic1.pipeInput("A", "01", 5);
    inputTopic1.pipeInput("B", "01", 10);
    inputTopic1.pipeInput("C", "01", 15);
    proc.checkAndClearProcessResult(kvt("A", chg(1, null), 5), kvt("B", chg(1, null), 10), kvt("C", chg(1, null), 15));

    inputTopic1.pipeInput("A", "02", 10);
    inputTopic1.pipeInput("B", "02", 8);
    proc.checkAndClearProcessResult(kvt("A", chg(2, null), 10), kvt("B", chg(2, null), 8));

    inputTopic1.pipeInput("A", "03", 20);
    proc.checkAndClearProcessResult(kvt("A", chg(3, null), 20));

    inputTopic1.pipeInput("A", null, 30);
    proc.checkAndClearProcessResult(kvt("A", chg<number>(null, null), 30));
  });

  it("shouldEnableSendingOldValuesOnParentIfMapValuesNotMaterialized", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((s) => Number.parseInt(s, 10));
    table2.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(true);
    expect(table2.oldValues.sending).toBe(true);
    testSendingOldValues(builder, "topic1", table2);
  });

  it("shouldNotEnableSendingOldValuesOnParentIfMapValuesMaterialized", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.mapValues((s) => Number.parseInt(s, 10), Materialized.as("bob", { value: INTEGER }));
    table2.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(false);
    expect(table2.oldValues.sending).toBe(true);
    testSendingOldValues(builder, "topic1", table2);
  });
});

function testSendingOldValues(builder: StreamsBuilder, topic1: string, table2: KTable<string, number>) {
  const proc = new MockApiProcessorSupplier<string, Change<number>>();
  addTableProcessor(table2, proc);
  const driver = new TopologyTestDriver(build(builder, topic1));
  const inputTopic1 = new TestInputTopic(driver, topic1, STRING, STRING, 0, 0);

  inputTopic1.pipeInput("A", "01", 5);
  inputTopic1.pipeInput("B", "01", 10);
  inputTopic1.pipeInput("C", "01", 15);
  proc.checkAndClearProcessResult(kvt("A", chg(1, null), 5), kvt("B", chg(1, null), 10), kvt("C", chg(1, null), 15));

  inputTopic1.pipeInput("A", "02", 10);
  inputTopic1.pipeInput("B", "02", 8);
  proc.checkAndClearProcessResult(kvt("A", chg(2, 1), 10), kvt("B", chg(2, 1), 8));

  inputTopic1.pipeInput("A", "03", 20);
  proc.checkAndClearProcessResult(kvt("A", chg(3, 2), 20));

  inputTopic1.pipeInput("A", null, 30);
  proc.checkAndClearProcessResult(kvt("A", chg(null, 3), 30));
}
