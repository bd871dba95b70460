/**
 * Ported from Kafka Streams' KTableSourceTest (streams/src/test/java/org/apache/kafka/streams/
 * kstream/internals): inputs and expected outputs as Kafka states them, through TopologyTestDriver.
 * testSendingOldValue reads the source's changes (new and old value) right after it, as Kafka's
 * does. Not ported: testKTableSourceEmitOnChange (disabled in Kafka), kTableShouldLogOnOutOfOrder
 * (a log line; the row's timestamp is checked in testValueGetter instead).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver, type Change } from "../../../src/streams";
import { addTableProcessor, build, chg, droppedRecordsTotal, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

describe("KTableSourceTest", () => {
  it("testKTable", () => {
    const builder = new StreamsBuilder();
    const topic1 = "topic1";
    const table1 = builder.table(topic1, { key: STRING, value: INTEGER });
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    table1.toStream().process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, topic1));
    const inputTopic = new TestInputTopic(driver, topic1, STRING, INTEGER);
    inputTopic.pipeInput("A", 1, 10);
    inputTopic.pipeInput("B", 2, 11);
    inputTopic.pipeInput("C", 3, 12);
    inputTopic.pipeInput("D", 4, 13);
    inputTopic.pipeInput("A", null, 14);
    inputTopic.pipeInput("B", null, 15);
    expect(supplier.processed).toEqual([kvt("A", 1, 10), kvt("B", 2, 11), kvt("C", 3, 12), kvt("D", 4, 13), kvt("A", null, 14), kvt("B", null, 15)]);
  });

  it("kTableShouldLogAndMeterOnSkippedRecords", () => {
    const builder = new StreamsBuilder();
    const topic = "topic";
    const supplier = new MockApiProcessorSupplier<string, string | null>();
    builder.table(topic, { key: STRING, value: STRING }).toStream().process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, topic));
    const inputTopic = new TestInputTopic(driver, topic, STRING, STRING, 0, 0);
    inputTopic.pipeInput(null, "value");
    // Kafka logs "Skipping record due to null key" and counts it in dropped-records.
    expect(droppedRecordsTotal(driver)).toBe(1);
    expect(supplier.processed).toEqual([]);
  });

  it("testValueGetter", () => {
    const builder = new StreamsBuilder();
    const topic1 = "topic1";
    builder.table(topic1, { key: STRING, value: STRING }, Materialized.as("store"));
    const driver = new TopologyTestDriver(build(builder, topic1));
    const inputTopic1 = new TestInputTopic(driver, topic1, STRING, STRING, 0, 0);
    const getter1 = (key: string) => driver.getWithTimestamp<string, string>("store", key) ?? null;
    const make = (value: string, timestamp: number) => ({ value, timestamp });

    inputTopic1.pipeInput("A", "01", 10);
    inputTopic1.pipeInput("B", "01", 20);
    inputTopic1.pipeInput("C", "01", 15);
    expect(getter1("A")).toEqual(make("01", 10));
    expect(getter1("B")).toEqual(make("01", 20));
    expect(getter1("C")).toEqual(make("01", 15));

    inputTopic1.pipeInput("A", "02", 30);
    inputTopic1.pipeInput("B", "02", 5);
    expect(getter1("A")).toEqual(make("02", 30));
    expect(getter1("B")).toEqual(make("02", 5));
    expect(getter1("C")).toEqual(make("01", 15));

    inputTopic1.pipeInput("A", "03", 29);
    expect(getter1("A")).toEqual(make("03", 29));
    expect(getter1("B")).toEqual(make("02", 5));
    expect(getter1("C")).toEqual(make("01", 15));

    inputTopic1.pipeInput("A", null, 50);
    inputTopic1.pipeInput("B", null, 3);
    expect(getter1("A")).toBeNull();
    expect(getter1("B")).toBeNull();
    expect(getter1("C")).toEqual(make("01", 15));
  });

  it("testNotSendingOldValue", () => {
    const builder = new StreamsBuilder();
    const topic1 = "topic1";
    const table1 = builder.table(topic1, { key: STRING, value: STRING });
    const proc1 = new MockApiProcessorSupplier<string, string | null>();
    table1.toStream().process(proc1.supplier);
    const driver = new TopologyTestDriver(build(builder, topic1));
    const inputTopic1 = new TestInputTopic(driver, topic1, STRING, STRING, 0, 0);

    // Kafka's expected records are Change(new, null): the new value, as a table update here.
    inputTopic1.pipeInput("A", "01", 10);
    inputTopic1.pipeInput("B", "01", 20);
    inputTopic1.pipeInput("C", "01", 15);
    proc1.checkAndClearProcessResult(kvt("A", "01", 10), kvt("B", "01", 20), kvt("C", "01", 15));

    inputTopic1.pipeInput("A", "02", 8);
    inputTopic1.pipeInput("B", "02", 22);
    proc1.checkAndClearProcessResult(kvt("A", "02", 8), kvt("B", "02", 22));

    inputTopic1.pipeInput("A", "03", 12);
    proc1.checkAndClearProcessResult(kvt("A", "03", 12));

    inputTopic1.pipeInput("A", null, 15);
    inputTopic1.pipeInput("B", null, 20);
    proc1.checkAndClearProcessResult(kvt("A", null, 15), kvt("B", null, 20));
  });

  it("testSendingOldValue", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", { key: STRING, value: STRING });
    table1.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(true);
    const proc1 = new MockApiProcessorSupplier<string, Change<string>>();
    addTableProcessor(table1, proc1);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic1 = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);

    inputTopic1.pipeInput("A", "01", 10);
    inputTopic1.pipeInput("B", "01", 20);
    inputTopic1.pipeInput("C", "01", 15);
    proc1.checkAndClearProcessResult(kvt("A", chg("01", null), 10), kvt("B", chg("01", null), 20), kvt("C", chg("01", null), 15));

    inputTopic1.pipeInput("A", "02", 8);
    inputTopic1.pipeInput("B", "02", 22);
    proc1.checkAndClearProcessResult(kvt("A", chg("02", "01"), 8), kvt("B", chg("02", "01"), 22));

    inputTopic1.pipeInput("A", "03", 12);
    proc1.checkAndClearProcessResult(kvt("A", chg("03", "02"), 12));

    inputTopic1.pipeInput("A", null, 15);
    inputTopic1.pipeInput("B", null, 20);
    proc1.checkAndClearProcessResult(kvt("A", chg(null, "03"), 15), kvt("B", chg(null, "02"), 20));
  });
});
