/**
 * The fixture Kafka's KStreamKTableJoinTest and KStreamKTableLeftJoinTest share: a stream and a
 * table of Integer keys and String values, joined with `TOSTRING_JOINER` into a captured processor.
 */
import { StreamsBuilder, TopologyTestDriver, type Topology } from "../../../src/streams";
import { build, INTEGER, MockApiProcessorSupplier, STRING, TestInputTopic, TOSTRING_JOINER } from "./support";

export const streamTopic = "streamTopic";
export const tableTopic = "tableTopic";
const expectedKeys = [0, 1, 2, 3];

/** Table timestamps do not matter to these tests (Kafka draws them at random): a fixed pseudo-random sequence. */
function pseudoRandom(): () => number {
  let seed = 42;
  return () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_647);
}

export function streamTableFixture(kind: "join" | "leftJoin") {
  const builder = new StreamsBuilder();
  const consumed = { key: INTEGER, value: STRING };
  const stream = builder.stream(streamTopic, consumed);
  const table = builder.table(tableTopic, consumed);
  const processor = new MockApiProcessorSupplier<number | null, string>();
  (kind === "join" ? stream.join(table, TOSTRING_JOINER) : stream.leftJoin(table, TOSTRING_JOINER)).process(processor.supplier);
  const topology: Topology = build(builder, streamTopic, tableTopic);
  const driver = new TopologyTestDriver(topology);
  const inputStreamTopic = new TestInputTopic(driver, streamTopic, INTEGER, STRING, 0, 0);
  const inputTableTopic = new TestInputTopic(driver, tableTopic, INTEGER, STRING, 0, 0);
  const random = pseudoRandom();
  return {
    topology,
    driver,
    processor,
    inputStreamTopic,
    pushToStream(messageCount: number, valuePrefix: string) {
      for (let i = 0; i < messageCount; i++) inputStreamTopic.pipeInput(expectedKeys[i]!, `${valuePrefix}${expectedKeys[i]}`, i);
    },
    pushToTable(messageCount: number, valuePrefix: string) {
      for (let i = 0; i < messageCount; i++) inputTableTopic.pipeInput(expectedKeys[i]!, `${valuePrefix}${expectedKeys[i]}`, random());
    },
    pushNullValueToTable(messageCount = 2) {
      for (let i = 0; i < messageCount; i++) inputTableTopic.pipeInput(expectedKeys[i]!, null);
    },
  };
}
