import { describe, expect, it } from "vitest";
import {
  createTaskProcessor,
  DEAD_LETTER_HEADERS,
  DeserializationError,
  InMemoryStoreBackend,
  Materialized,
  POSITION_HEADER,
  positionFromHeaders,
  Serdes,
  StreamsBuilder,
  type DeserializationHandler,
  type InputRecord,
  type OutgoingRecord,
  type Processor,
  type ProcessorContext,
  type StreamRecord,
} from "../../src/streams";
import { positionHeader } from "../../src/streams/runtime/position-header";

function capture() {
  const sent: OutgoingRecord[] = [];
  return { sent, collector: { send: (record: OutgoingRecord) => void sent.push(record) } };
}

const input = (offset: number, key: string | null, value: string, timestamp = 1000 + offset): InputRecord => ({
  topic: "in",
  partition: 1,
  offset,
  key,
  value,
  timestamp,
  headers: [],
});

/** A processor keeping a set of words: "+w" adds, "-w" deletes, "!w" re-adds with a new value. */
class WordSet implements Processor<string, string, string, number> {
  private context?: ProcessorContext<string, number>;
  readonly seen: { meta: unknown; streamTime: number; task: string; partition: number }[] = [];

  init(context: ProcessorContext<string, number>): void {
    this.context = context;
  }

  process(record: StreamRecord<string, string>): void {
    const context = this.context!;
    const store = context.getStateStore<string, number>("words");
    const word = record.value.slice(1);
    this.seen.push({ meta: context.recordMetadata(), streamTime: context.currentStreamTimeMs(), task: context.taskId, partition: context.partition });
    if (record.value.startsWith("+")) store.put(word, word.length);
    else if (record.value.startsWith("-")) store.delete(word);
    else store.put(word, -word.length);
    context.forward({ ...record, key: word, value: store.all().length });
  }
}

function wordSetTopology(handler?: DeserializationHandler, instances: WordSet[] = []) {
  const builder = new StreamsBuilder().addStateStore("words", { key: Serdes.string(), value: Serdes.number() });
  builder
    .stream("in", {
      key: Serdes.string(),
      value: Serdes.from(
        (v: string) => v,
        (t) => {
          if (!/^[+!-]/.test(t)) throw new Error("no op");
          return t;
        },
      ),
    })
    .process(() => {
      const processor = new WordSet();
      instances.push(processor);
      return processor;
    }, "words")
    .to("out", { key: Serdes.string(), value: Serdes.number() });
  return builder.build({ applicationId: "words", topics: { in: 2, out: 1, dlq: 1 }, ...(handler ? { onDeserializationError: handler } : {}) });
}

describe("change logging", () => {
  it("sends one changelog record per store write, in write order, to the task's partition, tombstones for deletes", () => {
    const stores = new InMemoryStoreBackend();
    const { sent, collector } = capture();
    const task = createTaskProcessor(wordSetTopology(), "0_1", { stores, collector });
    ["+cat", "+dog", "!cat", "-dog", "-emu"].forEach((v, i) => task.process(input(i, "k", v)));

    const changelog = sent.filter((r) => r.topic === "words-words-changelog");
    expect(changelog.map(({ partition, key, value, timestamp }) => ({ partition, key, value, timestamp }))).toEqual([
      { partition: 1, key: "cat", value: "3", timestamp: 1000 },
      { partition: 1, key: "dog", value: "3", timestamp: 1001 },
      { partition: 1, key: "cat", value: "-3", timestamp: 1002 },
      { partition: 1, key: "dog", value: null, timestamp: 1003 },
      { partition: 1, key: "emu", value: null, timestamp: 1004 },
    ]);
    // Each changelog record names the input record it reflects.
    expect(changelog.map((r) => positionFromHeaders(r.headers))).toEqual([0, 1, 2, 3, 4].map((offset) => ({ topic: "in", partition: 1, offset })));
    // Replaying the changelog rebuilds the store exactly.
    const replayed = new InMemoryStoreBackend();
    for (const r of changelog) r.value === null ? replayed.keyValue("words").delete(r.key!) : replayed.keyValue("words").put(r.key!, r.value);
    expect(replayed.contents("words")).toEqual(stores.contents("words"));
    expect(stores.contents("words")).toEqual({ cat: "-3" });
  });
});

