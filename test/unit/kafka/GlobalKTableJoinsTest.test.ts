/**
 * Ported from Kafka Streams' GlobalKTableJoinsTest: a stream joined (inner and left) with a global
 * table by a key taken from the stream's value; results keep the stream record's timestamp.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { StreamsBuilder, TopologyTestDriver, type GlobalKTable, type KStream } from "../../../src/streams";
import { build, MockApiProcessorSupplier, STRING, TestInputTopic, TOSTRING_JOINER } from "./support";

const streamTopic = "stream";
const globalTopic = "global";
let builder: StreamsBuilder;
let global: GlobalKTable<string, string>;
let stream: KStream<string, string>;
const keyValueMapper = (_key: string, value: string) => value;

beforeEach(() => {
  builder = new StreamsBuilder();
  const consumed = { key: STRING, value: STRING };
  global = builder.globalTable(globalTopic, consumed);
  stream = builder.stream(streamTopic, consumed);
});

function verifyJoin(expected: Map<string, { value: string; timestamp: number }>, supplier: MockApiProcessorSupplier<string, string>) {
  const driver = new TopologyTestDriver(build(builder, streamTopic, globalTopic));
  const globalInputTopic = new TestInputTopic(driver, globalTopic, STRING, STRING);
  // write some data to the global table
  globalInputTopic.pipeInput("a", "A", 1);
  globalInputTopic.pipeInput("b", "B", 5);
  const streamInputTopic = new TestInputTopic(driver, streamTopic, STRING, STRING);
  //write some data to the stream
  streamInputTopic.pipeInput("1", "a", 2);
  streamInputTopic.pipeInput("2", "b", 10);
  streamInputTopic.pipeInput("3", "c", 3);
  expect(supplier.lastValueAndTimestampPerKey()).toEqual(new Map([...expected].map(([k, v]) => [JSON.stringify(k), v])));
}

describe("GlobalKTableJoinsTest", () => {
  it("shouldLeftJoinWithStream", () => {
    const supplier = new MockApiProcessorSupplier<string, string>();
    stream.leftJoin(global, keyValueMapper, TOSTRING_JOINER).process(supplier.supplier);
    verifyJoin(
      new Map([
        ["1", { value: "a+A", timestamp: 2 }],
        ["2", { value: "b+B", timestamp: 10 }],
        ["3", { value: "c+null", timestamp: 3 }],
      ]),
      supplier,
    );
  });

  it("shouldInnerJoinWithStream", () => {
    const supplier = new MockApiProcessorSupplier<string, string>();
    stream.join(global, keyValueMapper, TOSTRING_JOINER).process(supplier.supplier);
    verifyJoin(
      new Map([
        ["1", { value: "a+A", timestamp: 2 }],
        ["2", { value: "b+B", timestamp: 10 }],
      ]),
      supplier,
    );
  });
});
