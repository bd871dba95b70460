import { describe, expect, it } from "vitest";
import {
  createTaskProcessor,
  DEAD_LETTER_HEADERS,
  DeserializationError,
  InMemoryStoreBackend,
  Materialized,
  ProcessingError,
  ProductionError,
  Serdes,
  StreamsBuilder,
  TimeWindows,
  TopologyError,
  TopologyTestDriver,
  type BuildOptions,
  type InputRecord,
  type OutgoingRecord,
  type Processor,
  type ProcessorContext,
} from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };
const input = (offset: number, value: string, timestamp = 1000 + offset): InputRecord => ({
  topic: "in",
  partition: 0,
  offset,
  key: "k",
  value,
  timestamp,
  headers: [],
});

function capture() {
  const sent: OutgoingRecord[] = [];
  return { sent, deps: { stores: new InMemoryStoreBackend(), collector: { send: (r: OutgoingRecord) => void sent.push(r) } } };
}

describe("timestamp extractors", () => {
  interface Reading {
    readonly at: number;
    readonly celsius: number;
  }
  function readings(options: Partial<BuildOptions> = {}) {
    const builder = new StreamsBuilder();
    builder
      .stream("in", { key: Serdes.string(), value: Serdes.json<Reading>(), timestampExtractor: (record) => record.value.at })
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeWithNoGrace(100))
      .count(Materialized.as("per-100ms", { retentionMs: 10_000 }));
    return builder.build({ applicationId: "ts", topics: { in: 1, dlq: 1 }, ...options });
  }

  it("give records their event time: windows, stream time and the changelog go by it", () => {
    const { sent, deps } = capture();
    const task = createTaskProcessor(readings(), "0_0", deps);
    task.process(input(0, JSON.stringify({ at: 150, celsius: 20 }), 999_999));
    task.process(input(1, JSON.stringify({ at: 120, celsius: 21 }), 5));
    task.process(input(2, JSON.stringify({ at: 40, celsius: 22 }), 999_999_999));
    expect(task.streamTimeMs).toBe(150);
    const changelog = sent.filter((r) => r.topic === "ts-per-100ms-changelog");
    // Window [100, 200) is written twice, each time stamped with its latest record's event time.
    expect(new Set(changelog.map((r) => r.timestamp))).toEqual(new Set([150]));
    // The record at 40 is late for [0, 100): stream time 150 has closed it.
    expect(task.eventMetrics.lateRecordsDropped).toBe(1);
  });

  it("treat an invalid time (negative, NaN, a throw) as a processing error", () => {
    for (const bad of ['{"at": -1}', '{"at": "soon"}', "null"]) {
      expect(() => createTaskProcessor(readings(), "0_0", capture().deps).process(input(0, bad))).toThrow(ProcessingError);
    }
    const { sent, deps } = capture();
    const skipping = createTaskProcessor(readings({ onProcessingError: "continue" }), "0_0", deps);
    skipping.process(input(0, '{"at": -5}'));
    skipping.process(input(1, '{"at": 30}'));
    // The invalid record is not processed and does not move stream time.
    expect(skipping.streamTimeMs).toBe(30);
    expect(skipping.metrics.processedRecords).toBe(1);
    expect(skipping.eventMetrics.processingErrorsContinued).toBe(1);

    const dead = capture();
    createTaskProcessor(readings({ onProcessingError: { deadLetterTopic: "dlq" } }), "0_0", dead.deps).process(input(7, '{"at": -5}'));
    expect(dead.sent).toHaveLength(1);
    expect(dead.sent[0]).toMatchObject({ topic: "dlq", key: "k", value: '{"at": -5}' });
    expect(dead.sent[0]!.headers).toContainEqual({ key: DEAD_LETTER_HEADERS.exception, value: "RangeError" });
    expect(dead.sent[0]!.headers).toContainEqual({ key: DEAD_LETTER_HEADERS.message, value: expect.stringMatching(/^invalid timestamp -5/) });
    expect(dead.sent[0]!.headers).toContainEqual({ key: DEAD_LETTER_HEADERS.offset, value: "7" });
  });
});

