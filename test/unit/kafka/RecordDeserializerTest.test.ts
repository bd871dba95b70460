/**
 * Ported from Kafka Streams' RecordDeserializerTest: how an input record's deserialization error
 * goes to the deserialization handler (Kafka's `DeserializationExceptionHandler`), through a task
 * processor as Kafka's RecordDeserializer is used by its task. Kafka's `TheSourceNode`, whose key
 * and value deserializers throw `RuntimeException("KABOOM!")`, is a source with serdes that do
 * so; `DeserializationExceptionHandlerMock` is a handler function making the same assertions.
 * Differences: the source node is named as Edge Streams names it (`KSTREAM-SOURCE-0000000000`,
 * Kafka's test gives its own), the task is the one of the record's partition (0_1); "fail" throws
 * the `DeserializationError` naming the record (Kafka's message names its config property); and
 * with a dead letter topic, "fail" writes no dead letter, as Kafka's exactly-once aborts it
 * (shouldBuildDeadLetterQueueRecordsInDefaultDeserializationException expects one, written at
 * least once before the failure).
 */
import { describe, expect, it } from "vitest";
import {
  createTaskProcessor,
  DEAD_LETTER_HEADERS,
  DeserializationError,
  InMemoryStoreBackend,
  StreamsBuilder,
  type DeserializationHandler,
  type ErrorHandlerResponse,
  type InputRecord,
  type OutgoingRecord,
  type RecordMetadata,
  type Serde,
  type StreamRecord,
} from "../../../src/streams";

class RuntimeException extends Error {
  override name = "RuntimeException";
}
class NullPointerException extends Error {
  override name = "NullPointerException";
}

const sourceNodeName = "KSTREAM-SOURCE-0000000000";
const taskId = "0_1";
const headers = [{ key: "key", value: "value" }];
/** `new ConsumerRecord<>("topic", 1, 1, 10, LOG_APPEND_TIME, 3, 5, new byte[0], new byte[0], headers, Optional.of(5))`. */
const rawRecord: InputRecord = { topic: "topic", partition: 1, offset: 1, key: "", value: "", timestamp: 10, headers };

/** A serde that deserializes to `result`, or throws as Kafka's `TheSourceNode` does. */
function theSerde(throws: boolean, result: string, exception: () => Error = () => new RuntimeException("KABOOM!")): Serde<string> {
  return {
    serialize: (v) => v,
    deserialize: () => {
      if (throws) throw exception();
      return result;
    },
  };
}

interface Seen {
  record?: StreamRecord<unknown, unknown>;
  metadata?: RecordMetadata;
}

/** `new RecordDeserializer(new TheSourceNode(…), handler, …)`, as the task of partition 1 of "topic" runs it. */
function theTask(keyThrowsException: boolean, valueThrowsException: boolean, handler?: DeserializationHandler, deadLetterQueueTopic?: string) {
  const builder = new StreamsBuilder();
  const seen: Seen = {};
  builder.stream("topic", { key: theSerde(keyThrowsException, "key"), value: theSerde(valueThrowsException, "value") }).process(() => {
    let context: { recordMetadata(): RecordMetadata | undefined };
    return {
      init: (c) => {
        context = c;
      },
      process: (record) => {
        seen.record = record;
        seen.metadata = context.recordMetadata();
      },
    };
  });
  const topology = builder.build({
    applicationId: "kafka-test",
    topics: { topic: 2, dlq: 1 },
    ...(handler ? { onDeserializationError: handler } : {}),
    ...(deadLetterQueueTopic ? { deadLetterQueueTopic } : {}),
  });
  const collected: OutgoingRecord[] = [];
  const task = createTaskProcessor(topology, taskId, { stores: new InMemoryStoreBackend(), collector: { send: (r) => void collected.push(r) } });
  return { task, seen, collected };
}

/** `DeserializationExceptionHandlerMock`: asserts what it is given, then answers `response` (null: throws "CRASH"; undefined: answers nothing). */
function deserializationExceptionHandlerMock(response: ErrorHandlerResponse | null | undefined, expectedRecord: InputRecord): DeserializationHandler {
  return (context, exception, record) => {
    expect(context.topic).toBe(expectedRecord.topic);
    expect(context.partition).toBe(expectedRecord.partition);
    expect(context.offset).toBe(expectedRecord.offset);
    expect(context.processorNodeId).toBe(sourceNodeName);
    expect(context.taskId).toBe(taskId);
    expect(context.timestamp).toBe(expectedRecord.timestamp);
    expect(record).toEqual(expectedRecord);
    expect(exception).toBeInstanceOf(RuntimeException);
    expect(exception.message).toBe("KABOOM!");
    if (response === null) throw new RuntimeException("CRASH");
    return response as ErrorHandlerResponse;
  };
}

