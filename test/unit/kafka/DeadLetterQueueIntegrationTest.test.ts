/**
 * Ported from Kafka Streams' DeadLetterQueueIntegrationTest (KIP-1034): with
 * `errors.dead.letter.queue.topic.name` (here `deadLetterQueueTopic`), the built-in handlers send
 * the record that failed — a processing error in the DSL or the Processor API, a deserialization
 * error — to the dead letter topic with Kafka's error headers. Kafka's test runs a cluster with
 * three partitions per topic; this port runs the same topologies on TopologyTestDriver with three
 * partitions (the key "key" lands on partition 1 by the same murmur2 partitioner), and
 * test/dead-letters.test.ts does it on the real runtime. Differences, each a decision:
 * - "…AndFail…": Kafka's test runs at least once, so the dead letter is written before the
 *   application fails; Edge Streams is always exactly-once, and a failing commit is rolled back
 *   with its dead letter, as Kafka's transaction is aborted under exactly-once.
 * - `__streams.errors.exception` is the class name (Kafka's current ExceptionHandlerUtils; the
 *   test's version expected `toString()`), the stack trace JavaScript's.
 * - Kafka's `Serdes.Long()` reading "value" fails with "Size of data received by LongDeserializer
 *   is not 8"; `Serdes.number()` with "not a number".
 */
import { describe, expect, it } from "vitest";
import {
  DEAD_LETTER_HEADERS,
  DeserializationError,
  ProcessingError,
  Serdes,
  StreamsBuilder,
  TopologyTestDriver,
  type DeserializationHandler,
  type DriverRecord,
  type ProcessingHandler,
  type ProcessorContext,
} from "../../../src/streams";
import { lastHeader } from "./support";

const NUM_TOPIC_PARTITIONS = 3;
const INPUT_TOPIC = "inputTopic";
const OUTPUT_TOPIC = "outputTopic";
const DLQ_TOPIC = "dlqTopic";
const topics = { [INPUT_TOPIC]: NUM_TOPIC_PARTITIONS, [OUTPUT_TOPIC]: NUM_TOPIC_PARTITIONS, [DLQ_TOPIC]: NUM_TOPIC_PARTITIONS };

class RuntimeException extends Error {
  override name = "RuntimeException";
}

const data: [string, string][] = [
  ["key", "value-1"],
  ["key", "KABOOM"],
  ["key", "value-2"],
];
/** Kafka's longs 1 and 3 around the bytes of "value", as `Serdes.number()` writes numbers. */
const bytesData: [string, string][] = [
  ["key", "1"],
  ["key", "value"],
  ["key", "3"],
];

function getDslStreams(processingExceptionHandler: ProcessingHandler): TopologyTestDriver {
  const builder = new StreamsBuilder();
  builder
    .stream(INPUT_TOPIC, { key: Serdes.string(), value: Serdes.string() })
    .mapValues((v) => {
      // Simulate a processing error
      if (v === "KABOOM") throw new RuntimeException("KABOOM");
      return v;
    })
    .to(OUTPUT_TOPIC, { key: Serdes.string(), value: Serdes.string() });
  return new TopologyTestDriver(
    builder.build({ applicationId: "appId", topics, deadLetterQueueTopic: DLQ_TOPIC, onProcessingError: processingExceptionHandler }),
  );
}

function getProcessorAPIStreams(processingExceptionHandler: ProcessingHandler): TopologyTestDriver {
  const builder = new StreamsBuilder();
  builder
    .stream(INPUT_TOPIC, { key: Serdes.string(), value: Serdes.string() })
    .process<string, string>(() => {
      let context: ProcessorContext<string, string>;
      return {
        init: (c) => {
          context = c;
        },
        process: (record) => {
          // Simulate a processing error
          if (record.value === "KABOOM") throw new RuntimeException("KABOOM");
          context.forward(record);
        },
      };
    })
    .to(OUTPUT_TOPIC, { key: Serdes.string(), value: Serdes.string() });
  return new TopologyTestDriver(
    builder.build({ applicationId: "appId", topics, deadLetterQueueTopic: DLQ_TOPIC, onProcessingError: processingExceptionHandler }),
  );
}

