/**
 * Ported from Kafka Streams' ProcessingExceptionHandlerIntegrationTest (KIP-1033), which runs on
 * TopologyTestDriver as this port does: an exception thrown by a processor goes to the topology's
 * processing handler, which fails the task or lets processing go on (the record goes no further
 * from the failing node, counted as dropped). Kafka's handler classes become handler functions
 * (`onProcessingError`), its LogAndFail/LogAndContinueProcessingExceptionHandler the built-in
 * `"fail"` and `"continue"`. Differences: Kafka's StreamsException reads "Exception caught in
 * process. taskId=0_0, processor=…, topic=…, partition=0, offset=1", Edge Streams' ProcessingError
 * names the same node and record (`node`, `origin`); a failure flushing the record cache is the
 * failing processor's error, not "Failed to flush cache of store …".
 */
import { describe, expect, it } from "vitest";
import {
  ProcessingError,
  StreamsBuilder,
  TopologyTestDriver,
  type ErrorHandlerContext,
  type ProcessingHandler,
  type ProcessorContext,
  type ProcessorSupplier,
  type StreamRecord,
} from "../../../src/streams";
import { droppedRecordsTotal, kvt, MockApiProcessorSupplier, STRING, TestInputTopic, type KeyValueTimestamp } from "./support";

/** Kafka's `Instant.now()`, fixed. */
const TIMESTAMP = 1_733_300_000_000;

class RuntimeException extends Error {
  override name = "RuntimeException";
}

/** `runtimeErrorProcessorSupplierMock`: throws for keys with "ERR" and the value "3", else forwards. */
function runtimeErrorProcessorSupplierMock(): ProcessorSupplier<string, string, string, string> {
  return () => {
    let context: ProcessorContext<string, string>;
    return {
      init: (c) => {
        context = c;
      },
      process: (record) => {
        if (record.key.includes("ERR") || record.value === "3") throw new RuntimeException("Exception should be handled by processing exception handler");
        context.forward({ key: record.key, value: record.value, timestamp: record.timestamp, headers: [] });
      },
    };
  };
}

/** `assertProcessingExceptionHandlerInputs`. */
function assertProcessingExceptionHandlerInputs(context: ErrorHandlerContext, record: StreamRecord<unknown, unknown> | null, exception: Error): void {
  expect(["ID123-2-ERR", "ID123-5-ERR"]).toContain(record?.key);
  expect(["ID123-A2", "ID123-A5"]).toContain(record?.value);
  expect(context.topic).toBe("TOPIC_NAME");
  expect(context.processorNodeId).toBe("KSTREAM-PROCESSOR-0000000003");
  expect(context.timestamp).toBe(TIMESTAMP);
  expect(exception.message).toContain("Exception should be handled by processing exception handler");
}

/** `ContinueProcessingExceptionHandlerMockTest`. */
const continueProcessingExceptionHandlerMockTest: ProcessingHandler = (context, exception, record) => {
  if (String(record?.key).includes("FATAL")) throw new RuntimeException("KABOOM!");
  if (String(record?.key).includes("NULL")) return null as never;
  assertProcessingExceptionHandlerInputs(context, record, exception);
  return "continue";
};

/** `FailProcessingExceptionHandlerMockTest`. */
const failProcessingExceptionHandlerMockTest: ProcessingHandler = (context, exception, record) => {
  assertProcessingExceptionHandlerInputs(context, record, exception);
  return "fail";
};

/** stream → map → mapValues → the failing processor → (map →) the capturing processor. */
function failingTopology(handler: ProcessingHandler, processor: MockApiProcessorSupplier<string, string>, executed?: { value: boolean }) {
  const builder = new StreamsBuilder();
  let stream = builder
    .stream("TOPIC_NAME", { key: STRING, value: STRING })
    .map((key, value) => ({ key, value }))
    .mapValues((value) => value)
    .process(runtimeErrorProcessorSupplierMock());
  if (executed) {
    stream = stream.map((key, value) => {
      executed.value = true;
      return { key, value };
    });
  }
  stream.process(processor.supplier);
  return new TopologyTestDriver(builder.build({ applicationId: "kafka-test", topics: { TOPIC_NAME: 1 }, onProcessingError: handler }));
}