describe("processing errors", () => {
  /** in → mapValues (fails on "bad") → out, and a second branch that always succeeds → audit. */
  function fragile(options: Partial<BuildOptions> = {}) {
    const builder = new StreamsBuilder();
    const source = builder.stream("in", str);
    source
      .mapValues((v) => {
        if (v === "bad") throw new Error(`cannot map ${v}`);
        return v.toUpperCase();
      })
      .to("out");
    source.to("audit");
    return new TopologyTestDriver(builder.build({ applicationId: "pe", topics: { in: 1, out: 1, audit: 1, dlq: 1 }, ...options }));
  }

  it('"fail" (the default) throws ProcessingError naming the node and the record', () => {
    const driver = fragile();
    driver.pipe("in", "k", "ok");
    let thrown: unknown;
    try {
      driver.pipe("in", "k", "bad");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ProcessingError);
    expect((thrown as ProcessingError).node).toMatch(/^KSTREAM-MAPVALUES-/);
    expect((thrown as ProcessingError).origin).toEqual({ topic: "in", partition: 0, offset: 1 });
    expect((thrown as Error).message).toMatch(/KSTREAM-MAPVALUES-\d+ failed on in\/0 offset 1: cannot map bad/);
  });

  it('"continue" drops the record at the failing node only; the rest of the topology still sees it', () => {
    const driver = fragile({ onProcessingError: "continue" });
    for (const v of ["a", "bad", "b"]) driver.pipe("in", "k", v);
    expect(driver.records("out").map((r) => r.value)).toEqual(['"A"', '"B"']);
    expect(driver.records("audit").map((r) => r.value)).toEqual(["a", "bad", "b"]);
    expect(driver.tasks.get("0_0")!.eventMetrics.processingErrorsContinued).toBe(1);
    expect(driver.tasks.get("0_0")!.metrics.processedRecords).toBe(3);
  });

  it("a dead letter topic receives the input record with Kafka's headers naming the error and where the record was read", () => {
    const driver = fragile({ onProcessingError: { deadLetterTopic: "dlq" } });
    driver.pipe("in", "k", "bad", { headers: [{ key: "trace", value: "t1" }] });
    const [dead] = driver.records("dlq");
    expect(dead).toMatchObject({ key: "k", value: "bad" });
    expect(dead!.headers).toEqual([
      { key: "trace", value: "t1" },
      { key: DEAD_LETTER_HEADERS.exception, value: "Error" },
      { key: DEAD_LETTER_HEADERS.message, value: "cannot map bad" },
      { key: DEAD_LETTER_HEADERS.stacktrace, value: expect.stringMatching(/^Error: cannot map bad\n\s+at /) },
      { key: DEAD_LETTER_HEADERS.topic, value: "in" },
      { key: DEAD_LETTER_HEADERS.partition, value: "0" },
      { key: DEAD_LETTER_HEADERS.offset, value: "0" },
    ]);
    expect(driver.tasks.get("0_0")!.eventMetrics.processingErrorsDeadLettered).toBe(1);
  });

  it("never swallow corrupt store state, whatever the handler", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", str).groupByKey().count(Materialized.as("n"));
    const topology = builder.build({ applicationId: "c", topics: { in: 1 }, onProcessingError: "continue" });
    const stores = new InMemoryStoreBackend();
    stores.keyValue("n").put("k", "not a count");
    const task = createTaskProcessor(topology, "0_0", { stores, collector: { send: () => {} } });
    expect(() => task.process(input(0, "v"))).toThrow(DeserializationError);
  });

  it("include reaching a store through the wrong kind of view", () => {
    const builder = new StreamsBuilder().addWindowStore("w");
    builder.stream("in", str).process((): Processor<string, string> => {
      let context: ProcessorContext<never, never> | undefined;
      return { init: (c) => void (context = c), process: () => void context!.getStateStore("w") };
    }, "w");
    const task = createTaskProcessor(builder.build({ applicationId: "v", topics: { in: 1 } }), "0_0", capture().deps);
    expect(() => task.process(input(0, "v"))).toThrow(/store "w" is a window store, not a key-value store/);
  });
});

