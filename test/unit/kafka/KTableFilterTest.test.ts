/**
 * Ported from Kafka Streams' KTableFilterTest (caching disabled, as Kafka's test configures it).
 * A filter keeps its input's timestamp, and a materialized filter stores its rows with it. A
 * filter that sends old values (asked to, or because its parent can) drops updates whose old and
 * new values both fail it; the old-value tests read the changes right after the tables' nodes, as
 * Kafka's do — except below a versioned table, whose old values may belong to a later row
 * (shouldNotSkipNullIfVersionedUpstream); a versioned store below the filter changes nothing.
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, Stores, TopologyTestDriver, type Change, type KTable } from "../../../src/streams";
import { addTableProcessor, buildWithDefaultKeySerde, chg, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const predicate = (_key: string, value: number) => value % 2 === 0;
const consumed = { key: STRING, value: INTEGER };

function doTestKTable(builder: StreamsBuilder, table2: KTable<string, number, null>, table3: KTable<string, number, null>, topic: string) {
  const processors = [new MockApiProcessorSupplier<string, number | null>(), new MockApiProcessorSupplier<string, number | null>()];
  table2.toStream().process(processors[0]!.supplier);
  table3.toStream().process(processors[1]!.supplier);
  const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, topic));
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
  const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, topic1));
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

function doTestSendingOldValue(builder: StreamsBuilder, table1: KTable<string, number>, table2: KTable<string, number, null>, topic1: string) {
  const table1Output = new MockApiProcessorSupplier<string, Change<number>>();
  const table2Output = new MockApiProcessorSupplier<string, Change<number>>();
  addTableProcessor(table1, table1Output);
  addTableProcessor(table2, table2Output);
  const parentSendOldVals = table1.oldValues.sending;
  const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, topic1));
  const inputTopic = new TestInputTopic(driver, topic1, STRING, INTEGER, 0, 0);

  inputTopic.pipeInput("A", 1, 5);
  inputTopic.pipeInput("B", 1, 10);
  inputTopic.pipeInput("C", 1, 15);
  table1Output.checkAndClearProcessResult(kvt("A", chg(1, null), 5), kvt("B", chg(1, null), 10), kvt("C", chg(1, null), 15));
  table2Output.checkAndClearProcessResult();

  inputTopic.pipeInput("A", 2, 15);
  inputTopic.pipeInput("B", 2, 8);
  table1Output.checkAndClearProcessResult(kvt("A", chg(2, parentSendOldVals ? 1 : null), 15), kvt("B", chg(2, parentSendOldVals ? 1 : null), 8));
  table2Output.checkAndClearProcessResult(kvt("A", chg(2, null), 15), kvt("B", chg(2, null), 8));

  inputTopic.pipeInput("A", 3, 20);
  table1Output.checkAndClearProcessResult(kvt("A", chg(3, parentSendOldVals ? 2 : null), 20));
  table2Output.checkAndClearProcessResult(kvt("A", chg(null, 2), 20));

  inputTopic.pipeInput("A", null, 10);
  inputTopic.pipeInput("B", null, 20);
  table1Output.checkAndClearProcessResult(kvt("A", chg(null, parentSendOldVals ? 3 : null), 10), kvt("B", chg(null, parentSendOldVals ? 2 : null), 20));
  table2Output.checkAndClearProcessResult(kvt("B", chg(null, 2), 20));
}

function doTestSkipNullOnMaterialization(
  builder: StreamsBuilder,
  table1: KTable<string, string>,
  table2: KTable<string, string, null>,
  topic1: string,
  shouldSkip: boolean,
) {
  const table1Output = new MockApiProcessorSupplier<string, Change<string>>();
  const table2Output = new MockApiProcessorSupplier<string, Change<string>>();
  addTableProcessor(table1, table1Output);
  addTableProcessor(table2, table2Output);
  const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, topic1));
  const inputTopic = new TestInputTopic(driver, topic1, STRING, STRING, 0, 0);
  inputTopic.pipeInput("A", "reject", 5);
  inputTopic.pipeInput("B", "reject", 10);
  inputTopic.pipeInput("C", "reject", 20);
  table1Output.checkAndClearProcessResult(kvt("A", chg("reject", null), 5), kvt("B", chg("reject", null), 10), kvt("C", chg("reject", null), 20));
  if (shouldSkip) table2Output.checkAndClearProcessResult();
  else
    table2Output.checkAndClearProcessResult(kvt("A", chg<string>(null, null), 5), kvt("B", chg<string>(null, null), 10), kvt("C", chg<string>(null, null), 20));
}

/** `MockReducer.STRING_ADDER` and `STRING_REMOVER`. */
const STRING_ADDER = (a: string, b: string) => `${a}+${b}`;
const STRING_REMOVER = (a: string, b: string) => `${a}-${b}`;
const accept = (_key: string, value: string) => value.toLowerCase() === "accept";

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
    doTestValueGetter(new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "topic1")), "topic1");
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
    expect(() => buildWithDefaultKeySerde(builder, STRING, "empty", "nirvana")).not.toThrow();
  });

  it("shouldNotEnableSendingOldValuesIfNotAlreadyMaterializedAndNotForcedToMaterialize", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate);
    table2.enableSendingOldValues(false);
    expect(table2.oldValues.sending).toBe(false);
    doTestNotSendingOldValue(builder, table1, table2, "topic1");
  });

  it("shouldEnableSendOldValuesWhenNotMaterializedAlreadyButForcedToMaterialize", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate);
    table2.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(true);
    expect(table2.oldValues.sending).toBe(true);
    doTestSendingOldValue(builder, table1, table2, "topic1");
  });

  it("shouldEnableSendOldValuesWhenMaterializedAlreadyAndForcedToMaterialize", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1.filter(predicate, Materialized.as("store2"));
    table2.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(false);
    expect(table2.oldValues.sending).toBe(true);
    doTestSendingOldValue(builder, table1, table2, "topic1");
  });

  it("shouldSendOldValuesWhenEnabledOnUpStreamMaterialization", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed, Materialized.as("store2"));
    const table2 = table1.filter(predicate);
    table2.enableSendingOldValues(false);
    expect(table1.oldValues.sending).toBe(true);
    expect(table2.oldValues.sending).toBe(true);
    doTestSendingOldValue(builder, table1, table2, "topic1");
  });

  it("shouldSkipNullToRepartitionWithoutMaterialization", () => {
    // Do not explicitly set enableSendingOldValues. Let a further downstream stateful operator trigger it instead.
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", { key: STRING, value: STRING });
    const table2 = table1.filter(accept);
    table2.groupBy((key, value) => ({ key, value })).reduce(STRING_ADDER, STRING_REMOVER);
    doTestSkipNullOnMaterialization(builder, table1, table2, "topic1", true);
  });

  it("shouldSkipNullToRepartitionOnMaterialization", () => {
    // Do not explicitly set enableSendingOldValues. Let a further downstream stateful operator trigger it instead.
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", { key: STRING, value: STRING });
    const table2 = table1.filter(accept, Materialized.as("store2"));
    table2.groupBy((key, value) => ({ key, value })).reduce(STRING_ADDER, STRING_REMOVER, Materialized.as("mock-result"));
    doTestSkipNullOnMaterialization(builder, table1, table2, "topic1", true);
  });

  it("shouldNotSkipNullIfVersionedUpstream", () => {
    // stateful downstream operation enables sendOldValues, but duplicate nulls will still
    // be sent because the source table is versioned
    const builder = new StreamsBuilder();
    const versionedMaterialize = Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore("versioned", 5 * 60_000));
    const table1 = builder.table("topic1", { key: STRING, value: STRING }, versionedMaterialize);
    const table2 = table1.filter(accept);
    table2.groupBy((key, value) => ({ key, value })).reduce(STRING_ADDER, STRING_REMOVER);
    doTestSkipNullOnMaterialization(builder, table1, table2, "topic1", false);
  });

  it("shouldSkipNullIfVersionedDownstream", () => {
    // materializing the result of the filter as a versioned store does not prevent duplicate
    // tombstones from being sent, as it's whether the input table is versioned or not that
    // determines whether the optimization is enabled
    const builder = new StreamsBuilder();
    const versionedMaterialize = Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore("versioned", 5 * 60_000));
    const table1 = builder.table("topic1", { key: STRING, value: STRING }, Materialized.as("store"));
    const table2 = table1.filter(accept, versionedMaterialize);
    table2.groupBy((key, value) => ({ key, value })).reduce(STRING_ADDER, STRING_REMOVER);
    doTestSkipNullOnMaterialization(builder, table1, table2, "topic1", true);
  });
});
