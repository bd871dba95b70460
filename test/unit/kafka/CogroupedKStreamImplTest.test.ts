/**
 * Ported from Kafka Streams' CogroupedKStreamImplTest: grouped streams cogrouped into one
 * aggregate, with their results and timestamps, and where repartition topics go (checked by each
 * subtopology's topics and stores; Edge Streams' topic names carry the applicationId). Not ported:
 * the checks of null arguments (TypeScript's types rule them out), the `Named` processor names
 * (shouldNameProcessorsAndStoreBasedOnNamedParameter: Edge Streams has no `Named`) and the
 * `...WithOptimization` variants (no topology optimization).
 */
import { describe, expect, it } from "vitest";
import { Materialized, type Serde, StreamsBuilder, TopologyTestDriver } from "../../../src/streams";
import {
  buildWithDefaultKeySerde,
  INTEGER,
  kvt,
  STRING,
  STRING_INIT,
  subtopologySummary,
  TestInputTopic,
  TestOutputTopic,
  TOSTRING_JOINER,
  toStringAdder,
} from "./support";

const stringConsumed = { key: STRING, value: STRING };
const OUTPUT = "output";
const STRING_AGGREGATOR = (_key: string, value: string, aggregate: string) => aggregate + value;
const STRING_INITIALIZER = () => "";
const STRING_SUM_AGGREGATOR = (_key: string, value: string, aggregate: number) => aggregate + Number.parseInt(value, 10);
const SUM_AGGREGATOR = (_key: string, value: number, aggregate: number) => aggregate + value;
const SUM_INITIALIZER = () => 0;
const app = (name: string) => `kafka-test-${name}`;

/**
 * Kafka's `new TopologyTestDriver(builder.build())`, then a `TestInputTopic` of strings per input
 * topic (in the order given) and the `TestOutputTopic` of OUTPUT, its values read with `value`.
 */
function drive<const T extends readonly string[], V>(builder: StreamsBuilder, inputs: T, value: Serde<V>) {
  const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, ...inputs, OUTPUT));
  const topics = inputs.map((topic) => new TestInputTopic(driver, topic, STRING, STRING)) as { -readonly [I in keyof T]: TestInputTopic<string, string> };
  return [topics, new TestOutputTopic(driver, OUTPUT, STRING, value)] as const;
}