function getDeserializationStreams(deserializationExceptionHandler: DeserializationHandler): TopologyTestDriver {
  const builder = new StreamsBuilder();
  builder
    .stream(INPUT_TOPIC, { key: Serdes.string(), value: Serdes.number() })
    .mapValues((v) => String(v))
    .to(OUTPUT_TOPIC, { key: Serdes.string(), value: Serdes.string() });
  return new TopologyTestDriver(
    builder.build({ applicationId: "appId", topics, deadLetterQueueTopic: DLQ_TOPIC, onDeserializationError: deserializationExceptionHandler }),
  );
}

/** `produceKeyValuesSynchronously`: until the first failure, which is returned (the application's ERROR state). */
function produce(driver: TopologyTestDriver, records: readonly [string, string][]): unknown {
  for (const [key, value] of records) {
    try {
      driver.pipe(INPUT_TOPIC, key, value);
    } catch (error) {
      return error;
    }
  }
  return undefined;
}

const header = lastHeader;

function expectKafkaHeaders(dlqRecord: DriverRecord, exception: string, message: string, stacktrace: RegExp): void {
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.exception)).toBe(exception);
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.message)).toBe(message);
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.stacktrace)).toMatch(stacktrace);
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.topic)).toBe(INPUT_TOPIC);
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.partition)).toBe("1");
  expect(header(dlqRecord, DEAD_LETTER_HEADERS.offset)).toBe("1");
}

describe("DeadLetterQueueIntegrationTest", () => {
  it("shouldSendToDlqAndFailFromDsl", () => {
    const streams = getDslStreams("fail");
    const error = produce(streams, data);
    // Only the first record is available
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["value-1"]);
    // Stream should be in ERROR state; its commit, dead letter included, rolled back (exactly once).
    expect(error).toBeInstanceOf(ProcessingError);
    expect(streams.records(DLQ_TOPIC)).toEqual([]);
  });

  it("shouldSendToDlqAndContinueFromDsl", () => {
    const streams = getDslStreams("continue");
    expect(produce(streams, data)).toBeUndefined();
    // Only the first and third records are available
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["value-1", "value-2"]);
    const dlqRecords = streams.records(DLQ_TOPIC);
    expect(dlqRecords).toHaveLength(1);
    expect(dlqRecords[0]!.key).toBe("key");
    expect(dlqRecords[0]!.value).toBe("KABOOM");
    expectKafkaHeaders(dlqRecords[0]!, "RuntimeException", "KABOOM", /^RuntimeException: KABOOM\n\s+at .*mapValues|^RuntimeException: KABOOM\n/);
  });

  it("shouldSendToDlqAndFailFromProcessorAPI", () => {
    const streams = getProcessorAPIStreams("fail");
    const error = produce(streams, data);
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["value-1"]);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(streams.records(DLQ_TOPIC)).toEqual([]);
  });

  it("shouldSendToDlqAndContinueFromProcessorAPI", () => {
    const streams = getProcessorAPIStreams("continue");
    expect(produce(streams, data)).toBeUndefined();
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["value-1", "value-2"]);
    const dlqRecords = streams.records(DLQ_TOPIC);
    expect(dlqRecords).toHaveLength(1);
    expect(dlqRecords[0]!.key).toBe("key");
    expect(dlqRecords[0]!.value).toBe("KABOOM");
    expectKafkaHeaders(dlqRecords[0]!, "RuntimeException", "KABOOM", /^RuntimeException: KABOOM\n\s+at /);
  });

  it("shouldSendToDlqAndFailFromDeserializationError", () => {
    const streams = getDeserializationStreams("fail");
    const error = produce(streams, bytesData);
    // No records of the same batch should be available in the output topic due to deserialization error
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["1"]);
    expect(error).toBeInstanceOf(DeserializationError);
    expect(streams.records(DLQ_TOPIC)).toEqual([]);
  });

  it("shouldSendToDlqAndContinueFromDeserializationError", () => {
    const streams = getDeserializationStreams("continue");
    expect(produce(streams, bytesData)).toBeUndefined();
    // Only the first and third records are available
    expect(streams.records(OUTPUT_TOPIC).map((r) => r.value)).toEqual(["1", "3"]);
    const dlqRecords = streams.records(DLQ_TOPIC);
    expect(dlqRecords).toHaveLength(1);
    expect(dlqRecords[0]!.key).toBe("key");
    expect(dlqRecords[0]!.value).toBe("value");
    expectKafkaHeaders(dlqRecords[0]!, "DeserializationError", 'not a number: "value"', /^DeserializationError: not a number: "value"\n/);
  });
});
