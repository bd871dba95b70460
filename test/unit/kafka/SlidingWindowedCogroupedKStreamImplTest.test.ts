/**
 * Ported from Kafka Streams' SlidingWindowedCogroupedKStreamImplTest: cogrouped streams aggregated
 * in sliding windows (difference 500, grace 2000), with Kafka's windows, results and timestamps.
 * Not ported: the checks of null arguments (TypeScript's types rule them out) and
 * namedParamShouldSetName (no `Named`).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { Materialized, SlidingWindows, StreamsBuilder, type KGroupedStream, type TimeWindowedCogroupedKStream, type Windowed } from "../../../src/streams";
import { cogroupedStringStreams, kvt, runWindowedCogroup, STRING, STRING_INIT, type TestInputTopic, toStringAdder } from "./support";

const TOPIC = "topic";
const TOPIC2 = "topic2";
const OUTPUT = "output";
const WINDOW_SIZE_MS = 500;
const TOSTRING_ADDER = toStringAdder("+");
const windowed = (key: string, start: number, end: number): Windowed<string> => ({ key, window: { start, end } });

let builder: StreamsBuilder;
let groupedStream: KGroupedStream<string, string>;
let windowedCogroupedStream: TimeWindowedCogroupedKStream<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  const streams = cogroupedStringStreams(builder, TOPIC, TOPIC2);
  groupedStream = streams.groupedStream;
  windowedCogroupedStream = streams.cogroupedStream.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(WINDOW_SIZE_MS, 2000));
});

function run(pipe: (one: TestInputTopic<string, string>) => void) {
  return runWindowedCogroup(builder, { topic: TOPIC, topic2: TOPIC2, output: OUTPUT }, pipe);
}

describe("SlidingWindowedCogroupedKStreamImplTest", () => {
  it("slidingWindowAggregateStreamsTest", () => {
    windowedCogroupedStream.aggregate(STRING_INIT, Materialized.with(STRING, STRING)).toStream().to(OUTPUT);
    const results = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 500);
      testInputTopic.pipeInput("k2", "A", 500);
      testInputTopic.pipeInput("k2", "A", 501);
      testInputTopic.pipeInput("k1", "A", 502);
      testInputTopic.pipeInput("k1", "B", 503);
      testInputTopic.pipeInput("k2", "B", 503);
      testInputTopic.pipeInput("k2", "B", 504);
      testInputTopic.pipeInput("k1", "B", 504);
    });
    expect(results).toEqual([
      // k1-A-500
      kvt(windowed("k1", 0, 500), "0+A", 500),
      // k2-A-500
      kvt(windowed("k2", 0, 500), "0+A", 500),
      // k2-A-501
      kvt(windowed("k2", 501, 1001), "0+A", 501),
      kvt(windowed("k2", 1, 501), "0+A+A", 501),
      // k1-A-502
      kvt(windowed("k1", 501, 1001), "0+A", 502),
      kvt(windowed("k1", 2, 502), "0+A+A", 502),
      // k1-B-503
      kvt(windowed("k1", 501, 1001), "0+A+B", 503),
      kvt(windowed("k1", 503, 1003), "0+B", 503),
      kvt(windowed("k1", 3, 503), "0+A+A+B", 503),
      // k2-B-503
      kvt(windowed("k2", 501, 1001), "0+A+B", 503),
      kvt(windowed("k2", 502, 1002), "0+B", 503),
      kvt(windowed("k2", 3, 503), "0+A+A+B", 503),
      // k2-B-504
      kvt(windowed("k2", 502, 1002), "0+B+B", 504),
      kvt(windowed("k2", 501, 1001), "0+A+B+B", 504),
      kvt(windowed("k2", 504, 1004), "0+B", 504),
      kvt(windowed("k2", 4, 504), "0+A+A+B+B", 504),
      // k1-B-504
      kvt(windowed("k1", 503, 1003), "0+B+B", 504),
      kvt(windowed("k1", 501, 1001), "0+A+B+B", 504),
      kvt(windowed("k1", 504, 1004), "0+B", 504),
      kvt(windowed("k1", 4, 504), "0+A+A+B+B", 504),
    ]);
  });

  it("slidingWindowAggregateOverlappingWindowsTest", () => {
    groupedStream
      .cogroup(TOSTRING_ADDER)
      .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(WINDOW_SIZE_MS, 2000))
      .aggregate(STRING_INIT, Materialized.with(STRING, STRING))
      .toStream()
      .to(OUTPUT);
    const results = run((testInputTopic) => {
      testInputTopic.pipeInput("k1", "A", 500);
      testInputTopic.pipeInput("k2", "A", 500);
      testInputTopic.pipeInput("k1", "B", 750);
      testInputTopic.pipeInput("k2", "B", 750);
      testInputTopic.pipeInput("k2", "A", 1000);
      testInputTopic.pipeInput("k1", "A", 1000);
    });
    expect(results.map((r) => kvt(r.key!.key, r.value, r.timestamp))).toEqual([
      // left window k1@500
      kvt("k1", "0+A", 500),
      // left window k2@500
      kvt("k2", "0+A", 500),
      // right window k1@500
      kvt("k1", "0+B", 750),
      // left window k1@750
      kvt("k1", "0+A+B", 750),
      // right window k2@500
      kvt("k2", "0+B", 750),
      // left window k2@750
      kvt("k2", "0+A+B", 750),
      // right window k2@500 update
      kvt("k2", "0+B+A", 1000),
      // right window k2@750
      kvt("k2", "0+A", 1000),
      // left window k2@1000
      kvt("k2", "0+A+B+A", 1000),
      // right window k1@500 update
      kvt("k1", "0+B+A", 1000),
      // right window k1@750
      kvt("k1", "0+A", 1000),
      // left window k1@1000
      kvt("k1", "0+A+B+A", 1000),
    ]);
  });
});
