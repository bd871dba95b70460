/**
 * What Kafka Streams' own operator tests use, in the form the ported tests need: input and output
 * topics typed with serdes (`TestInputTopic`, `TestOutputTopic`), a processor that captures what
 * reaches it (`MockApiProcessorSupplier`), `KeyValueTimestamp`, the mock joiners, initializers and
 * aggregators, and Windowed keys written as Kafka's `Windowed#toString` (`[key@start/end]`).
 * Everything runs on `TopologyTestDriver`; every topic has one partition, as in Kafka's driver.
 */
import { expect } from "vitest";
import {
  type BuildOptions,
  type Change,
  type JoinWindows,
  type KTable,
  type ProcessorSupplier,
  type Serde,
  Serdes,
  StreamsBuilder,
  type Topology,
  TopologyTestDriver,
  type Windowed,
} from "../../../src/streams";
import { droppedRecords } from "../../../src/streams/runtime/types";

export interface KeyValueTimestamp<K, V> {
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
}

export function kvt<K, V>(key: K, value: V, timestamp: number): KeyValueTimestamp<K, V> {
  return { key, value, timestamp };
}

/** Kafka's `Serdes.Integer()` and `Serdes.Long()` both become numbers here. */
export const INTEGER = Serdes.number();
export const STRING = Serdes.string();

/** `MockValueJoiner.TOSTRING_JOINER`: `value1 + "+" + value2` (a null becomes "null", as in Java). */
export const TOSTRING_JOINER = (a: unknown, b: unknown): string => `${String(a)}+${String(b)}`;
/** `MockInitializer.STRING_INIT`. */
export const STRING_INIT = (): string => "0";
/** `MockAggregator.TOSTRING_ADDER` / `toStringInstance(sep)`: `aggregate + sep + value`. */
export const toStringAdder =
  (separator = "+") =>
  (_key: unknown, value: unknown, aggregate: string): string =>
    `${aggregate}${separator}${String(value)}`;
/** `MockReducer.STRING_ADDER`. */
export const STRING_ADDER = (a: string, b: string): string => `${a}+${b}`;

/** `Windowed#toString`, as Kafka's tests map windowed keys before writing them to a topic. */
export function windowedString(key: Windowed<unknown>): string {
  return `[${String(key.key)}@${key.window.start}/${key.window.end}]`;
}

/** Builds with every topic given at one partition, as Kafka's TopologyTestDriver has them. */
export function build(builder: { build(options: BuildOptions): Topology }, ...topics: string[]): Topology {
  return builder.build({ applicationId: "kafka-test", topics: Object.fromEntries(topics.map((t) => [t, 1])) });
}

/**
 * `build` with Kafka's `default.key.serde`, for the tests whose props set one
 * (`StreamsTestUtils.getStreamsConfig(Serdes.String(), …)`): the key serde of a grouping after a
 * key change that gives none.
 */
export function buildWithDefaultKeySerde(builder: { build(options: BuildOptions): Topology }, keySerde: Serde<unknown>, ...topics: string[]): Topology {
  return builder.build({ applicationId: "kafka-test", topics: Object.fromEntries(topics.map((t) => [t, 1])), defaultKeySerde: keySerde });
}

/** Kafka's `TestInputTopic`: records typed with serdes; without a timestamp, `start` plus `advance` per record. */
export class TestInputTopic<K, V> {
  private next: number;

  constructor(
    private readonly driver: TopologyTestDriver,
    private readonly topic: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    start = 0,
    private readonly advance = 0,
  ) {
    this.next = start;
  }

  pipeInput(key: K | null, value: V | null, timestamp?: number): void {
    const time = timestamp ?? this.next;
    if (timestamp === undefined) this.next += this.advance;
    this.driver.pipe(this.topic, key === null ? null : this.keySerde.serialize(key), value === null ? null : this.valueSerde.serialize(value), {
      timestamp: time,
    });
  }
}

/** Kafka's `TestOutputTopic`: reads a topic's records in order, each once. */
export class TestOutputTopic<K, V> {
  private read = 0;