function thrownBy(body: () => void): Error {
  try {
    body();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}

describe("RecordDeserializerTest", () => {
  it("shouldReturnConsumerRecordWithDeserializedValueWhenNoExceptions", () => {
    const { task, seen } = theTask(false, false);
    task.process(rawRecord);
    expect(seen.metadata).toEqual({ topic: rawRecord.topic, partition: rawRecord.partition, offset: rawRecord.offset });
    expect(seen.record).toEqual({ key: "key", value: "value", timestamp: rawRecord.timestamp, headers: rawRecord.headers });
  });

  for (const [keyThrowsException, valueThrowsException] of [
    [true, true],
    [true, false],
    [false, true],
  ] as const) {
    it(`shouldThrowStreamsExceptionWhenDeserializationFailsAndExceptionHandlerRepliesWithFail (${keyThrowsException}, ${valueThrowsException})`, () => {
      const { task, seen } = theTask(keyThrowsException, valueThrowsException, deserializationExceptionHandlerMock("fail", rawRecord));
      const e = thrownBy(() => task.process(rawRecord));
      expect(e).toBeInstanceOf(DeserializationError);
      expect(e.message).toBe(`cannot deserialize the ${keyThrowsException ? "key" : "value"} of topic/1 offset 1: KABOOM!`);
      expect(seen.record).toBeUndefined();
    });

    it(`shouldNotThrowStreamsExceptionWhenDeserializationFailsAndExceptionHandlerRepliesWithContinue (${keyThrowsException}, ${valueThrowsException})`, () => {
      const { task, seen, collected } = theTask(keyThrowsException, valueThrowsException, deserializationExceptionHandlerMock("continue", rawRecord));
      task.process(rawRecord);
      expect(seen.record).toBeUndefined();
      expect(collected).toEqual([]);
    });
  }

  it("shouldFailWhenDeserializationFailsAndExceptionHandlerReturnsNull", () => {
    const { task } = theTask(true, false, deserializationExceptionHandlerMock(undefined, rawRecord));
    const exception = thrownBy(() => task.process(rawRecord));
    expect(exception.message).toMatch(/^Fatal user code error in deserialization error callback/);
    expect(exception.cause).toBeInstanceOf(TypeError);
    expect((exception.cause as Error).message).toBe("Invalid DeserializationExceptionResponse response.");
  });

  it("shouldFailWhenDeserializationFailsAndExceptionHandlerThrows", () => {
    const { task } = theTask(true, false, deserializationExceptionHandlerMock(null, rawRecord));
    const exception = thrownBy(() => task.process(rawRecord));
    expect(exception.message).toMatch(/^Fatal user code error in deserialization error callback/);
    expect((exception.cause as Error).message).toBe("CRASH");
  });

  /** `new ConsumerRecord<>("source", 0, 0, 123, CREATE_TIME, -1, -1, "hello", "world", new RecordHeaders(), …)`, failing with `RuntimeException(NullPointerException("Oopsie"))`. */
  function dlqCase(handler: DeserializationHandler) {
    const builder = new StreamsBuilder();
    const oopsie = () => new RuntimeException("java.lang.NullPointerException: Oopsie", { cause: new NullPointerException("Oopsie") });
    builder.stream("source", { key: theSerde(false, "hello"), value: theSerde(true, "world", oopsie) }).process(() => ({ process: () => {} }));
    const topology = builder.build({
      applicationId: "kafka-test",
      topics: { source: 1, dlq: 1 },
      deadLetterQueueTopic: "dlq",
      onDeserializationError: handler,
    });
    const collected: OutgoingRecord[] = [];
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: { send: (r) => void collected.push(r) } });
    const record: InputRecord = { topic: "source", partition: 0, offset: 0, key: "hello", value: "world", timestamp: 123, headers: [] };
    return { task, collected, record };
  }

  it("shouldBuildDeadLetterQueueRecordsInDefaultDeserializationException", () => {
    const { task, collected, record } = dlqCase("fail");
    expect(() => task.process(record)).toThrow(DeserializationError);
    // Kafka writes one (at least once, before failing); under exactly-once the commit is rolled back with it.
    expect(collected).toHaveLength(0);
  });

  it("shouldBuildDeadLetterQueueRecordsInLogAndContinueDeserializationException", () => {
    const { task, collected, record } = dlqCase("continue");
    task.process(record);
    expect(collected).toHaveLength(1);
    expect(collected[0]!.topic).toBe("dlq");
    expect(collected[0]).toMatchObject({ key: "hello", value: "world", timestamp: 123 });
    expect(collected[0]!.headers).toContainEqual({ key: DEAD_LETTER_HEADERS.exception, value: "RuntimeException" });
    expect(collected[0]!.headers).toContainEqual({
      key: DEAD_LETTER_HEADERS.stacktrace,
      value: expect.stringContaining("Caused by: NullPointerException: Oopsie"),
    });
  });
});
