/**
 * Dead letters and the handlers that send them, without the runtime: Kafka's error headers with
 * bounded values, so that a dead letter of any record the application may read fits in a record
 * (issue #31: a 999,990-byte order's dead letter was 1,000,249 bytes, which the log refused for
 * ever); the topology-wide dead letter topic of the built-in "continue" handlers (Kafka's
 * `errors.dead.letter.queue.topic.name`); handler functions deciding per error.
 */
import { describe, expect, it } from "vitest";
import { RecordTooLarge } from "../../src/log/errors";
import { MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES, recordBytes, utf8Length } from "../../src/log/records";
import {
  createTaskProcessor,
  DEAD_LETTER_BOUNDS,
  DEAD_LETTER_HEADERS,
  DeserializationError,
  InMemoryStoreBackend,
  ProcessingError,
  Serdes,
  StreamsBuilder,
  TopologyError,
  TopologyTestDriver,
  type BuildOptions,
  type ErrorHandlerContext,
  type InputRecord,
  type OutgoingRecord,
} from "../../src/streams";
import { deadLetterRecord, stackTraceOf, truncateUtf8 } from "../../src/streams/runtime/dead-letter";

const context = (headers: ErrorHandlerContext["headers"] = []): ErrorHandlerContext => ({
  topic: "orders",
  partition: 3,
  offset: 9_007_199_254_740_991,
  headers,
  processorNodeId: "KSTREAM-SOURCE-0000000000",
  taskId: "0_3",
  timestamp: 42,
  sourceRawKey: null,
  sourceRawValue: null,
});

/** An error whose every text is as long as it gets. */
function hugeError(): Error {
  const error = new Error("m".repeat(100_000));
  error.name = "N".repeat(10_000);
  error.stack = `${"s".repeat(100_000)}`;
  return error;
}

const headerValue = (record: OutgoingRecord, key: string) => record.headers.find((h) => h.key === key)?.value;