  constructor(
    private readonly driver: TopologyTestDriver,
    private readonly topic: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  readRecordsToList(): KeyValueTimestamp<K | null, V | null>[] {
    const records = this.driver.records(this.topic).slice(this.read);
    this.read += records.length;
    return records.map((r) =>
      kvt(r.key === null ? null : this.keySerde.deserialize(r.key), r.value === null ? null : this.valueSerde.deserialize(r.value), r.timestamp),
    );
  }

  readRecord(): KeyValueTimestamp<K | null, V | null> {
    const [record] = this.driver.records(this.topic).slice(this.read, this.read + 1);
    if (!record) throw new Error(`no record left on ${this.topic}`);
    this.read++;
    return kvt(
      record.key === null ? null : this.keySerde.deserialize(record.key),
      record.value === null ? null : this.valueSerde.deserialize(record.value),
      record.timestamp,
    );
  }

  /** Kafka's `readKeyValuesToMap`: the latest value per key (keys compared as JSON), in the order keys first appear. */
  readKeyValuesToMap(): Map<K | null, V | null> {
    const latest = new Map<string, KeyValueTimestamp<K | null, V | null>>();
    for (const record of this.readRecordsToList()) latest.set(JSON.stringify(record.key), record);
    return new Map([...latest.values()].map((r) => [r.key, r.value]));
  }

  isEmpty(): boolean {
    return this.driver.records(this.topic).length === this.read;
  }
}

/** Kafka's `assertOutputKeyValueTimestamp`. */
export function assertOutputKeyValueTimestamp<K, V>(output: TestOutputTopic<K, V>, key: K, value: V | null, timestamp: number): void {
  expect(output.readRecord()).toEqual(kvt(key, value, timestamp));
}

/** Kafka's `MockApiProcessorSupplier` with its one captured processor: every record it is given, in order. */
export class MockApiProcessorSupplier<K, V> {
  readonly processed: KeyValueTimestamp<K, V>[] = [];

  get supplier(): ProcessorSupplier<K, V, never, never> {
    return () => ({ process: (record) => void this.processed.push(kvt(record.key, record.value, record.timestamp)) });
  }

  /** Asserts what arrived since the last check, in order, then forgets it. */
  checkAndClearProcessResult(...expected: KeyValueTimestamp<K, V>[]): void {
    expect(this.processed.splice(0)).toEqual(expected);
  }

