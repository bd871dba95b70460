/**
 * Ported from Kafka Streams' KTableAggregateTest: `KTable.groupBy` then `aggregate`/`count`, through
 * the repartition topic — an update subtracts the old value from its old group and adds the new
 * value to its new group, each result stamped with the later of the update's and the aggregate's
 * timestamps; from a versioned table, out-of-order updates are ignored. Not ported: testShouldSendTransientStateWhenUpgrading (no `upgrade.from` setting:
 * there is no older Edge Streams to upgrade from) and testNoEqualsAndNotSameObject (Java's
 * `equals`: Edge Streams compares groups by their serialized key, so two keys that serialize alike
 * are one group, the case testNoEqualsAndSameObject checks).
 */
import { describe, expect, it } from "vitest";
import { Materialized, Serdes, StreamsBuilder, Stores, TopologyTestDriver, type KeyValue } from "../../../src/streams";
import { build, kvt, MockApiProcessorSupplier, STRING, STRING_INIT, TestInputTopic, TestOutputTopic, toStringAdder } from "./support";

const consumed = { key: STRING, value: STRING };
const stringSerialized = { key: STRING, value: STRING };
const TOSTRING_ADDER = toStringAdder("+");
const TOSTRING_REMOVER = toStringAdder("-");
/** `MockMapper.noOpKeyValueMapper()` and `selectValueKeyValueMapper()`. */
const noOpKeyValueMapper = <K, V>(key: K, value: V): KeyValue<K, V> => ({ key, value });
const selectValueKeyValueMapper = <K, V>(_key: K, value: V): KeyValue<V, V> => ({ key: value, value });

function testCountHelper(builder: StreamsBuilder, input: string, supplier: MockApiProcessorSupplier<string, number | null>) {
  const driver = new TopologyTestDriver(build(builder, input));
  const inputTopic = new TestInputTopic(driver, input, STRING, STRING, 0, 0);
  inputTopic.pipeInput("A", "green", 10);
  inputTopic.pipeInput("B", "green", 9);
  inputTopic.pipeInput("A", "blue", 12);
  inputTopic.pipeInput("C", "yellow", 15);
  inputTopic.pipeInput("D", "green", 11);
  expect(supplier.processed).toEqual([
    kvt("green", 1, 10),
    kvt("green", 2, 10),
    kvt("green", 1, 12),
    kvt("blue", 1, 12),
    kvt("yellow", 1, 15),
    kvt("green", 2, 12),
  ]);
}