/** `groupByKey().count().toStream().mapValues(toString)` → the failing processor → the capturing one (the count is cached, as Kafka's default). */
function cachedCountTopology(handler: ProcessingHandler, processor: MockApiProcessorSupplier<string, string>) {
  const builder = new StreamsBuilder();
  builder
    .stream("TOPIC_NAME", { key: STRING, value: STRING })
    .groupByKey()
    .count()
    .toStream()
    .mapValues((value) => String(value))
    .process(runtimeErrorProcessorSupplierMock())
    .process(processor.supplier);
  return new TopologyTestDriver(builder.build({ applicationId: "kafka-test", topics: { TOPIC_NAME: 1 }, onProcessingError: handler }));
}

/** `pipeKeyValueList(events, TIMESTAMP, Duration.ZERO)`. */
function pipeKeyValueList(driver: TopologyTestDriver, events: readonly [string, string][]): void {
  const input = new TestInputTopic(driver, "TOPIC_NAME", STRING, STRING, TIMESTAMP, 0);
  for (const [key, value] of events) input.pipeInput(key, value);
}

function thrownBy(body: () => void): unknown {
  try {
    body();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("ProcessingExceptionHandlerIntegrationTest", () => {
  it("shouldFailWhenProcessingExceptionOccursIfExceptionHandlerReturnsFail", () => {
    const events: [string, string][] = [
      ["ID123-1", "ID123-A1"],
      ["ID123-2-ERR", "ID123-A2"],
      ["ID123-3", "ID123-A3"],
      ["ID123-4", "ID123-A4"],
    ];
    const expectedProcessedRecords: KeyValueTimestamp<string, string>[] = [kvt("ID123-1", "ID123-A1", TIMESTAMP)];
    const processor = new MockApiProcessorSupplier<string, string>();
    const driver = failingTopology(failProcessingExceptionHandlerMockTest, processor);

    const exception = thrownBy(() => pipeKeyValueList(driver, events));
    expect(exception).toBeInstanceOf(ProcessingError);
    expect((exception as ProcessingError).node).toBe("KSTREAM-PROCESSOR-0000000003");
    expect((exception as ProcessingError).origin).toEqual({ topic: "TOPIC_NAME", partition: 0, offset: 1 });
    expect(processor.processed).toHaveLength(1);
    expect(processor.processed).toEqual(expectedProcessedRecords);
    expect(droppedRecordsTotal(driver)).toBe(0);
  });

  it("shouldFailWhenProcessingExceptionOccursFromFlushingCacheIfExceptionHandlerReturnsFail", () => {
    const events: [string, string][] = [
      ["ID123-1", "ID123-A1"],
      ["ID123-1", "ID123-A2"],
      ["ID123-1", "ID123-A3"],
      ["ID123-1", "ID123-A4"],
    ];
    const expectedProcessedRecords = [kvt("ID123-1", "1", TIMESTAMP), kvt("ID123-1", "2", TIMESTAMP)];
    const processor = new MockApiProcessorSupplier<string, string>();
    const driver = cachedCountTopology("fail", processor);

    const exception = thrownBy(() => pipeKeyValueList(driver, events));
    expect(exception).toBeInstanceOf(ProcessingError);
    expect((exception as Error).message).toMatch(/Exception should be handled by processing exception handler/);
    expect(processor.processed).toHaveLength(expectedProcessedRecords.length);
    expect(processor.processed).toEqual(expectedProcessedRecords);
    expect(droppedRecordsTotal(driver)).toBe(0);
  });

  it("shouldContinueWhenProcessingExceptionOccursIfExceptionHandlerReturnsContinue", () => {
    const events: [string, string][] = [
      ["ID123-1", "ID123-A1"],
      ["ID123-2-ERR", "ID123-A2"],
      ["ID123-3", "ID123-A3"],
      ["ID123-4", "ID123-A4"],
      ["ID123-5-ERR", "ID123-A5"],
      ["ID123-6", "ID123-A6"],
    ];
    const expectedProcessedRecords = [
      kvt("ID123-1", "ID123-A1", TIMESTAMP),
      kvt("ID123-3", "ID123-A3", TIMESTAMP),
      kvt("ID123-4", "ID123-A4", TIMESTAMP),
      kvt("ID123-6", "ID123-A6", TIMESTAMP),
    ];
    const processor = new MockApiProcessorSupplier<string, string>();
    const driver = failingTopology(continueProcessingExceptionHandlerMockTest, processor);
    pipeKeyValueList(driver, events);

    expect(processor.processed).toHaveLength(expectedProcessedRecords.length);
    expect(processor.processed).toEqual(expectedProcessedRecords);
    expect(droppedRecordsTotal(driver)).toBe(2);
  });

  it("shouldContinueWhenProcessingExceptionOccursFromFlushingCacheIfExceptionHandlerReturnsContinue", () => {
    const events: [string, string][] = [
      ["ID123-1", "ID123-A1"],
      ["ID123-1", "ID123-A2"],
      ["ID123-1", "ID123-A3"],
      ["ID123-1", "ID123-A4"],
    ];
    const expectedProcessedRecords = [kvt("ID123-1", "1", TIMESTAMP), kvt("ID123-1", "2", TIMESTAMP), kvt("ID123-1", "4", TIMESTAMP)];
    const processor = new MockApiProcessorSupplier<string, string>();
    const driver = cachedCountTopology("continue", processor);
    pipeKeyValueList(driver, events);

    expect(processor.processed).toHaveLength(expectedProcessedRecords.length);
    expect(processor.processed).toEqual(expectedProcessedRecords);
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldStopOnFailedProcessorWhenProcessingExceptionOccursInFailProcessingExceptionHandler", () => {
    const executed = { value: false };
    const driver = failingTopology(failProcessingExceptionHandlerMockTest, new MockApiProcessorSupplier(), executed);
    const input = new TestInputTopic(driver, "TOPIC_NAME", STRING, STRING);
    executed.value = false;
    input.pipeInput("ID123-1", "ID123-A1", TIMESTAMP);
    expect(executed.value).toBe(true);
    executed.value = false;
    const e = thrownBy(() => input.pipeInput("ID123-2-ERR", "ID123-A2", TIMESTAMP));
    expect(e).toBeInstanceOf(ProcessingError);
    expect((e as ProcessingError).node).toBe("KSTREAM-PROCESSOR-0000000003");
    expect((e as ProcessingError).origin).toEqual({ topic: "TOPIC_NAME", partition: 0, offset: 1 });
    expect(executed.value).toBe(false);
  });

  it("shouldStopOnFailedProcessorWhenProcessingExceptionOccursInContinueProcessingExceptionHandler", () => {
    const executed = { value: false };
    const driver = failingTopology(continueProcessingExceptionHandlerMockTest, new MockApiProcessorSupplier(), executed);
    const input = new TestInputTopic(driver, "TOPIC_NAME", STRING, STRING);
    executed.value = false;
    input.pipeInput("ID123-1", "ID123-A1", TIMESTAMP);
    expect(executed.value).toBe(true);
    executed.value = false;
    input.pipeInput("ID123-2-ERR", "ID123-A2", TIMESTAMP);
    expect(executed.value).toBe(false);
  });

  it("shouldStopProcessingWhenProcessingExceptionHandlerReturnsNull", () => {
    const executed = { value: false };
    const driver = failingTopology(continueProcessingExceptionHandlerMockTest, new MockApiProcessorSupplier(), executed);
    const input = new TestInputTopic(driver, "TOPIC_NAME", STRING, STRING);
    executed.value = false;
    input.pipeInput("ID123-1", "ID123-A1", TIMESTAMP);
    expect(executed.value).toBe(true);
    executed.value = false;
    const e = thrownBy(() => input.pipeInput("ID123-ERR-NULL", "ID123-A2", 0));
    expect((e as Error).message).toMatch(/^Fatal user code error in processing error callback/);
    expect((e as Error).cause).toBeInstanceOf(TypeError);
    expect(((e as Error).cause as Error).message).toBe("Invalid ProcessingExceptionResponse response.");
    expect(executed.value).toBe(false);
  });

  it("shouldStopProcessingWhenFatalUserExceptionProcessingExceptionHandler", () => {
    const executed = { value: false };
    const driver = failingTopology(continueProcessingExceptionHandlerMockTest, new MockApiProcessorSupplier(), executed);
    const input = new TestInputTopic(driver, "TOPIC_NAME", STRING, STRING);
    executed.value = false;
    input.pipeInput("ID123-1", "ID123-A1", TIMESTAMP);
    expect(executed.value).toBe(true);
    executed.value = false;
    const e = thrownBy(() => input.pipeInput("ID123-ERR-FATAL", "ID123-A2", 0));
    expect((e as Error).message).toMatch(/^Fatal user code error in processing error callback/);
    expect(((e as Error).cause as Error).message).toBe("KABOOM!");
    expect(executed.value).toBe(false);
  });
});
