/**
 * Ported from Kafka Streams' RelaxedNullKeyRequirementJoinTest (KIP-962, Kafka 3.7): left and
 * outer joins join a record with a null key with null at once instead of dropping it, even after
 * a repartition. Kafka's tests repartition both streams explicitly (`repartition()`); Edge Streams
 * repartitions only where the key may have changed, so a `selectKey` that keeps the key stands in
 * for it. Not ported: the global table join (no global tables) and
 * testDropNullKeyRecordsForRepartitionNodesWithNoRelaxedJoinDownstream (no `repartition()` operator).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { JoinWindows, StreamsBuilder, TopologyTestDriver, type KStream } from "../../../src/streams";
import { build, kvt, STRING, TestInputTopic, TestOutputTopic } from "./support";

const WINDOW = JoinWindows.ofTimeDifferenceAndGrace(60_000, 10_000);
const JOINER = (lv: string | null, rv: string | null) => `${lv}|${rv}`;
const [LEFT, RIGHT, OUT] = ["left", "right", "out"];

let builder: StreamsBuilder;
let leftStream: KStream<string, string>;
let rightStream: KStream<string, string>;

beforeEach(() => {
  builder = new StreamsBuilder();
  leftStream = builder.stream(LEFT, { key: STRING, value: STRING }).selectKey((key) => key);
  rightStream = builder.stream(RIGHT, { key: STRING, value: STRING }).selectKey((key) => key);
});

function initTopology() {
  const driver = new TopologyTestDriver(build(builder, LEFT, RIGHT, OUT));
  return {
    left: new TestInputTopic(driver, LEFT, STRING, STRING),
    right: new TestInputTopic(driver, RIGHT, STRING, STRING),
    out: new TestOutputTopic(driver, OUT, STRING, STRING),
  };
}

describe("RelaxedNullKeyRequirementJoinTest", () => {
  it("testRelaxedLeftStreamStreamJoin", () => {
    leftStream.leftJoin(rightStream, JOINER, WINDOW, { key: STRING, value: STRING, otherValue: STRING }).to(OUT, { key: STRING, value: STRING });
    const { left, out } = initTopology();
    left.pipeInput(null, "leftValue", 1);
    expect(out.readRecordsToList().map(({ key, value }) => [key, value])).toEqual([[null, "leftValue|null"]]);
  });

  it("testRelaxedLeftStreamTableJoin", () => {
    // Kafka: `rightStream.toTable()`; here the right topic read as a table.
    builder = new StreamsBuilder();
    leftStream = builder.stream(LEFT, { key: STRING, value: STRING }).selectKey((key) => key);
    const rightTable = builder.table(RIGHT, { key: STRING, value: STRING });
    leftStream.leftJoin(rightTable, JOINER, { key: STRING, value: STRING }).to(OUT, { key: STRING, value: STRING });
    const { left, out } = initTopology();
    left.pipeInput(null, "leftValue", 1);
    expect(out.readRecordsToList()).toEqual([kvt(null, "leftValue|null", 1)]);
  });

  it("testRelaxedOuterStreamStreamJoin", () => {
    leftStream.outerJoin(rightStream, JOINER, WINDOW, { key: STRING, value: STRING, otherValue: STRING }).to(OUT, { key: STRING, value: STRING });
    const { left, right, out } = initTopology();
    right.pipeInput(null, "rightValue", 1);
    left.pipeInput(null, "leftValue");
    expect(out.readRecordsToList().map(({ key, value }) => [key, value])).toEqual([
      [null, "null|rightValue"],
      [null, "leftValue|null"],
    ]);
  });
});
