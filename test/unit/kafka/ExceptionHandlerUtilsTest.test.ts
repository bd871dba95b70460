/**
 * Ported from Kafka Streams' ExceptionHandlerUtilsTest (KIP-1034): the dead letter built for an
 * error (`deadLetterRecord`, Kafka's `buildDeadLetterQueueRecord`) goes to the dead letter topic
 * with the context's timestamp, the failed record's own headers, and the error headers; and no
 * dead letter is built without a dead letter topic (here: the built-in "continue" of a topology
 * without `deadLetterQueueTopic`). `__streams.errors.exception` holds the exception's class name,
 * as Kafka's current ExceptionHandlerUtils writes it (`e.getClass().getName()`; the first
 * version wrote `e.toString()`).
 */
import { describe, expect, it } from "vitest";
import {
  createTaskProcessor,
  DEAD_LETTER_HEADERS,
  InMemoryStoreBackend,
  StreamsBuilder,
  type ErrorHandlerContext,
  type OutgoingRecord,
} from "../../../src/streams";
import { deadLetterRecord } from "../../../src/streams/runtime/dead-letter";
import { lastHeader } from "./support";

class NullPointerException extends Error {
  override name = "NullPointerException";
}

describe("ExceptionHandlerUtilsTest", () => {
  it("checkDealLetterQueueRecords", () => {
    // new ProcessorRecordContext(1L, 2, 3, "source", headers("sourceHeader" = "hello world"))
    const errorHandlerContext: ErrorHandlerContext = {
      topic: "source",
      partition: 3,
      offset: 2,
      headers: [{ key: "sourceHeader", value: "hello world" }],
      processorNodeId: "sink",
      taskId: "0_0",
      timestamp: 1,
      sourceRawKey: null,
      sourceRawValue: null,
    };
    const exception = new NullPointerException("Oopsie!");
    const dlqRecords = [deadLetterRecord("dlq", errorHandlerContext, null, null, exception)];

    expect(dlqRecords).toHaveLength(1); // There should be only one record
    const dlqRecord = dlqRecords[0]!;
    expect(dlqRecord.topic).toBe("dlq");
    expect(dlqRecord.timestamp).toBe(errorHandlerContext.timestamp);
    expect(dlqRecord.timestamp).toBe(1);
    expect(lastHeader(dlqRecord, "sourceHeader")).toBe("hello world");
    expect(lastHeader(dlqRecord, DEAD_LETTER_HEADERS.exception)).toBe("NullPointerException");
    expect(lastHeader(dlqRecord, DEAD_LETTER_HEADERS.message)).toBe(exception.message);
    expect(lastHeader(dlqRecord, DEAD_LETTER_HEADERS.topic)).toBe("source");
    expect(lastHeader(dlqRecord, DEAD_LETTER_HEADERS.partition)).toBe("3");
    expect(lastHeader(dlqRecord, DEAD_LETTER_HEADERS.offset)).toBe("2");
  });

  it("doNotBuildDeadLetterQueueRecordsIfNotConfigured", () => {
    const builder = new StreamsBuilder();
    builder.stream("source").process(() => ({
      process: () => {
        throw new NullPointerException("Oopsie!");
      },
    }));
    const topology = builder.build({ applicationId: "kafka-test", topics: { source: 1 }, onProcessingError: "continue" });
    const collected: OutgoingRecord[] = [];
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: { send: (r) => void collected.push(r) } });
    task.process({ topic: "source", partition: 0, offset: 0, key: '"k"', value: '"v"', timestamp: 1, headers: [] });
    expect(collected).toEqual([]);
  });
});