describe("the Processor API", () => {
  it("gives processors their task, typed stores, record metadata and stream time, and forwards downstream", () => {
    const instances: WordSet[] = [];
    const { sent, collector } = capture();
    const task = createTaskProcessor(wordSetTopology(undefined, instances), "0_1", { stores: new InMemoryStoreBackend(), collector });
    task.process(input(5, "k", "+owl", 50));
    task.process(input(6, "k", "+bee", 20));

    expect(instances).toHaveLength(1);
    expect(instances[0]!.seen).toEqual([
      { meta: { topic: "in", partition: 1, offset: 5 }, streamTime: 50, task: "0_1", partition: 1 },
      { meta: { topic: "in", partition: 1, offset: 6 }, streamTime: 50, task: "0_1", partition: 1 },
    ]);
    expect(sent.filter((r) => r.topic === "out").map((r) => [r.key, r.value, r.timestamp])).toEqual([
      ["owl", "1", 50],
      ["bee", "2", 20],
    ]);
  });

  it("makes a fresh processor per task and closes it with the task", () => {
    const closed: string[] = [];
    const builder = new StreamsBuilder();
    builder.stream("in").process<never, never>(() => {
      let id = "";
      return { init: (c) => void (id = c.taskId), process: () => {}, close: () => void closed.push(id) };
    });
    const topology = builder.build({ applicationId: "p", topics: { in: 2 } });
    const tasks = topology.taskIds().map((id) => createTaskProcessor(topology, id, { stores: new InMemoryStoreBackend(), collector: capture().collector }));
    tasks.forEach((t) => t.close());
    expect(closed).toEqual(["0_0", "0_1"]);
    expect(() => tasks[0]!.process({ ...input(0, "k", "v"), partition: 0 })).toThrow(/closed/);
  });

  it("refuses a store the processor was not connected to", () => {
    const builder = new StreamsBuilder().addStateStore("s");
    builder.stream("in").process((): Processor<unknown, unknown> => {
      let context: ProcessorContext<never, never> | undefined;
      return { init: (c) => void (context = c), process: () => context!.getStateStore("s") };
    });
    builder.stream("other").process(() => ({ process: () => {} }), "s");
    const topology = builder.build({ applicationId: "p", topics: { in: 1, other: 1 } });
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: capture().collector });
    expect(() => task.process({ ...input(0, '"k"', '"v"'), partition: 0 })).toThrow(/not connected to store "s"/);
  });
});

describe("deserialization errors", () => {
  const bad = input(1, "k", "garbage");

  it('"fail" (the default) throws DeserializationError naming the record, and sends nothing', () => {
    const { sent, collector } = capture();
    const task = createTaskProcessor(wordSetTopology(), "0_1", { stores: new InMemoryStoreBackend(), collector });
    expect(() => task.process(bad)).toThrow(DeserializationError);
    try {
      task.process(bad);
    } catch (error) {
      expect((error as DeserializationError).origin).toEqual({ topic: "in", partition: 1, offset: 1 });
      expect((error as Error).message).toMatch(/value of in\/1 offset 1/);
    }
    expect(sent).toEqual([]);
    expect(task.metrics.processedRecords).toBe(0);
  });

  it('"skip" counts the record and goes on with the next', () => {
    const { sent, collector } = capture();
    const task = createTaskProcessor(wordSetTopology("skip"), "0_1", { stores: new InMemoryStoreBackend(), collector });
    task.process(bad);
    task.process(input(2, "k", "+yak"));
    expect(task.metrics).toEqual({ processedRecords: 1, skippedRecords: 1, deadLetteredRecords: 0, droppedRecords: 0 });
    expect(sent.filter((r) => r.topic === "out")).toHaveLength(1);
    // The undecodable record did not move stream time.
    expect(task.streamTimeMs).toBe(1002);
  });

  it("a dead letter topic receives the raw record with headers naming the error", () => {
    const { sent, collector } = capture();
    const task = createTaskProcessor(wordSetTopology({ deadLetterTopic: "dlq" }), "0_1", { stores: new InMemoryStoreBackend(), collector });
    task.process({ ...bad, headers: [{ key: "origin", value: "test" }] });
    expect(sent).toEqual([
      {
        topic: "dlq",
        key: "k",
        value: "garbage",
        timestamp: bad.timestamp,
        headers: [
          { key: "origin", value: "test" },
          // What the serde threw (a serde's errors are DeserializationErrors, as Kafka's deserializers throw SerializationException).
          { key: DEAD_LETTER_HEADERS.exception, value: "DeserializationError" },
          { key: DEAD_LETTER_HEADERS.message, value: expect.stringContaining("no op") },
          { key: DEAD_LETTER_HEADERS.stacktrace, value: expect.stringContaining("no op") },
          { key: DEAD_LETTER_HEADERS.topic, value: "in" },
          { key: DEAD_LETTER_HEADERS.partition, value: "1" },
          { key: DEAD_LETTER_HEADERS.offset, value: "1" },
        ],
      },
    ]);
    expect(task.metrics).toMatchObject({ deadLetteredRecords: 1, processedRecords: 0 });
  });

  it("applies to keys as well as values", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", { key: Serdes.number() }).to("out");
    const topology = builder.build({ applicationId: "k", topics: { in: 1, out: 1 }, onDeserializationError: "skip" });
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: capture().collector });
    task.process({ ...input(0, "not-a-number", "1"), partition: 0 });
    expect(task.metrics.skippedRecords).toBe(1);
  });
});