describe("CogroupedKStreamImplTest", () => {
  it("shouldNameRepartitionTopic", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const test2 = builder.stream("two", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey({ name: "repartition-test" });
    const groupedTwo = test2.groupByKey();
    const customers = groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    customers.toStream().to(OUTPUT);
    const topology = buildWithDefaultKeySerde(builder, STRING, "one", "two", OUTPUT);
    expect(subtopologySummary(topology)).toEqual([
      { sources: ["one"], sinks: [app("repartition-test-repartition")], stores: [] },
      { sources: [app("repartition-test-repartition"), "two"], sinks: [OUTPUT], stores: ["COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003"] },
    ]);
    expect(topology.subtopologies[1]!.nodes.map((n) => n.name)).toEqual([
      "KSTREAM-SOURCE-0000000001",
      "KSTREAM-SOURCE-0000000006",
      "COGROUPKSTREAM-AGGREGATE-0000000007",
      "COGROUPKSTREAM-AGGREGATE-0000000008",
      "COGROUPKSTREAM-MERGE-0000000009",
      "KTABLE-TOSTREAM-0000000010",
      "KSTREAM-SINK-0000000011",
    ]);
  });

  it("shouldInsertRepartitionsTopicForUpstreamKeyModification", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const test2 = builder.stream("two", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey();
    const groupedTwo = test2.groupByKey();
    const customers = groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER, Materialized.as("store"));
    customers.toStream().to(OUTPUT);
    expect(subtopologySummary(buildWithDefaultKeySerde(builder, STRING, "one", "two", OUTPUT))).toEqual([
      { sources: ["one"], sinks: [app("store-repartition")], stores: [] },
      { sources: [app("store-repartition"), "two"], sinks: [OUTPUT], stores: ["store"] },
    ]);
  });

  it("shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInSameCogroups", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const stream2 = builder.stream("two", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey();
    const groupedTwo = stream2.groupByKey();
    const cogroupedTwo = groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    const cogroupedOne = groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    cogroupedOne.toStream().to(OUTPUT);
    cogroupedTwo.toStream().to("OUTPUT2");
    const first = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003";
    const second = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000010";
    expect(subtopologySummary(buildWithDefaultKeySerde(builder, STRING, "one", "two", OUTPUT, "OUTPUT2"))).toEqual([
      { sources: ["one"], sinks: [app(`${first}-repartition`), app(`${second}-repartition`)], stores: [] },
      { sources: [app(`${first}-repartition`), app(`${second}-repartition`), "two"], sinks: ["OUTPUT2", OUTPUT], stores: [first, second] },
    ]);
  });

  it("shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReusedInDifferentCogroups", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const stream2 = builder.stream("two", stringConsumed);
    const stream3 = builder.stream("three", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey();
    const groupedTwo = stream2.groupByKey();
    const groupedThree = stream3.groupByKey();
    groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedThree, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    const first = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004";
    const second = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000011";
    // Kafka numbers these subtopologies 2 and 1: its ids follow the order of the sources in the topology.
    expect(subtopologySummary(buildWithDefaultKeySerde(builder, STRING, "one", "two", "three"))).toEqual([
      { sources: ["one"], sinks: [app(`${first}-repartition`), app(`${second}-repartition`)], stores: [] },
      { sources: [app(`${second}-repartition`), "two"], sinks: [], stores: [second] },
      { sources: [app(`${first}-repartition`), "three"], sinks: [], stores: [first] },
    ]);
  });

  it("shouldInsertRepartitionsTopicForUpstreamKeyModificationWithGroupedReused", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const stream2 = builder.stream("two", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey();
    const groupedTwo = stream2.groupByKey();
    groupedOne.cogroup(STRING_AGGREGATOR).cogroup(groupedTwo, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER);
    groupedOne.aggregate(STRING_INITIALIZER, STRING_AGGREGATOR);
    const cogrouped = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003";
    const aggregated = "KSTREAM-AGGREGATE-STATE-STORE-0000000010";
    expect(subtopologySummary(buildWithDefaultKeySerde(builder, STRING, "one", "two"))).toEqual([
      { sources: ["one"], sinks: [app(`${cogrouped}-repartition`), app(`${aggregated}-repartition`)], stores: [] },
      { sources: [app(`${cogrouped}-repartition`), "two"], sinks: [], stores: [cogrouped] },
      { sources: [app(`${aggregated}-repartition`)], sinks: [], stores: [aggregated] },
    ]);
  });

  it("shouldInsertRepartitionsTopicForCogroupsUsedTwice", () => {
    const builder = new StreamsBuilder();
    const stream1 = builder.stream("one", stringConsumed);
    const groupedOne = stream1.map((k, v) => ({ key: v, value: k })).groupByKey({ name: "foo" });
    const one = groupedOne.cogroup(STRING_AGGREGATOR);
    one.aggregate(STRING_INITIALIZER);
    one.aggregate(STRING_INITIALIZER);
    const topology = buildWithDefaultKeySerde(builder, STRING, "one");
    expect(subtopologySummary(topology)).toEqual([
      { sources: ["one"], sinks: [app("foo-repartition")], stores: [] },
      {
        sources: [app("foo-repartition")],
        sinks: [],
        stores: ["COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002", "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000008"],
      },
    ]);
  });

  it("shouldCogroupAndAggregateSingleKStreams", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("one", stringConsumed)
      .groupByKey()
      .cogroup(STRING_AGGREGATOR)
      .aggregate(STRING_INITIALIZER)
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic], testOutputTopic] = drive(builder, ["one"], STRING);
    testInputTopic.pipeInput("k1", "A", 0);
    testInputTopic.pipeInput("k2", "B", 0);
    testInputTopic.pipeInput("k2", "B", 0);
    testInputTopic.pipeInput("k1", "A", 0);
    expect(testOutputTopic.readRecordsToList()).toEqual([kvt("k1", "A", 0), kvt("k2", "B", 0), kvt("k2", "BB", 0), kvt("k1", "AA", 0)]);
  });

  it("testCogroupHandleNullValues", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("one", stringConsumed)
      .groupByKey()
      .cogroup(STRING_AGGREGATOR)
      .aggregate(STRING_INITIALIZER)
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic], testOutputTopic] = drive(builder, ["one"], STRING);
    testInputTopic.pipeInput("k1", "A", 0);
    testInputTopic.pipeInput("k2", "B", 0);
    testInputTopic.pipeInput("k2", null, 0);
    testInputTopic.pipeInput("k2", "B", 0);
    testInputTopic.pipeInput("k1", "A", 0);
    expect(testOutputTopic.readRecordsToList()).toEqual([kvt("k1", "A", 0), kvt("k2", "B", 0), kvt("k2", "BB", 0), kvt("k1", "AA", 0)]);
  });

  it("shouldCogroupAndAggregateTwoKStreamsWithDistinctKeys", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    grouped1
      .cogroup(STRING_AGGREGATOR)
      .cogroup(grouped2, STRING_AGGREGATOR)
      .aggregate(STRING_INITIALIZER)
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic, testInputTopic2], testOutputTopic] = drive(builder, ["one", "two"], STRING);
    testInputTopic.pipeInput("k1", "A", 0);
    testInputTopic.pipeInput("k1", "A", 1);
    testInputTopic.pipeInput("k1", "A", 10);
    testInputTopic.pipeInput("k1", "A", 100);
    testInputTopic2.pipeInput("k2", "B", 100);
    testInputTopic2.pipeInput("k2", "B", 200);
    testInputTopic2.pipeInput("k2", "B", 1);
    testInputTopic2.pipeInput("k2", "B", 500);
    testInputTopic2.pipeInput("k2", "B", 500);
    testInputTopic2.pipeInput("k2", "B", 100);
    expect(testOutputTopic.readRecordsToList()).toEqual([
      kvt("k1", "A", 0),
      kvt("k1", "AA", 1),
      kvt("k1", "AAA", 10),
      kvt("k1", "AAAA", 100),
      kvt("k2", "B", 100),
      kvt("k2", "BB", 200),
      kvt("k2", "BBB", 200),
      kvt("k2", "BBBB", 500),
      kvt("k2", "BBBBB", 500),
      kvt("k2", "BBBBBB", 500),
    ]);
  });

  it("shouldCogroupAndAggregateTwoKStreamsWithSharedKeys", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    grouped1
      .cogroup(STRING_AGGREGATOR)
      .cogroup(grouped2, STRING_AGGREGATOR)
      .aggregate(STRING_INITIALIZER)
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic, testInputTopic2], testOutputTopic] = drive(builder, ["one", "two"], STRING);
    testInputTopic.pipeInput("k1", "A", 0);
    testInputTopic.pipeInput("k2", "A", 1);
    testInputTopic.pipeInput("k1", "A", 10);
    testInputTopic.pipeInput("k2", "A", 100);
    testInputTopic2.pipeInput("k2", "B", 100);
    testInputTopic2.pipeInput("k2", "B", 200);
    testInputTopic2.pipeInput("k1", "B", 1);
    testInputTopic2.pipeInput("k2", "B", 500);
    testInputTopic2.pipeInput("k1", "B", 500);
    testInputTopic2.pipeInput("k2", "B", 500);
    testInputTopic2.pipeInput("k3", "B", 500);
    testInputTopic2.pipeInput("k2", "B", 100);
    expect(testOutputTopic.readRecordsToList().slice(0, 10)).toEqual([
      kvt("k1", "A", 0),
      kvt("k2", "A", 1),
      kvt("k1", "AA", 10),
      kvt("k2", "AA", 100),
      kvt("k2", "AAB", 100),
      kvt("k2", "AABB", 200),
      kvt("k1", "AAB", 10),
      kvt("k2", "AABBB", 500),
      kvt("k1", "AABB", 500),
      kvt("k2", "AABBBB", 500),
    ]);
  });

  it("shouldAllowDifferentOutputTypeInCoGroup", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    grouped1
      .cogroup(STRING_SUM_AGGREGATOR)
      .cogroup(grouped2, STRING_SUM_AGGREGATOR)
      .aggregate(SUM_INITIALIZER, Materialized.as("store1", { value: INTEGER }))
      .toStream()
      .to(OUTPUT, { key: STRING, value: INTEGER });
    const [[testInputTopic, testInputTopic2], testOutputTopic] = drive(builder, ["one", "two"], INTEGER);
    testInputTopic.pipeInput("k1", "1", 0);
    testInputTopic.pipeInput("k2", "1", 1);
    testInputTopic.pipeInput("k1", "1", 10);
    testInputTopic.pipeInput("k2", "1", 100);
    testInputTopic2.pipeInput("k2", "2", 100);
    testInputTopic2.pipeInput("k2", "2", 200);
    testInputTopic2.pipeInput("k1", "2", 1);
    testInputTopic2.pipeInput("k2", "2", 500);
    testInputTopic2.pipeInput("k1", "2", 500);
    testInputTopic2.pipeInput("k2", "3", 500);
    testInputTopic2.pipeInput("k3", "2", 500);
    testInputTopic2.pipeInput("k2", "2", 100);
    expect(testOutputTopic.readRecordsToList().slice(0, 10)).toEqual([
      kvt("k1", 1, 0),
      kvt("k2", 1, 1),
      kvt("k1", 2, 10),
      kvt("k2", 2, 100),
      kvt("k2", 4, 100),
      kvt("k2", 6, 200),
      kvt("k1", 4, 10),
      kvt("k2", 8, 500),
      kvt("k1", 6, 500),
      kvt("k2", 11, 500),
    ]);
  });

  it("shouldCoGroupStreamsWithDifferentInputTypes", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", { key: STRING, value: INTEGER }).groupByKey();
    grouped1
      .cogroup(STRING_SUM_AGGREGATOR)
      .cogroup(grouped2, SUM_AGGREGATOR)
      .aggregate(SUM_INITIALIZER, Materialized.as("store1", { value: INTEGER }))
      .toStream()
      .to(OUTPUT, { key: STRING, value: INTEGER });
    const driver = new TopologyTestDriver(buildWithDefaultKeySerde(builder, STRING, "one", "two", OUTPUT));
    const testInputTopic = new TestInputTopic(driver, "one", STRING, STRING);
    const testInputTopic2 = new TestInputTopic(driver, "two", STRING, INTEGER);
    const testOutputTopic = new TestOutputTopic(driver, OUTPUT, STRING, INTEGER);
    testInputTopic.pipeInput("k1", "1", 0);
    testInputTopic.pipeInput("k2", "1", 1);
    testInputTopic.pipeInput("k1", "1", 10);
    testInputTopic.pipeInput("k2", "1", 100);
    testInputTopic2.pipeInput("k2", 2, 100);
    testInputTopic2.pipeInput("k2", 2, 200);
    testInputTopic2.pipeInput("k1", 2, 1);
    testInputTopic2.pipeInput("k2", 2, 500);
    testInputTopic2.pipeInput("k1", 2, 500);
    testInputTopic2.pipeInput("k2", 3, 500);
    testInputTopic2.pipeInput("k3", 2, 500);
    testInputTopic2.pipeInput("k2", 2, 100);
    expect(testOutputTopic.readRecordsToList().slice(0, 11)).toEqual([
      kvt("k1", 1, 0),
      kvt("k2", 1, 1),
      kvt("k1", 2, 10),
      kvt("k2", 2, 100),
      kvt("k2", 4, 100),
      kvt("k2", 6, 200),
      kvt("k1", 4, 10),
      kvt("k2", 8, 500),
      kvt("k1", 6, 500),
      kvt("k2", 11, 500),
      kvt("k3", 2, 500),
    ]);
  });

  it("testCogroupKeyMixedAggregators", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    grouped1
      .cogroup(toStringAdder("-"))
      .cogroup(grouped2, toStringAdder("+"))
      .aggregate(STRING_INIT, Materialized.as("store1", { value: STRING }))
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic, testInputTopic2], testOutputTopic] = drive(builder, ["one", "two"], STRING);
    testInputTopic.pipeInput("k1", "1", 0);
    testInputTopic.pipeInput("k2", "1", 1);
    testInputTopic.pipeInput("k1", "1", 10);
    testInputTopic.pipeInput("k2", "1", 100);
    testInputTopic2.pipeInput("k1", "2", 500);
    testInputTopic2.pipeInput("k2", "2", 500);
    testInputTopic2.pipeInput("k1", "2", 500);
    testInputTopic2.pipeInput("k2", "2", 100);
    expect(testOutputTopic.readRecordsToList()).toEqual([
      kvt("k1", "0-1", 0),
      kvt("k2", "0-1", 1),
      kvt("k1", "0-1-1", 10),
      kvt("k2", "0-1-1", 100),
      kvt("k1", "0-1-1+2", 500),
      kvt("k2", "0-1-1+2", 500),
      kvt("k1", "0-1-1+2+2", 500),
      kvt("k2", "0-1-1+2+2", 500),
    ]);
  });

  it("testCogroupWithThreeGroupedStreams", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    const grouped3 = builder.stream("three", stringConsumed).groupByKey();
    grouped1
      .cogroup(STRING_AGGREGATOR)
      .cogroup(grouped2, STRING_AGGREGATOR)
      .cogroup(grouped3, STRING_AGGREGATOR)
      .aggregate(STRING_INITIALIZER)
      .toStream()
      .to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic, testInputTopic2, testInputTopic3], testOutputTopic] = drive(builder, ["one", "two", "three"], STRING);
    testInputTopic.pipeInput("k1", "A", 0);
    testInputTopic.pipeInput("k2", "A", 1);
    testInputTopic.pipeInput("k1", "A", 10);
    testInputTopic.pipeInput("k2", "A", 100);
    testInputTopic2.pipeInput("k2", "B", 100);
    testInputTopic2.pipeInput("k2", "B", 200);
    testInputTopic2.pipeInput("k1", "B", 1);
    testInputTopic2.pipeInput("k2", "B", 500);
    testInputTopic3.pipeInput("k1", "B", 500);
    testInputTopic3.pipeInput("k2", "B", 500);
    testInputTopic3.pipeInput("k3", "B", 500);
    testInputTopic3.pipeInput("k2", "B", 100);
    expect(testOutputTopic.readRecordsToList().slice(0, 11)).toEqual([
      kvt("k1", "A", 0),
      kvt("k2", "A", 1),
      kvt("k1", "AA", 10),
      kvt("k2", "AA", 100),
      kvt("k2", "AAB", 100),
      kvt("k2", "AABB", 200),
      kvt("k1", "AAB", 10),
      kvt("k2", "AABBB", 500),
      kvt("k1", "AABB", 500),
      kvt("k2", "AABBBB", 500),
      kvt("k3", "B", 500),
    ]);
  });

  it("testCogroupWithKTableKTableInnerJoin", () => {
    const builder = new StreamsBuilder();
    const grouped1 = builder.stream("one", stringConsumed).groupByKey();
    const grouped2 = builder.stream("two", stringConsumed).groupByKey();
    const table1 = grouped1.cogroup(STRING_AGGREGATOR).cogroup(grouped2, STRING_AGGREGATOR).aggregate(STRING_INITIALIZER, Materialized.as("store"));
    const table2 = builder.table("three", stringConsumed);
    const joined = table1.join(table2, TOSTRING_JOINER, Materialized.with(STRING, STRING));
    joined.toStream().to(OUTPUT, { key: STRING, value: STRING });
    const [[testInputTopic, testInputTopic2, testInputTopic3], testOutputTopic] = drive(builder, ["one", "two", "three"], STRING);
    testInputTopic.pipeInput("k1", "A", 5);
    testInputTopic2.pipeInput("k2", "B", 6);
    expect(testOutputTopic.isEmpty()).toBe(true);
    testInputTopic3.pipeInput("k1", "C", 0);
    testInputTopic3.pipeInput("k2", "D", 10);
    expect(testOutputTopic.readRecordsToList()).toEqual([kvt("k1", "A+C", 5), kvt("k2", "B+D", 10)]);
    expect(testOutputTopic.isEmpty()).toBe(true);
  });
});
