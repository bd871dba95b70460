/**
 * Ported from Kafka Streams' KStreamRepartitionIntegrationTest (each case once: Edge Streams has
 * no topology optimization to toggle), through TopologyTestDriver instead of a Kafka cluster: the
 * topics have the cluster's partition counts (input 4, output 1), records are sent with one
 * timestamp, and the output is checked as Kafka's `waitUntilFinalKeyValueRecordsReceived` checks it
 * (every expected record received). A repartition topic without a count takes its writer's, or
 * that of the topics it is joined with. A mismatch Kafka finds when it starts is found by the
 * build. shouldGoThroughRebalancingCorrectly moves every task (a restore from its changelogs, as a
 * task moving to the remaining instance) instead of closing a second instance.
 */
import { describe, expect, it } from "vitest";
import { JoinWindows, Serdes, StreamsBuilder, TopologyError, TopologyTestDriver, type Topology } from "../../../src/streams";
import { INTEGER, STRING, TestInputTopic, TestOutputTopic } from "./support";

const applicationId = "app";
const inputTopic = "input-topic";
const outputTopic = "output-topic";
const topicB = "topic-b";
const timestamp = 1_700_000_000_000;
const LONG = Serdes.number();

type KeyValue<K, V> = [K, V];

/** Kafka's test sets `default.key.serde` to Integer: keys whose serde the DSL cannot know are numbers. */
function buildWith(builder: StreamsBuilder, extraTopics: Record<string, number> = {}): Topology {
  return builder.build({ applicationId, topics: { [inputTopic]: 4, [outputTopic]: 1, ...extraTopics }, defaultKeySerde: INTEGER });
}

function sendEvents(driver: TopologyTestDriver, topic: string, events: KeyValue<number | null, string>[]): void {
  const input = new TestInputTopic(driver, topic, INTEGER, STRING);
  for (const [key, value] of events) input.pipeInput(key, value, timestamp);
}

/** The records received on a topic, as key-value pairs sorted by key then value (arrival order across partitions is not Kafka's). */
function received<K, V>(
  driver: TopologyTestDriver,
  topic: string,
  keySerde: { deserialize(t: string): K },
  valueSerde: { deserialize(t: string): V },
): KeyValue<K, V>[] {
  return driver
    .records(topic)
    .map((r): KeyValue<K, V> => [keySerde.deserialize(r.key!), valueSerde.deserialize(r.value!)])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])));
}

const repartitionSinks = (topology: Topology) =>
  topology.subtopologies.flatMap((s) => s.nodes.filter((n) => n.kind === "sink" && n.topic.endsWith("-repartition")));
const toRepartitionTopicName = (name: string) => `${applicationId}-${name}-repartition`;