describe("KTableAggregateTest", () => {
  it("testAggBasic", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, string | null>();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1
      .groupBy(noOpKeyValueMapper, stringSerialized)
      .aggregate(STRING_INIT, TOSTRING_ADDER, TOSTRING_REMOVER, Materialized.as("topic1-Canonized", { value: STRING }));
    table2.toStream().process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("B", "2", 15);
    inputTopic.pipeInput("A", "3", 20);
    inputTopic.pipeInput("B", "4", 18);
    inputTopic.pipeInput("C", "5", 5);
    inputTopic.pipeInput("D", "6", 25);
    inputTopic.pipeInput("B", "7", 15);
    inputTopic.pipeInput("C", "8", 10);
    expect(supplier.processed).toEqual([
      kvt("A", "0+1", 10),
      kvt("B", "0+2", 15),
      kvt("A", "0+1-1+3", 20),
      kvt("B", "0+2-2+4", 18),
      kvt("C", "0+5", 5),
      kvt("D", "0+6", 25),
      kvt("B", "0+2-2+4-4+7", 18),
      kvt("C", "0+5-5+8", 10),
    ]);
  });

  it("testAggRepartition", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, string | null>();
    const table1 = builder.table("topic1", consumed);
    const table2 = table1
      .groupBy((key, value) => {
        switch (key) {
          case "null":
            return { key: null, value };
          case "NULL":
            return null;
          default:
            return { key: value, value };
        }
      }, stringSerialized)
      .aggregate(STRING_INIT, TOSTRING_ADDER, TOSTRING_REMOVER, Materialized.as("topic1-Canonized", { value: STRING }));
    table2.toStream().process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", null, 15);
    inputTopic.pipeInput("A", "1", 12);
    inputTopic.pipeInput("B", "2", 20);
    inputTopic.pipeInput("null", "3", 25);
    inputTopic.pipeInput("B", "4", 23);
    inputTopic.pipeInput("NULL", "5", 24);
    inputTopic.pipeInput("B", "7", 22);
    expect(supplier.processed).toEqual([
      kvt("1", "0+1", 10),
      kvt("1", "0+1-1", 15),
      kvt("1", "0+1-1+1", 15),
      kvt("2", "0+2", 20),
      kvt("2", "0+2-2", 23),
      kvt("4", "0+4", 23),
      kvt("4", "0+4-4", 23),
      kvt("7", "0+7", 22),
    ]);
  });

  it("testCount", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    builder
      .table("count-test-input", consumed)
      .groupBy(selectValueKeyValueMapper, stringSerialized)
      .count(Materialized.as("count"))
      .toStream()
      .process(supplier.supplier);
    testCountHelper(builder, "count-test-input", supplier);
  });

  it("testCountWithInternalStore", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    builder.table("count-test-input", consumed).groupBy(selectValueKeyValueMapper, stringSerialized).count().toStream().process(supplier.supplier);
    testCountHelper(builder, "count-test-input", supplier);
  });

  it("testRemoveOldBeforeAddNew", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, string | null>();
    builder
      .table("count-test-input", consumed)
      .groupBy((key) => ({ key: key.charAt(0), value: key.charAt(1) }), stringSerialized)
      .aggregate(
        () => "",
        (_aggKey, value, aggregate) => aggregate + value,
        (_key, value, aggregate) => aggregate.replaceAll(value, ""),
        Materialized.as("someStore", { value: Serdes.string() }),
      )
      .toStream()
      .process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "count-test-input"));
    const inputTopic = new TestInputTopic(driver, "count-test-input", STRING, STRING, 0, 0);
    inputTopic.pipeInput("11", "A", 10);
    inputTopic.pipeInput("12", "B", 8);
    inputTopic.pipeInput("11", null, 12);
    inputTopic.pipeInput("12", "C", 6);
    expect(supplier.processed).toEqual([kvt("1", "1", 10), kvt("1", "12", 10), kvt("1", "2", 12), kvt("1", "2", 12)]);
  });

  /** Kafka's testUpgradeFromConfig without `upgrade.from`: the key does not change. */
  it("testShouldNotSendTransientStateIfNotUpgrading", () => {
    const builder = new StreamsBuilder();
    builder
      .table("input-topic", { key: STRING, value: STRING })
      .groupBy((key, value) => ({ key, value }), { key: STRING, value: STRING })
      .count()
      .toStream()
      .to("output-topic", { key: STRING, value: Serdes.number() });
    const driver = new TopologyTestDriver(build(builder, "input-topic", "output-topic"));
    const inputTopic = new TestInputTopic(driver, "input-topic", STRING, STRING, 0, 0);
    const outputTopic = new TestOutputTopic(driver, "output-topic", STRING, Serdes.number());
    inputTopic.pipeInput("1", "", 8);
    inputTopic.pipeInput("1", "", 9);
    expect(outputTopic.readRecordsToList()).toEqual([kvt("1", 1, 8), kvt("1", 1, 9)]);
  });

  it("testNoEqualsAndSameObject", () => {
    // `NoEqualsImplSerde`: an object wrapping a string, written as the string.
    const noEqualsImplSerde = Serdes.from<{ x: string }>(
      (value) => value.x,
      (text) => ({ x: text }),
    );
    const builder = new StreamsBuilder();
    builder
      .table("input-topic", { key: noEqualsImplSerde, value: noEqualsImplSerde })
      .groupBy((k, v) => ({ key: k, value: v }), { key: noEqualsImplSerde, value: noEqualsImplSerde })
      .count()
      .toStream()
      .to("output-topic", { key: noEqualsImplSerde, value: Serdes.number() });
    const driver = new TopologyTestDriver(build(builder, "input-topic", "output-topic"));
    const inputTopic = new TestInputTopic(driver, "input-topic", noEqualsImplSerde, noEqualsImplSerde, 0, 0);
    const outputTopic = new TestOutputTopic(driver, "output-topic", noEqualsImplSerde, Serdes.number());
    const a = { x: "1" };
    const b = { x: "1" };
    expect(a).not.toBe(b);
    inputTopic.pipeInput(a, a, 8);
    inputTopic.pipeInput(b, b, 9);
    expect(outputTopic.readRecordsToList().map((r) => ({ ...r, key: r.key!.x }))).toEqual([kvt("1", 1, 8), kvt("1", 1, 9)]);
  });

  it("testAggOfVersionedStore", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, string | null>();
    const versionedMaterialize = Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore("versioned", 5 * 60_000));
    const table1 = builder.table("topic1", consumed, versionedMaterialize);
    const table2 = table1
      .groupBy((key, value): KeyValue<string | null, string> | null => {
        switch (key) {
          case "null":
            return { key: null, value };
          case "NULL":
            return null;
          default:
            return { key: value, value };
        }
      }, stringSerialized)
      .aggregate(STRING_INIT, TOSTRING_ADDER, TOSTRING_REMOVER, Materialized.as("topic1-Canonized", { value: STRING }));
    table2.toStream().process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "topic1"));
    const inputTopic = new TestInputTopic(driver, "topic1", STRING, STRING, 0, 0);
    inputTopic.pipeInput("A", "1", 10);
    inputTopic.pipeInput("A", null, 15);
    inputTopic.pipeInput("A", "1", 12); // out-of-order record will be ignored
    inputTopic.pipeInput("B", "2", 20);
    inputTopic.pipeInput("null", "3", 25);
    inputTopic.pipeInput("B", "4", 23);
    inputTopic.pipeInput("NULL", "5", 24);
    inputTopic.pipeInput("B", "7", 22); // out-of-order record will be ignored
    expect(supplier.processed).toEqual([kvt("1", "0+1", 10), kvt("1", "0+1-1", 15), kvt("2", "0+2", 20), kvt("2", "0+2-2", 23), kvt("4", "0+4", 23)]);
  });

  it("testCountOfVersionedStore", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, number | null>();
    const versionedMaterialize = Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore("versioned", 5 * 60_000));
    builder
      .table("count-test-input", consumed, versionedMaterialize)
      .groupBy(selectValueKeyValueMapper, stringSerialized)
      .count()
      .toStream()
      .process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "count-test-input"));
    const inputTopic = new TestInputTopic(driver, "count-test-input", STRING, STRING, 0, 0);
    inputTopic.pipeInput("A", "green", 10);
    inputTopic.pipeInput("B", "green", 9);
    inputTopic.pipeInput("A", "blue", 12);
    inputTopic.pipeInput("A", "blue", 11); // out-of-order record will be ignored
    inputTopic.pipeInput("C", "yellow", 15);
    inputTopic.pipeInput("D", "green", 11);
    expect(supplier.processed).toEqual([
      kvt("green", 1, 10),
      kvt("green", 2, 10),
      kvt("green", 1, 12),
      kvt("blue", 1, 12),
      kvt("yellow", 1, 15),
      kvt("green", 2, 12),
    ]);
  });
});