  /** The latest value and timestamp per key (keys compared as JSON). */
  lastValueAndTimestampPerKey(): Map<string, { value: V; timestamp: number }> {
    return new Map(this.processed.map((r) => [JSON.stringify(r.key), { value: r.value, timestamp: r.timestamp }]));
  }
}

/** Kafka's `new Change<>(newValue, oldValue)`, as a table's processors pass updates. */
export function chg<V>(newValue: V | null, oldValue: V | null): Change<V> {
  return { newValue, oldValue };
}

/**
 * Kafka's `topology.addProcessor(name, supplier, table.name)`: a processor right after the
 * table's node, so it sees the table's updates as changes (new and old value), not `toStream()`'s
 * new values.
 */
export function addTableProcessor<K, V>(table: KTable<K, V, null> | KTable<K, V>, supplier: MockApiProcessorSupplier<K, Change<V>>): void {
  const node = (table as KTable<K, V, null>).node;
  (table as KTable<K, V, null>).graph.addProcessor("PROC", {
    parents: [node],
    supplier: supplier.supplier as ProcessorSupplier<unknown, unknown, unknown, unknown>,
    stores: [],
  });
}

/** Task 0_0's counters, where Kafka's tests read its metrics. */
export function taskMetrics(driver: TopologyTestDriver, taskId = "0_0") {
  const task = driver.tasks.get(taskId);
  if (!task) throw new Error(`no task ${taskId}`);
  return { ...task.metrics, ...task.eventMetrics };
}

/** Kafka's `dropped-records-total` of a task: skipped, invalid and late records, and records an error handler let go. */
export function droppedRecordsTotal(driver: TopologyTestDriver, taskId = "0_0"): number {
  const task = driver.tasks.get(taskId);
  if (!task) throw new Error(`no task ${taskId}`);
  return droppedRecords(task.eventMetrics);
}

/**
 * What a Kafka test with a caching store sees when the cache is flushed: per key, the last value
 * written, in the order of the keys' last writes, leaving out keys whose last write deleted them
 * (Kafka's cache forwards no tombstone without old values). Edge Streams forwards every update;
 * this turns them into what Kafka's cached tests assert.
 */
export function cacheFlush<K, V>(processed: readonly KeyValueTimestamp<K, V | null>[]): KeyValueTimestamp<K, V>[] {
  const last = new Map<string, KeyValueTimestamp<K, V | null>>();
  for (const record of processed) {
    const key = JSON.stringify(record.key);
    last.delete(key);
    last.set(key, record);
  }
  return [...last.values()].filter((r): r is KeyValueTimestamp<K, V> => r.value !== null);
}

/** Java's `String#compareTo` for the strings these tests sort by (UTF-16 code units, no locale). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Each subtopology's topics and stores, as Kafka's topology descriptions show them (sorted). */
export function subtopologySummary(topology: Topology) {
  return topology.subtopologies.map((s) => ({
    sources: [...s.sourceTopics].sort(),
    sinks: [...s.sinkTopics].sort(),
    stores: s.stores.map((store) => store.name).sort(),
  }));
}

/**
 * The `@BeforeEach` of Kafka's windowed cogroup tests (Time-, Session- and
 * SlidingWindowedCogroupedKStreamImplTest): string streams `topic` and `topic2`, each grouped by
 * key, cogrouped with `TOSTRING_ADDER` ("+") and `TOSTRING_REMOVER` ("-"), in Kafka's order.
 */
export function cogroupedStringStreams(builder: StreamsBuilder, topic: string, topic2: string) {
  const stream = builder.stream(topic, { key: STRING, value: STRING });
  const stream2 = builder.stream(topic2, { key: STRING, value: STRING });
  const groupedStream = stream.groupByKey({ key: STRING, value: STRING });
  const groupedStream2 = stream2.groupByKey({ key: STRING, value: STRING });
  const cogroupedStream = groupedStream.cogroup(toStringAdder("+")).cogroup(groupedStream2, toStringAdder("-"));
  return { groupedStream, cogroupedStream };
}

/**
 * The set-up of Kafka's KStreamKStream*JoinTest files: two streams of Integer keys (String values
 * on the left, `otherValue` on the right) on "topic1" and "topic2", joined by `kind` with
 * TOSTRING_JOINER into a captured processor. As Kafka does, it checks that the join's two topics
 * form one co-partition group (one subtopology here).
 */
export function joinedStreams<V2>(kind: "join" | "leftJoin" | "outerJoin", windows: JoinWindows, otherValue: Serde<V2>) {
  const [topic1, topic2] = ["topic1", "topic2"];
  const builder = new StreamsBuilder();
  const stream1 = builder.stream(topic1, { key: INTEGER, value: STRING });
  const stream2 = builder.stream(topic2, { key: INTEGER, value: otherValue });
  const serdes = { key: INTEGER, value: STRING, otherValue };
  const joined =
    kind === "join"
      ? stream1.join(stream2, TOSTRING_JOINER, windows, serdes)
      : kind === "leftJoin"
        ? stream1.leftJoin(stream2, TOSTRING_JOINER, windows, serdes)
        : stream1.outerJoin(stream2, TOSTRING_JOINER, windows, serdes);
  const processor = new MockApiProcessorSupplier<number, string>();
  joined.process(processor.supplier);
  const topology = build(builder, topic1, topic2);
  expect([...topology.subtopologies[0]!.sourceTopics].sort()).toEqual([topic1, topic2]);
  const driver = new TopologyTestDriver(topology);
  const inputTopic1 = new TestInputTopic(driver, topic1, INTEGER, STRING, 0, 0);
  const inputTopic2 = new TestInputTopic(driver, topic2, INTEGER, otherValue, 0, 0);
  return { topology, driver, processor, inputTopic1, inputTopic2 };
}

/**
 * A windowed cogroup test's driver: the topology of `builder`, `pipe` given string input topics
 * `topic` and `topic2`, then every record of `output` with its windowed string key.
 */
export function runWindowedCogroup(
  builder: StreamsBuilder,
  topics: { topic: string; topic2: string; output: string },
  pipe: (one: TestInputTopic<string, string>, two: TestInputTopic<string, string>) => void,
): KeyValueTimestamp<Windowed<string> | null, string | null>[] {
  const driver = new TopologyTestDriver(build(builder, topics.topic, topics.topic2, topics.output));
  pipe(new TestInputTopic(driver, topics.topic, STRING, STRING), new TestInputTopic(driver, topics.topic2, STRING, STRING));
  return new TestOutputTopic(driver, topics.output, Serdes.windowed(STRING), STRING).readRecordsToList();
}

/** Kafka's `headers.lastHeader(name).value()`, as a string; undefined without one. */
export function lastHeader(record: { readonly headers: readonly { readonly key: string; readonly value: string }[] }, name: string): string | undefined {
  for (let i = record.headers.length - 1; i >= 0; i--) if (record.headers[i]!.key === name) return record.headers[i]!.value;
  return undefined;
}