describe("KStreamRepartitionIntegrationTest", () => {
  it("shouldThrowAnExceptionWhenNumberOfPartitionsOfRepartitionOperationDoNotMatchSourceTopicWhenJoining", () => {
    const builder = new StreamsBuilder();
    const topicBStream = builder.stream(topicB, { key: INTEGER, value: STRING });
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "join-repartition-test", numberOfPartitions: 2 })
      .join(topicBStream, (_value1, value2) => value2, JoinWindows.ofTimeDifferenceWithNoGrace(10_000))
      .to(outputTopic);
    const build = () => buildWith(builder, { [topicB]: 6 });
    expect(build).toThrow(TopologyError);
    expect(build).toThrow(/app-join-repartition-test-repartition \(2 partitions\)/);
    expect(build).toThrow(/topic-b \(6 partitions\)/);
  });

  it("shouldDeductNumberOfPartitionsFromRepartitionOperation", () => {
    const builder = new StreamsBuilder();
    const topicBStream = builder.stream(topicB, { key: INTEGER, value: STRING }).map((key, value) => ({ key, value }));
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "join-repartition-test", numberOfPartitions: 3 })
      .join(topicBStream, (_value1, value2) => value2, JoinWindows.ofTimeDifferenceWithNoGrace(10_000), { name: "topic-b-mapper" })
      .to(outputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder, { [topicB]: 6 });
    const driver = new TopologyTestDriver(topology);
    const expectedRecords: KeyValue<number, string>[] = [
      [1, "A"],
      [2, "B"],
    ];
    sendEvents(driver, inputTopic, expectedRecords);
    sendEvents(driver, topicB, expectedRecords);
    expect(topology.topics()[toRepartitionTopicName("join-repartition-test")]).toBe(3);
    // The mapped side's repartition topic (named after the join here) takes the count it is joined with.
    expect(topology.topics()[toRepartitionTopicName("topic-b-mapper-other")]).toBe(3);
    expect(received(driver, outputTopic, INTEGER, STRING)).toEqual(expectedRecords);
  });

  it("shouldDoProperJoiningWhenNumberOfPartitionsAreValidWhenUsingRepartitionOperation", () => {
    const builder = new StreamsBuilder();
    const topicBStream = builder.stream(topicB, { key: INTEGER, value: STRING }).repartition({ name: "topic-b-scale-up", numberOfPartitions: 4 });
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "input-topic-scale-up", numberOfPartitions: 4 })
      .join(topicBStream, (_value1, value2) => value2, JoinWindows.ofTimeDifferenceWithNoGrace(10_000))
      .to(outputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder, { [topicB]: 1 });
    const driver = new TopologyTestDriver(topology);
    const expectedRecords: KeyValue<number, string>[] = [
      [1, "A"],
      [2, "B"],
    ];
    const recordsToSend: KeyValue<number | null, string>[] = [...expectedRecords, [null, "C"]];
    sendEvents(driver, inputTopic, recordsToSend);
    sendEvents(driver, topicB, recordsToSend);
    expect(topology.topics()[toRepartitionTopicName("topic-b-scale-up")]).toBe(4);
    expect(topology.topics()[toRepartitionTopicName("input-topic-scale-up")]).toBe(4);
    expect(received(driver, outputTopic, INTEGER, STRING)).toEqual(expectedRecords);
  });

  it("shouldRepartitionToMultiplePartitions", () => {
    const repartitionName = "broadcasting-partitioner-test";
    const broadcastingOutputTopic = "broadcast-output-topic";
    let partitionerInvocation = 0;
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({
        name: repartitionName,
        partitioner: (_key, _value, numPartitions) => {
          partitionerInvocation++;
          return Array.from({ length: numPartitions }, (_, i) => i);
        },
      })
      .to(broadcastingOutputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder, { [broadcastingOutputTopic]: 4 });
    const driver = new TopologyTestDriver(topology);
    const expectedRecordsOnRepartition: KeyValue<number, string>[] = [
      [1, "A"],
      [1, "A"],
      [1, "A"],
      [1, "A"],
      [2, "B"],
      [2, "B"],
      [2, "B"],
      [2, "B"],
    ];
    const expectedRecords = expectedRecordsOnRepartition.slice(3, 5);
    sendEvents(driver, inputTopic, expectedRecords);
    const topic = toRepartitionTopicName(repartitionName);
    // Both records are on all 4 partitions of the repartition topic, and so reach the output 4 times.
    expect(received(driver, topic, INTEGER, STRING)).toEqual(expectedRecordsOnRepartition);
    expect(
      driver
        .records(topic)
        .map((r) => r.partition)
        .sort(),
    ).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
    expect(received(driver, broadcastingOutputTopic, INTEGER, STRING)).toEqual(expectedRecordsOnRepartition);
    expect(topology.topics()[topic]).toBe(4);
    expect(partitionerInvocation).toBe(expectedRecords.length);
  });

  it("shouldUseStreamPartitionerForRepartitionOperation", () => {
    const partition = 1;
    let partitionerInvocation = 0;
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({
        name: "partitioner-test",
        partitioner: () => {
          partitionerInvocation++;
          return partition;
        },
      })
      .to(outputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    const expectedRecords: KeyValue<number, string>[] = [
      [1, "A"],
      [2, "B"],
    ];
    sendEvents(driver, inputTopic, expectedRecords);
    const topic = toRepartitionTopicName("partitioner-test");
    expect(received(driver, outputTopic, INTEGER, STRING)).toEqual(expectedRecords);
    expect(driver.records(topic).map((r) => r.partition)).toEqual([partition, partition]);
    expect(partitionerInvocation).toBe(expectedRecords.length);
  });

  it("shouldPerformSelectKeyWithRepartitionOperation", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .selectKey((_key, value) => Number.parseInt(value, 10))
      .repartition()
      .to(outputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "10"],
      [2, "20"],
    ]);
    expect(received(driver, outputTopic, INTEGER, STRING)).toEqual([
      [10, "10"],
      [20, "20"],
    ]);
    expect(repartitionSinks(topology)).toHaveLength(1);
  });

  it("shouldCreateRepartitionTopicIfKeyChangingOperationWasNotPerformed", () => {
    const builder = new StreamsBuilder();
    builder.stream(inputTopic, { key: INTEGER, value: STRING }).repartition({ name: "dummy" }).to(outputTopic, { key: INTEGER, value: STRING });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, INTEGER, STRING)).toEqual([
      [1, "A"],
      [2, "B"],
    ]);
    expect(topology.topics()[toRepartitionTopicName("dummy")]).toBe(4);
    expect(repartitionSinks(topology).map((s) => s.kind === "sink" && s.topic)).toEqual([toRepartitionTopicName("dummy")]);
  });

  it("shouldPerformKeySelectOperationWhenRepartitionOperationIsUsedWithKeySelector", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .selectKey((key) => String(key))
      .repartition({ name: "new-key", key: STRING })
      .groupByKey()
      .count()
      .toStream()
      .to(outputTopic, { key: STRING, value: LONG });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, STRING, LONG)).toEqual([
      ["1", 1],
      ["2", 1],
    ]);
    expect(repartitionSinks(topology).map((s) => s.kind === "sink" && s.topic)).toEqual([toRepartitionTopicName("new-key")]);
  });

  it("shouldCreateRepartitionTopicWithSpecifiedNumberOfPartitions", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "new-partitions", numberOfPartitions: 2 })
      .groupByKey()
      .count()
      .toStream()
      .to(outputTopic, { key: INTEGER, value: LONG });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, INTEGER, LONG)).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(topology.topics()[toRepartitionTopicName("new-partitions")]).toBe(2);
    // The subtopology reading it has as many tasks.
    expect(topology.taskIds().filter((t) => t.startsWith("1_"))).toEqual(["1_0", "1_1"]);
  });

  it("shouldInheritRepartitionTopicPartitionNumberFromUpstreamTopicWhenNumberOfPartitionsIsNotSpecified", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "new-topic" })
      .groupByKey()
      .count()
      .toStream()
      .to(outputTopic, { key: INTEGER, value: LONG });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, INTEGER, LONG)).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(topology.topics()[toRepartitionTopicName("new-topic")]).toBe(4);
  });

  it("shouldCreateOnlyOneRepartitionTopicWhenRepartitionIsFollowedByGroupByKey", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .selectKey((key) => String(key))
      .repartition({ name: "new-partitions", key: STRING, value: STRING, numberOfPartitions: 1 })
      .groupByKey()
      .count()
      .toStream()
      .to(outputTopic, { key: STRING, value: LONG });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, STRING, LONG)).toEqual([
      ["1", 1],
      ["2", 1],
    ]);
    expect(topology.topics()[toRepartitionTopicName("new-partitions")]).toBe(1);
    expect(repartitionSinks(topology)).toHaveLength(1);
  });

  it("shouldGenerateRepartitionTopicWhenNameIsNotSpecified", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .selectKey((key) => String(key))
      .repartition({ key: STRING, value: STRING })
      .to(outputTopic, { key: STRING, value: STRING });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, STRING, STRING)).toEqual([
      ["1", "A"],
      ["2", "B"],
    ]);
    expect(repartitionSinks(topology).map((s) => s.kind === "sink" && s.topic)).toEqual([
      expect.stringMatching(/^app-KSTREAM-REPARTITION-\d{10}-repartition$/),
    ]);
  });

  it("shouldGoThroughRebalancingCorrectly", () => {
    const builder = new StreamsBuilder();
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .selectKey((key) => String(key))
      .repartition({ name: "rebalancing-test", key: STRING, value: STRING, numberOfPartitions: 2 })
      .groupByKey()
      .count()
      .toStream()
      .to(outputTopic, { key: STRING, value: LONG });
    const topology = buildWith(builder);
    const driver = new TopologyTestDriver(topology);
    sendEvents(driver, inputTopic, [
      [1, "A"],
      [2, "B"],
    ]);
    expect(received(driver, outputTopic, STRING, LONG)).toEqual([
      ["1", 1],
      ["2", 1],
    ]);
    for (const taskId of topology.taskIds()) driver.restoreTask(taskId);
    sendEvents(driver, inputTopic, [
      [1, "C"],
      [2, "D"],
    ]);
    const output = new TestOutputTopic(driver, outputTopic, STRING, LONG).readKeyValuesToMap();
    expect(output).toEqual(
      new Map([
        ["1", 2],
        ["2", 2],
      ]),
    );
    expect(topology.topics()[toRepartitionTopicName("rebalancing-test")]).toBe(2);
  });
});
