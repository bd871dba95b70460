/**
 * Ported from Kafka Streams' KStreamRepartitionTest: `repartition()` with a chosen partitioner and
 * name, and repartition topics of different counts joined. Kafka's TopologyTestDriver does not
 * check partitions; here the input topic has 2 partitions, so the repartition topic (which takes
 * its writer's count) has the partition 1 the partitioner picks. Kafka finds the mismatched join
 * when it creates the topics; here the build does (a `TopologyError` naming both topics).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { JoinWindows, StreamsBuilder, TopologyError, TopologyTestDriver } from "../../../src/streams";
import { INTEGER, kvt, STRING, TestInputTopic, TestOutputTopic } from "./support";

const inputTopic = "input-topic";
let builder: StreamsBuilder;

beforeEach(() => {
  builder = new StreamsBuilder();
});

describe("KStreamRepartitionTest", () => {
  it("shouldInvokePartitionerWhenSet", () => {
    const expectedKeys = [0, 1];
    const calls: [number, string][] = [];
    const streamPartitionerMock = (key: number, value: string) => {
      calls.push([key, value]);
      return 1;
    };
    builder.stream(inputTopic, { key: INTEGER, value: STRING }).repartition({ partitioner: streamPartitionerMock, name: "test" });
    const driver = new TopologyTestDriver(builder.build({ applicationId: "app", topics: { [inputTopic]: 2 } }));
    const testInputTopic = new TestInputTopic(driver, inputTopic, INTEGER, STRING);
    const testOutputTopic = new TestOutputTopic(driver, "app-test-repartition", INTEGER, STRING);
    for (let i = 0; i < 2; i++) testInputTopic.pipeInput(expectedKeys[i]!, `X${expectedKeys[i]}`, i + 10);
    expect(testOutputTopic.readRecord()).toEqual(kvt(0, "X0", 10));
    expect(testOutputTopic.readRecord()).toEqual(kvt(1, "X1", 11));
    expect(testOutputTopic.readRecordsToList()).toEqual([]);
    expect(driver.records("app-test-repartition").map((r) => r.partition)).toEqual([1, 1]);
    expect(calls).toEqual([
      [0, "X0"],
      [1, "X1"],
    ]);
  });

  it("shouldThrowAnExceptionWhenNumberOfPartitionsOfRepartitionOperationsDoNotMatchWhenJoining", () => {
    const topicB = "topic-b";
    const outputTopic = "topic-output";
    const topicBStream = builder.stream(topicB, { key: INTEGER, value: STRING }).repartition({ name: "topic-b-scale-up", numberOfPartitions: 2 });
    builder
      .stream(inputTopic, { key: INTEGER, value: STRING })
      .repartition({ name: "input-topic-scale-up", numberOfPartitions: 4 })
      .join(topicBStream, (_value1, value2) => value2, JoinWindows.ofTimeDifferenceWithNoGrace(10_000))
      .to(outputTopic);
    const build = () => builder.build({ applicationId: "app", topics: { [inputTopic]: 1, [topicB]: 1, [outputTopic]: 1 } });
    expect(build).toThrow(TopologyError);
    expect(build).toThrow(
      /app-topic-b-scale-up-repartition \(2 partitions\).*app-input-topic-scale-up-repartition \(4 partitions\)|app-input-topic-scale-up-repartition \(4 partitions\).*app-topic-b-scale-up-repartition \(2 partitions\)/,
    );
  });
});
