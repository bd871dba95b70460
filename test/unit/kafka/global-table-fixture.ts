/**
 * The fixture Kafka's KStreamGlobalKTableJoinTest and KStreamGlobalKTableLeftJoinTest share: a
 * stream of Integer keys and String values joined with a GlobalKTable of String keys, the table's
 * key taken from the stream value's second comma-separated token (none: a null key, no match).
 */
import { StreamsBuilder, TopologyTestDriver, type Topology } from "../../../src/streams";
import { build, INTEGER, MockApiProcessorSupplier, STRING, TestInputTopic, TOSTRING_JOINER } from "./support";

export const streamTopic = "streamTopic";
export const globalTableTopic = "globalTableTopic";
const expectedKeys = [0, 1, 2, 3];

export function globalTableFixture(kind: "join" | "leftJoin", topics: Record<string, number> = {}) {
  const builder = new StreamsBuilder();
  const stream = builder.stream(streamTopic, { key: INTEGER, value: STRING });
  const table = builder.globalTable(globalTableTopic, { key: STRING, value: STRING });
  const keyMapper = (_key: number, value: string): string | null => {
    const tokens = value.split(",");
    // Value is comma delimited. If second token is present, it's the key to the global ktable.
    // If not present, use null to indicate no match
    return tokens.length > 1 ? tokens[1]! : null;
  };
  const processor = new MockApiProcessorSupplier<number | null, string>();
  (kind === "join" ? stream.join(table, keyMapper, TOSTRING_JOINER) : stream.leftJoin(table, keyMapper, TOSTRING_JOINER)).process(processor.supplier);
  const topology: Topology = Object.keys(topics).length
    ? builder.build({ applicationId: "kafka-test", topics })
    : build(builder, streamTopic, globalTableTopic);
  const driver = new TopologyTestDriver(topology);
  // auto-advance stream timestamps by default, but not global table timestamps
  const inputStreamTopic = new TestInputTopic(driver, streamTopic, INTEGER, STRING, 0, 1);
  const inputTableTopic = new TestInputTopic(driver, globalTableTopic, STRING, STRING);
  return {
    topology,
    driver,
    processor,
    pushToStream(messageCount: number, valuePrefix: string, includeForeignKey: boolean, includeNullKey: boolean) {
      for (let i = 0; i < messageCount; i++) {
        let value = `${valuePrefix}${expectedKeys[i]}`;
        if (includeForeignKey) value = `${value},FKey${expectedKeys[i]}`;
        const key = includeNullKey && i === 0 ? null : expectedKeys[i]!;
        inputStreamTopic.pipeInput(key, value);
      }
    },
    pushToGlobalTable(messageCount: number, valuePrefix: string) {
      for (let i = 0; i < messageCount; i++) inputTableTopic.pipeInput(`FKey${expectedKeys[i]}`, `${valuePrefix}${expectedKeys[i]}`);
    },
    pushNullValueToGlobalTable(messageCount: number) {
      for (let i = 0; i < messageCount; i++) inputTableTopic.pipeInput(`FKey${expectedKeys[i]}`, null);
    },
  };
}
