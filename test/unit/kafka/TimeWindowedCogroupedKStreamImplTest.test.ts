/**
 * Ported from Kafka Streams' TimeWindowedCogroupedKStreamImplTest: cogrouped streams aggregated in
 * tumbling and hopping windows, each window's result stamped with its latest record's time. The
 * output's windowed keys are read back by their inner key, as Kafka's test reads them. Not ported:
 * the checks of null arguments (TypeScript's types rule them out) and namedParamShouldSetName (no
 * `Named`).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TimeWindows, type KGroupedStream, type TimeWindowedCogroupedKStream } from "../../../src/streams";
import { cogroupedStringStreams, kvt, runWindowedCogroup, STRING, STRING_INIT, type TestInputTopic, toStringAdder } from "./support";

const WINDOW_SIZE = 500;
const TOPIC = "topic";
const TOPIC2 = "topic2";
const OUTPUT = "output";
const TOSTRING_ADDER = toStringAdder("+");

let builder: StreamsBuilder;
let groupedStream: KGroupedStream<string, string>;
let windowedCogroupedStream: TimeWindowedCogroupedKStream<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  const streams = cogroupedStringStreams(builder, TOPIC, TOPIC2);
  groupedStream = streams.groupedStream;
  windowedCogroupedStream = streams.cogroupedStream.windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW_SIZE));
});

function run(pipe: (one: TestInputTopic<string, string>, two: TestInputTopic<string, string>) => void) {
  return runWindowedCogroup(builder, { topic: TOPIC, topic2: TOPIC2, output: OUTPUT }, pipe).map((r) => kvt(r.key!.key, r.value, r.timestamp));
}

describe("TimeWindowedCogroupedKStreamImplTest", () => {
  it("timeWindowAggregateTestStreamsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k2", "A", 1);
      testInputTopic.pipeInput("k1", "A", 2);
      testInputTopic.pipeInput("k1", "B", 3);
      testInputTopic.pipeInput("k2", "B", 3);
      testInputTopic.pipeInput("k2", "B", 4);
      testInputTopic.pipeInput("k1", "B", 4);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k2", "0+A+A", 1),
      kvt("k1", "0+A+A", 2),
      kvt("k1", "0+A+A+B", 3),
      kvt("k2", "0+A+A+B", 3),
      kvt("k2", "0+A+A+B+B", 4),
      kvt("k1", "0+A+A+B+B", 4),
    ]);
  });

  it("timeWindowMixAggregatorsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic, testInputTopic2) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k2", "A", 1);
      testInputTopic.pipeInput("k1", "A", 2);
      testInputTopic2.pipeInput("k1", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 4);
      testInputTopic2.pipeInput("k1", "B", 4);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k2", "0+A+A", 1),
      kvt("k1", "0+A+A", 2),
      kvt("k1", "0+A+A-B", 3),
      kvt("k2", "0+A+A-B", 3),
      kvt("k2", "0+A+A-B-B", 4),
      kvt("k1", "0+A+A-B-B", 4),
    ]);
  });

  it("timeWindowAggregateManyWindowsTest", () => {
    groupedStream
      .cogroup(TOSTRING_ADDER)
      .windowedBy(TimeWindows.ofSizeWithNoGrace(500))
      .aggregate(STRING_INIT, Materialized.with(STRING, STRING))
      .toStream()
      .to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 499);
      testInputTopic.pipeInput("k2", "A", 500);
      testInputTopic.pipeInput("k1", "A", 500);
    });
    expect(output).toEqual([kvt("k1", "0+A", 0), kvt("k2", "0+A", 499), kvt("k2", "0+A", 500), kvt("k1", "0+A", 500)]);
  });

  it("timeWindowAggregateOverlappingWindowsTest", () => {
    groupedStream
      .cogroup(TOSTRING_ADDER)
      .windowedBy(TimeWindows.ofSizeWithNoGrace(500).advanceBy(200))
      .aggregate(STRING_INIT, Materialized.with(STRING, STRING))
      .toStream()
      .to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k1", "B", 250);
      testInputTopic.pipeInput("k2", "B", 250);
      testInputTopic.pipeInput("k2", "A", 500);
      testInputTopic.pipeInput("k1", "A", 500);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k1", "0+A+B", 250),
      kvt("k1", "0+B", 250),
      kvt("k2", "0+A+B", 250),
      kvt("k2", "0+B", 250),
      kvt("k2", "0+B+A", 500),
      kvt("k2", "0+A", 500),
      kvt("k1", "0+B+A", 500),
      kvt("k1", "0+A", 500),
    ]);
  });

  it("timeWindowMixAggregatorsManyWindowsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic, testInputTopic2) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k2", "A", 1);
      testInputTopic.pipeInput("k1", "A", 2);
      testInputTopic2.pipeInput("k1", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 501);
      testInputTopic2.pipeInput("k1", "B", 501);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k2", "0+A+A", 1),
      kvt("k1", "0+A+A", 2),
      kvt("k1", "0+A+A-B", 3),
      kvt("k2", "0+A+A-B", 3),
      kvt("k2", "0-B", 501),
      kvt("k1", "0-B", 501),
    ]);
  });
});