describe("dead letter headers", () => {
  it("take Kafka's names, after the record's own headers, and describe what was thrown", () => {
    class RuntimeException extends Error {
      override name = "RuntimeException";
    }
    const cause = new TypeError("deep down");
    const error = new RuntimeException("KABOOM", { cause });
    const letter = deadLetterRecord("dlq", context([{ key: "trace", value: "t1" }]), "k", "v", error);
    expect(letter).toMatchObject({ topic: "dlq", key: "k", value: "v", timestamp: 42 });
    expect(letter.headers.map((h) => h.key)).toEqual([
      "trace",
      "__streams.errors.exception",
      "__streams.errors.message",
      "__streams.errors.stacktrace",
      "__streams.errors.topic",
      "__streams.errors.partition",
      "__streams.errors.offset",
    ]);
    expect(headerValue(letter, DEAD_LETTER_HEADERS.exception)).toBe("RuntimeException");
    expect(headerValue(letter, DEAD_LETTER_HEADERS.message)).toBe("KABOOM");
    // As Java prints a stack trace: the error's, then "Caused by:" each cause's.
    expect(headerValue(letter, DEAD_LETTER_HEADERS.stacktrace)).toMatch(/^RuntimeException: KABOOM\n\s+at [\s\S]*\nCaused by: TypeError: deep down\n\s+at /);
    expect(headerValue(letter, DEAD_LETTER_HEADERS.topic)).toBe("orders");
    expect(headerValue(letter, DEAD_LETTER_HEADERS.partition)).toBe("3");
    expect(headerValue(letter, DEAD_LETTER_HEADERS.offset)).toBe("9007199254740991");
  });

  it("name a class of one's own by its constructor when it sets no name", () => {
    class OrderRejected extends Error {}
    expect(headerValue(deadLetterRecord("dlq", context(), "k", "v", new OrderRejected("no")), DEAD_LETTER_HEADERS.exception)).toBe("OrderRejected");
  });

  it("are bounded: class name 256, message 4,096, stack trace 8,192 UTF-8 bytes, cut with an ellipsis", () => {
    const letter = deadLetterRecord("dlq", context(), "k", "v", hugeError());
    expect(utf8Length(headerValue(letter, DEAD_LETTER_HEADERS.exception)!)).toBeLessThanOrEqual(DEAD_LETTER_BOUNDS.exception);
    expect(utf8Length(headerValue(letter, DEAD_LETTER_HEADERS.message)!)).toBeLessThanOrEqual(DEAD_LETTER_BOUNDS.message);
    expect(utf8Length(headerValue(letter, DEAD_LETTER_HEADERS.stacktrace)!)).toBeLessThanOrEqual(DEAD_LETTER_BOUNDS.stacktrace);
    expect(headerValue(letter, DEAD_LETTER_HEADERS.message)!.endsWith("…")).toBe(true);
    expect(DEAD_LETTER_BOUNDS).toEqual({ exception: 256, message: 4_096, stacktrace: 8_192 });
  });

  it("cut at a character boundary: no half of a multi-byte character, nor of a surrogate pair", () => {
    expect(truncateUtf8("é".repeat(10), 9)).toBe("ééé…");
    expect(truncateUtf8("é".repeat(10), 8)).toBe("éé…");
    expect(truncateUtf8("😀".repeat(5), 11)).toBe("😀😀…");
    expect(truncateUtf8("short", 8)).toBe("short");
    expect(utf8Length(truncateUtf8("😀é".repeat(5_000), 4_096))).toBeLessThanOrEqual(4_096);
  });

  it("always fit a record of MAX_INPUT_RECORD_BYTES, the largest any input holds, within MAX_RECORD_BYTES", () => {
    // The longest topic name, offset and partition Kafka allows, and every text at its longest.
    const worst = { ...context([{ key: "h", value: "x" }]), topic: "t".repeat(249), partition: 2_147_483_647 };
    const key = "k".repeat(100);
    const value = "v".repeat(MAX_INPUT_RECORD_BYTES - recordBytes(key, "", worst.headers));
    expect(recordBytes(key, value, worst.headers)).toBe(MAX_INPUT_RECORD_BYTES);
    const letter = deadLetterRecord("dlq", worst, key, value, hugeError());
    expect(recordBytes(letter.key, letter.value!, letter.headers)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    // Nothing had to be cut further than its bound.
    expect(utf8Length(headerValue(letter, DEAD_LETTER_HEADERS.stacktrace)!)).toBeGreaterThan(DEAD_LETTER_BOUNDS.stacktrace - 4);
    expect(MAX_INPUT_RECORD_BYTES).toBe(MAX_RECORD_BYTES - 16_384);
  });

  it("of a larger record cut the message and stack trace further to fit, and refuse what cannot fit even so", () => {
    const value = "v".repeat(MAX_RECORD_BYTES - 2_000);
    const letter = deadLetterRecord("dlq", context(), "k", value, hugeError());
    expect(recordBytes(letter.key, letter.value!, letter.headers)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    // The order of issue #31: 999,990 bytes.
    expect(() => deadLetterRecord("dlq", context(), "alice", "v".repeat(999_990), new Error("not an order"))).toThrow(RecordTooLarge);
    expect(() => deadLetterRecord("dlq", context(), "alice", "v".repeat(999_990), new Error("not an order"))).toThrow(
      /the dead letter of orders\/3 offset 9007199254740991 would be 1000\d{3} bytes; a record holds at most 1000000/,
    );
  });

  it("of a tombstone keep it a tombstone, counting the header that marks it", () => {
    const letter = deadLetterRecord("dlq", context(), "k", null, new Error("x"));
    expect(letter.value).toBeNull();
  });

  it("stop following causes after a few, and describe what is not an Error", () => {
    const looped = new Error("a");
    (looped as { cause?: unknown }).cause = looped;
    expect(stackTraceOf(looped).split("Caused by:")).toHaveLength(9);
    const plain = new Error("wrapped", { cause: "a string" });
    expect(stackTraceOf(plain)).toMatch(/\nCaused by: a string$/);
  });
});

const input = (offset: number, value: string | null, key: string | null = "k"): InputRecord => ({
  topic: "in",
  partition: 0,
  offset,
  key,
  value,
  timestamp: 1000 + offset,
  headers: [{ key: "trace", value: `t${offset}` }],
});

function capture() {
  const sent: OutgoingRecord[] = [];
  return { sent, deps: { stores: new InMemoryStoreBackend(), collector: { send: (r: OutgoingRecord) => void sent.push(r) } } };
}

/** in (numbers) → mapValues (throws on 13) → out. */
function numbers(options: Partial<BuildOptions> = {}) {
  const builder = new StreamsBuilder();
  builder
    .stream("in", { key: Serdes.string(), value: Serdes.number() })
    .mapValues((n) => {
      if (n === 13) throw new RangeError("unlucky");
      return n * 2;
    })
    .to("out", { key: Serdes.string(), value: Serdes.number() });
  return builder.build({ applicationId: "dl", topics: { in: 1, out: 1, dlq: 1, other: 1 }, ...options });
}

describe("the topology's dead letter queue (errors.dead.letter.queue.topic.name)", () => {
  it("is where the built-in continue handlers send what fails, raw, before going on", () => {
    const { sent, deps } = capture();
    const task = createTaskProcessor(numbers({ deadLetterQueueTopic: "dlq", onDeserializationError: "continue", onProcessingError: "continue" }), "0_0", deps);
    task.process(input(0, "1"));
    task.process(input(1, "one"));
    task.process(input(2, "13"));
    task.process(input(3, "4"));
    expect(sent.filter((r) => r.topic === "out").map((r) => r.value)).toEqual(["2", "8"]);
    const letters = sent.filter((r) => r.topic === "dlq");
    expect(letters.map((r) => [r.key, r.value, r.timestamp])).toEqual([
      ["k", "one", 1001],
      ["k", "13", 1002],
    ]);
    expect(letters.map((r) => headerValue(r, DEAD_LETTER_HEADERS.exception))).toEqual(["DeserializationError", "RangeError"]);
    expect(letters.map((r) => headerValue(r, DEAD_LETTER_HEADERS.offset))).toEqual(["1", "2"]);
    expect(letters.map((r) => r.headers[0])).toEqual([
      { key: "trace", value: "t1" },
      { key: "trace", value: "t2" },
    ]);
    expect(task.metrics).toMatchObject({ deadLetteredRecords: 1, skippedRecords: 0, processedRecords: 3 });
    expect(task.eventMetrics).toMatchObject({ deserializationErrorsDeadLettered: 1, processingErrorsDeadLettered: 1 });
  });

  it('is not used by "fail": the commit is rolled back, a dead letter with it', () => {
    const { sent, deps } = capture();
    const task = createTaskProcessor(numbers({ deadLetterQueueTopic: "dlq" }), "0_0", deps);
    expect(() => task.process(input(0, "one"))).toThrow(DeserializationError);
    expect(() => task.process(input(1, "13"))).toThrow(ProcessingError);
    expect(sent).toEqual([]);
  });

  it("must be declared, and not be read by the topology", () => {
    expect(() => numbers({ deadLetterQueueTopic: "nope" })).toThrow(/unknown dead letter topic "nope"/);
    expect(() => numbers({ deadLetterQueueTopic: "in" })).toThrow(/dead letter topic "in" is read by the topology/);
    expect(() => numbers({ onProcessingError: "contine" as never })).toThrow(TopologyError);
    expect(numbers({ deadLetterQueueTopic: "dlq", onProductionError: { deadLetterTopic: "other" } }).deadLetterTopics()).toEqual(["dlq", "other"]);
  });
});

describe("handler functions", () => {
  it("decide per error, given Kafka's context, what was thrown and the record", () => {
    const seen: unknown[] = [];
    const { sent, deps } = capture();
    const topology = numbers({
      deadLetterQueueTopic: "dlq",
      onProcessingError: (ctx, error, record) => {
        seen.push({ ctx, error: `${error.name}: ${error.message}`, record });
        return record?.key === "keep-going" ? "continue" : { deadLetterTopic: "other" };
      },
    });
    const task = createTaskProcessor(topology, "0_0", deps);
    task.process(input(0, "13", "keep-going"));
    task.process(input(1, "13", "send-it"));
    expect(seen[0]).toEqual({
      ctx: {
        topic: "in",
        partition: 0,
        offset: 0,
        headers: [{ key: "trace", value: "t0" }],
        processorNodeId: expect.stringMatching(/^KSTREAM-MAPVALUES-/),
        taskId: "0_0",
        timestamp: 1000,
        sourceRawKey: "keep-going",
        sourceRawValue: "13",
      },
      error: "RangeError: unlucky",
      record: { key: "keep-going", value: 13, timestamp: 1000, headers: [{ key: "trace", value: "t0" }] },
    });
    // A function's "continue" writes no dead letter, even with the topology's dead letter topic.
    expect(sent.map((r) => [r.topic, r.key])).toEqual([["other", "send-it"]]);
    expect(task.eventMetrics).toMatchObject({ processingErrorsContinued: 1, processingErrorsDeadLettered: 1 });
  });

  it("that throw, answer nonsense or name an undeclared topic fail the task with their reason", () => {
    const throwing = createTaskProcessor(
      numbers({
        onProcessingError: () => {
          throw new Error("handler bug");
        },
      }),
      "0_0",
      capture().deps,
    );
    expect(() => throwing.process(input(0, "13"))).toThrow(/^Fatal user code error in processing error callback: handler bug/);
    const nonsense = createTaskProcessor(numbers({ onProcessingError: () => "skip" as never }), "0_0", capture().deps);
    expect(() => nonsense.process(input(0, "13"))).toThrow(/Invalid ProcessingExceptionResponse response\./);
    const undeclared = createTaskProcessor(numbers({ onProcessingError: () => ({ deadLetterTopic: "elsewhere" }) }), "0_0", capture().deps);
    expect(() => undeclared.process(input(0, "13"))).toThrow(/its dead letter cannot be written: dead letter topic "elsewhere" is not declared/);
  });

  it("of the production handler see the record a sink was producing", () => {
    const builder = new StreamsBuilder();
    const picky = Serdes.from<string>(
      (v) => {
        if (v.includes("!")) throw new SyntaxError(`unprintable ${v}`);
        return v;
      },
      (t) => t,
    );
    builder.stream("in", { key: Serdes.string(), value: Serdes.string() }).to("out", { value: picky });
    const records: unknown[] = [];
    const driver = new TopologyTestDriver(
      builder.build({
        applicationId: "pf",
        topics: { in: 1, out: 1, dlq: 1 },
        onProductionError: (ctx, error, record) => {
          records.push({ node: ctx.processorNodeId, error: error.name, record });
          return { deadLetterTopic: "dlq" };
        },
      }),
    );
    driver.pipe("in", "k", "hey!", { timestamp: 5 });
    expect(records).toEqual([
      { node: expect.stringMatching(/^KSTREAM-SINK-/), error: "SyntaxError", record: { topic: "out", key: "k", value: "hey!", timestamp: 5, headers: [] } },
    ]);
    expect(driver.records("dlq").map((r) => [r.key, r.value])).toEqual([["k", "hey!"]]);
  });
});

describe("records a topology writes to a topic it reads", () => {
  it("are held to MAX_INPUT_RECORD_BYTES, so that they too can be dead-lettered where they are read", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("in", { key: Serdes.string(), value: Serdes.number() })
      .mapValues((n) => "x".repeat(n))
      .repartition({ name: "wide", value: Serdes.string() })
      .to("out", { value: Serdes.string() });
    const driver = new TopologyTestDriver(builder.build({ applicationId: "rp", topics: { in: 1, out: 1 }, onProductionError: "continue" }));
    driver.pipe("in", "k", String(MAX_INPUT_RECORD_BYTES - 1));
    driver.pipe("in", "k", String(MAX_INPUT_RECORD_BYTES + 1));
    expect(driver.records("out").map((r) => r.value?.length)).toEqual([MAX_INPUT_RECORD_BYTES - 1]);
    expect(driver.tasks.get("0_0")!.eventMetrics.productionErrorsContinued).toBe(1);
  });
});
