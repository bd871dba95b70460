/**
 * Ported from Kafka Streams' SessionWindowedCogroupedKStreamImplTest: cogrouped streams
 * aggregated per session; merging sessions deletes the merged ones (tombstones, stamped with their
 * end) and combines their aggregates with the merger. The output's session keys are read back by
 * their inner key, as Kafka's test reads them. Not ported: the checks of null arguments
 * (TypeScript's types rule them out) and namedParamShouldSetName (no `Named`).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { Materialized, SessionWindows, StreamsBuilder, type KGroupedStream, type SessionWindowedCogroupedKStream } from "../../../src/streams";
import { cogroupedStringStreams, kvt, runWindowedCogroup, STRING, STRING_INIT, type TestInputTopic, toStringAdder } from "./support";

const TOPIC = "topic";
const TOPIC2 = "topic2";
const OUTPUT = "output";
const TOSTRING_ADDER = toStringAdder("+");
const sessionMerger = (_aggKey: string, aggOne: string, aggTwo: string) => `${aggOne}+${aggTwo}`;

let builder: StreamsBuilder;
let groupedStream: KGroupedStream<string, string>;
let windowedCogroupedStream: SessionWindowedCogroupedKStream<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  const streams = cogroupedStringStreams(builder, TOPIC, TOPIC2);
  groupedStream = streams.groupedStream;
  windowedCogroupedStream = streams.cogroupedStream.windowedBy(SessionWindows.ofInactivityGapAndGrace(100, 24 * 60 * 60 * 1000));
});

function run(pipe: (one: TestInputTopic<string, string>, two: TestInputTopic<string, string>) => void) {
  return runWindowedCogroup(builder, { topic: TOPIC, topic2: TOPIC2, output: OUTPUT }, pipe).map((r) => kvt(r.key!.key, r.value, r.timestamp));
}

describe("SessionWindowedCogroupedKStreamImplTest", () => {
  it("sessionWindowAggregateTest", () => {
    groupedStream
      .cogroup(TOSTRING_ADDER)
      .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(500))
      .aggregate(STRING_INIT, sessionMerger, Materialized.with(STRING, STRING))
      .toStream()
      .to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k1", "B", 599);
      testInputTopic.pipeInput("k2", "B", 607);
    });
    expect(output).toEqual([kvt("k1", "0+A", 0), kvt("k2", "0+A", 0), kvt("k1", "0+B", 599), kvt("k2", "0+B", 607)]);
  });

  it("sessionWindowAggregate2Test", () => {
    groupedStream
      .cogroup(TOSTRING_ADDER)
      .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(500))
      .aggregate(STRING_INIT, sessionMerger, Materialized.with(STRING, STRING))
      .toStream()
      .to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "B", 599);
      testInputTopic.pipeInput("k1", "B", 607);
    });
    // The merged session is the record's own [0, 0]: no tombstone, the session is overwritten.
    expect(output).toEqual([kvt("k1", "0+A", 0), kvt("k1", "0+0+A+A", 0), kvt("k2", "0+B", 599), kvt("k1", "0+B", 607)]);
  });

  it("sessionWindowAggregateTest2StreamsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, sessionMerger, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k1", "A", 84);
      testInputTopic.pipeInput("k1", "A", 113);
      testInputTopic.pipeInput("k1", "A", 199);
      testInputTopic.pipeInput("k1", "B", 300);
      testInputTopic.pipeInput("k2", "B", 301);
      testInputTopic.pipeInput("k2", "B", 400);
      testInputTopic.pipeInput("k1", "B", 400);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k1", null, 0),
      kvt("k1", "0+0+A+A", 84),
      kvt("k1", null, 84),
      kvt("k1", "0+0+0+A+A+A", 113),
      kvt("k1", null, 113),
      kvt("k1", "0+0+0+0+A+A+A+A", 199),
      kvt("k1", "0+B", 300),
      kvt("k2", "0+B", 301),
      kvt("k2", null, 301),
      kvt("k2", "0+0+B+B", 400),
      kvt("k1", null, 300),
      kvt("k1", "0+0+B+B", 400),
    ]);
  });

  it("sessionWindowMixAggregatorsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, sessionMerger, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic, testInputTopic2) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k2", "A", 1);
      testInputTopic.pipeInput("k1", "A", 2);
      testInputTopic2.pipeInput("k1", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 444);
      testInputTopic2.pipeInput("k1", "B", 444);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k2", null, 0),
      kvt("k2", "0+0+A+A", 1),
      kvt("k1", null, 0),
      kvt("k1", "0+0+A+A", 2),
      kvt("k1", null, 2),
      kvt("k1", "0+0+0+A+A-B", 3),
      kvt("k2", null, 1),
      kvt("k2", "0+0+0+A+A-B", 3),
      kvt("k2", "0-B", 444),
      kvt("k1", "0-B", 444),
    ]);
  });

  it("sessionWindowMixAggregatorsManyWindowsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, sessionMerger, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const output = run((testInputTopic, testInputTopic2) => {
      testInputTopic.pipeInput("k1", "A", 0);
      testInputTopic.pipeInput("k2", "A", 0);
      testInputTopic.pipeInput("k2", "A", 1);
      testInputTopic.pipeInput("k1", "A", 2);
      testInputTopic2.pipeInput("k1", "B", 3);
      testInputTopic2.pipeInput("k2", "B", 500);
      testInputTopic2.pipeInput("k2", "B", 501);
      testInputTopic2.pipeInput("k1", "B", 501);
    });
    expect(output).toEqual([
      kvt("k1", "0+A", 0),
      kvt("k2", "0+A", 0),
      kvt("k2", null, 0),
      kvt("k2", "0+0+A+A", 1),
      kvt("k1", null, 0),
      kvt("k1", "0+0+A+A", 2),
      kvt("k1", null, 2),
      kvt("k1", "0+0+0+A+A-B", 3),
      kvt("k2", "0-B", 500),
      kvt("k2", null, 500),
      kvt("k2", "0+0-B-B", 501),
      kvt("k1", "0-B", 501),
    ]);
  });
});