describe("task processors", () => {
  it("track stream time as the largest timestamp seen, resuming from a given value", () => {
    const topology = wordSetTopology();
    const task = createTaskProcessor(topology, "0_1", { stores: new InMemoryStoreBackend(), collector: capture().collector, initialStreamTimeMs: 1500 });
    expect(task.streamTimeMs).toBe(1500);
    task.process(input(0, "k", "+a", 1200));
    expect(task.streamTimeMs).toBe(1500);
    task.process(input(1, "k", "+b", 2000));
    task.process(input(2, "k", "+c", 1800));
    expect(task.streamTimeMs).toBe(2000);
    expect(task.metrics.processedRecords).toBe(3);
  });

  it("exist only for the topology's task ids and accept only their own partition's records", () => {
    const topology = wordSetTopology();
    const deps = { stores: new InMemoryStoreBackend(), collector: capture().collector };
    expect(() => createTaskProcessor(topology, "0_2", deps)).toThrow(/unknown task "0_2".*0_0, 0_1/);
    expect(() => createTaskProcessor(topology, "1_0", deps)).toThrow(/unknown task/);
    expect(() => createTaskProcessor(topology, "x", deps)).toThrow(/unknown task/);
    const task = createTaskProcessor(topology, "0_1", deps);
    expect(task.sourceTopics).toEqual(["in"]);
    expect(() => task.process({ ...input(0, "k", "+a"), partition: 0 })).toThrow(/reads partition 1/);
    expect(() => task.process({ ...input(0, "k", "+a"), topic: "out" })).toThrow(/not out\/1/);
  });

  it("log store writes made in init() with the clock's timestamp and no position", () => {
    const builder = new StreamsBuilder().addStateStore("s");
    builder.stream("in").process(() => ({ init: (c) => c.getStateStore<string, number>("s").put("boot", 1), process: () => {} }), "s");
    const { sent, collector } = capture();
    createTaskProcessor(builder.build({ applicationId: "i", topics: { in: 1 } }), "0_0", { stores: new InMemoryStoreBackend(), collector, clock: () => 42 });
    expect(sent).toEqual([{ topic: "i-s-changelog", partition: 0, key: '"boot"', value: "1", timestamp: 42, headers: [] }]);
  });
});

describe("stores", () => {
  it("order keys by UTF-8 bytes and answer inclusive ranges, prefixes and limits", () => {
    const store = new InMemoryStoreBackend().keyValue("s");
    for (const key of ["b", "a", "ab", "\u{1F600}", "\uFFFD", "c"]) store.put(key, key.toUpperCase());
    // U+FFFD sorts before U+1F600 in UTF-8 (and SQLite), unlike JavaScript's UTF-16 `<`.
    expect(store.range().map((e) => e.key)).toEqual(["a", "ab", "b", "c", "\uFFFD", "\u{1F600}"]);
    expect(store.range("ab", "c").map((e) => e.key)).toEqual(["ab", "b", "c"]);
    expect(store.range(undefined, undefined, 2).map((e) => e.key)).toEqual(["a", "ab"]);
    expect(store.prefix("a")).toEqual([
      { key: "a", value: "A" },
      { key: "ab", value: "AB" },
    ]);
  });

  it("report corrupt stored values as DeserializationError naming the store", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", { key: Serdes.string(), value: Serdes.string() }).groupByKey().count(Materialized.as("n"));
    const stores = new InMemoryStoreBackend();
    stores.keyValue("n").put("k", "not a count");
    const task = createTaskProcessor(builder.build({ applicationId: "c", topics: { in: 1 } }), "0_0", { stores, collector: capture().collector });
    expect(() => task.process({ ...input(0, "k", "v"), partition: 0 })).toThrow(/store n: cannot deserialize a stored value/);
  });
});

describe("the position header", () => {
  it("names the input position in a short form, and still reads the JSON form of changelogs written before", () => {
    const header = (value: string) => [{ key: POSITION_HEADER, value }];
    for (const position of [
      { topic: "orders", partition: 0, offset: 0 },
      { topic: "my.app-orders_v2", partition: 255, offset: 9_007_199_254_740_991 },
      // A record context without a topic (as Kafka's store tests set one).
      { topic: "", partition: 0, offset: 1 },
    ]) {
      const written = positionHeader(position);
      expect(written).toEqual({ key: POSITION_HEADER, value: `${position.topic}/${position.partition}/${position.offset}` });
      expect(positionFromHeaders([{ key: "other", value: "x" }, written])).toEqual(position);
    }
    expect(positionFromHeaders(header(JSON.stringify({ topic: "orders", partition: 3, offset: 17 })))).toEqual({ topic: "orders", partition: 3, offset: 17 });
    for (const bad of ["", "orders", "0/1", "orders/x/1", "orders/0/-1", "orders/0/1.5", "orders/01/2", "orders/0/", "{not json", '{"topic":"t"}']) {
      expect(positionFromHeaders(header(bad)), bad).toBeUndefined();
    }
    expect(positionFromHeaders([])).toBeUndefined();
  });
});