describe("production errors", () => {
  const picky = Serdes.from<string>(
    (value) => {
      if (value.includes("!")) throw new Error(`unprintable ${value}`);
      return value;
    },
    (text) => text,
  );
  function producing(options: Partial<BuildOptions> = {}) {
    const builder = new StreamsBuilder();
    builder.stream("in", str).to("out", { value: picky });
    return new TopologyTestDriver(builder.build({ applicationId: "pr", topics: { in: 1, out: 1, dlq: 1 }, ...options }));
  }

  it('"fail" throws ProductionError naming the sink', () => {
    const driver = producing();
    expect(() => driver.pipe("in", "k", "hey!")).toThrow(ProductionError);
    expect(() => producing().pipe("in", "k", "hey!")).toThrow(/KSTREAM-SINK-\d+ failed on in\/0 offset 0: unprintable hey!/);
  });

  it('"continue" drops the output record and counts it; a dead letter topic gets the input record', () => {
    const driver = producing({ onProductionError: "continue" });
    for (const v of ["a", "b!", "c"]) driver.pipe("in", "k", v);
    expect(driver.records("out").map((r) => r.value)).toEqual(["a", "c"]);
    expect(driver.tasks.get("0_0")!.eventMetrics.productionErrorsContinued).toBe(1);

    const dead = producing({ onProductionError: { deadLetterTopic: "dlq" } });
    dead.pipe("in", "k", "b!");
    expect(dead.records("dlq").map((r) => [r.key, r.value])).toEqual([["k", "b!"]]);
    expect(dead.records("dlq")[0]!.headers).toContainEqual({ key: DEAD_LETTER_HEADERS.message, value: "unprintable b!" });
    expect(dead.tasks.get("0_0")!.eventMetrics.productionErrorsDeadLettered).toBe(1);
  });

  it("a production handler is given the record the sink was producing, with its topic", () => {
    const seen: unknown[] = [];
    const driver = producing({
      onProductionError: (_context, _error, record) => {
        seen.push(record);
        return "continue";
      },
    });
    driver.pipe("in", "k", "b!", { timestamp: 5 });
    expect(seen).toEqual([{ topic: "out", key: "k", value: "b!", timestamp: 5, headers: [] }]);
  });

  it("a partitioner's failure is a production error too", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", str).to("out", { partitioner: () => 7 });
    const driver = new TopologyTestDriver(builder.build({ applicationId: "pp", topics: { in: 1, out: 2 }, onProductionError: "continue" }));
    driver.pipe("in", "k", "v");
    expect(driver.records("out")).toEqual([]);
    expect(driver.tasks.get("0_0")!.eventMetrics.productionErrorsContinued).toBe(1);
  });
});

describe("handler configuration", () => {
  it("requires declared dead letter topics and exposes the uncaught error policy", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", str).to("out");
    const app = { applicationId: "h", topics: { in: 1, out: 1 } };
    expect(() => builder.build({ ...app, onProcessingError: { deadLetterTopic: "nope" } })).toThrow(TopologyError);
    expect(() => builder.build({ ...app, onProductionError: { deadLetterTopic: "nope" } })).toThrow(/dead letter topic "nope"/);
    const error = new Error("boom");
    expect(builder.build(app).uncaughtErrorPolicy(error)).toBe("fail");
    expect(builder.build({ ...app, onUncaughtError: "retry" }).uncaughtErrorPolicy(error)).toBe("retry");
    // A function chooses per error; one that throws, or answers nonsense, chooses "fail".
    const byKind = builder.build({ ...app, onUncaughtError: (e) => (e instanceof RangeError ? "retry" : "shutdown-application") });
    expect(byKind.uncaughtErrorPolicy(new RangeError("timeout"))).toBe("retry");
    expect(byKind.uncaughtErrorPolicy(error)).toBe("shutdown-application");
    const throwing = builder.build({
      ...app,
      onUncaughtError: () => {
        throw new Error("handler bug");
      },
    });
    expect(throwing.uncaughtErrorPolicy(error)).toBe("fail");
    const nonsense = builder.build({ ...app, onUncaughtError: () => "ignore" as never });
    expect(nonsense.uncaughtErrorPolicy(error)).toBe("fail");
  });
});
