/**
 * Ported from Kafka Streams' KTableSuppressProcessorTest: the suppress processor alone, handed
 * table updates (`Change`s, windowed keys or not) and checked for what it forwards — at once with a
 * zero time limit, later by time limit or window close, tombstones dropped only for final results,
 * the oldest entry emitted early when an eager buffer is over its record or byte limit, and the task
 * stopped when a strict one is. Kafka drives the processor with a mock context; here a processor
 * upstream of `suppress` forwards each record the test hands it (the input record piped alongside
 * sets the context: timestamp, headers), and a processor downstream captures what `suppress`
 * forwards. `finalResults(grace)` is `untilWindowCloses(unbounded())` on a table whose windows
 * close at end + grace, as Kafka's `buildFinalResultsSuppression(grace)` makes it.
 */
import { describe, expect, it } from "vitest";
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TopologyTestDriver, type Header, type Windowed } from "../../../src/streams";
import { OldValues, type Change } from "../../../src/streams/dsl/change";
import { KTable } from "../../../src/streams/dsl/ktable";
import type { Serde } from "../../../src/streams/serdes";
import { chg, INTEGER, STRING } from "./support";

const { maxBytes, maxRecords, unbounded } = BufferConfig;
const { untilTimeLimit, untilWindowCloses } = Suppressed;

const ARBITRARY_LONG = 5;
const ARBITRARY_CHANGE = chg(7, 14);
const DAYS_100 = 100 * 24 * 60 * 60 * 1000;

interface Forwarded<K> {
  readonly key: K;
  readonly value: Change<number>;
  readonly timestamp: number;
  readonly headers: readonly Header[];
}

/** Kafka's `new Record<>(key, value, timestamp[, headers])`. */
const record = <K>(key: K, value: Change<number>, timestamp: number, headers: readonly Header[] = []): Forwarded<K> => ({ key, value, timestamp, headers });

const windowed = (key: string, start: number, end: number): Windowed<string> => ({ key, window: { start, end } });

class Harness<K> {
  readonly forwarded: Forwarded<K>[] = [];
  private readonly queue: Forwarded<K>[] = [];
  private readonly driver: TopologyTestDriver;

  constructor(suppressed: Suppressed, keySerde: Serde<K>, finalResultsGrace?: number) {
    const builder = new StreamsBuilder();
    const queue = this.queue;
    const feeder = builder.stream("input", { key: STRING, value: STRING }).process<K, Change<number>>(() => {
      let forward: ((r: Forwarded<K>) => void) | undefined;
      return {
        init: (context) => {
          forward = (r) => context.forward(r);
        },
        process: () => forward!(queue.shift()!),
      };
    });
    const windowing =
      finalResultsGrace === undefined ? undefined : { closeTime: (w: { end: number }) => w.end + finalResultsGrace, innerKeySerde: STRING as Serde<unknown> };
    const table = new KTable<K, number>(
      feeder.graph,
      feeder.node,
      keySerde,
      INTEGER,
      undefined,
      windowing ? { oldValues: new OldValues(), windowing } : { oldValues: new OldValues() },
    );
    const suppressedTable = table.suppress(suppressed);
    // Old values are what the test hands in: the processor is asked to forward them, as Kafka's is.
    suppressedTable.enableSendingOldValues(true);
    const forwarded = this.forwarded;
    suppressedTable.graph.addProcessor("CAPTURE", {
      parents: [suppressedTable.node],
      supplier: () => ({ process: (r: Forwarded<K>) => void forwarded.push(record(r.key, r.value, r.timestamp, r.headers)) }),
      stores: [],
    });
    this.driver = new TopologyTestDriver(builder.build({ applicationId: "suppress-test", topics: { input: 1 } }));
  }

  /** Kafka's `processor.process(record)`, with the context's timestamp and headers. */
  process(r: Forwarded<K>, context: { timestamp?: number; headers?: readonly Header[] } = {}): void {
    const headers = context.headers ?? r.headers;
    this.queue.push({ ...r, headers });
    this.driver.pipe("input", "x", "x", { timestamp: context.timestamp ?? r.timestamp, headers });
  }
}

/** Kafka's `buildFinalResultsSuppression(grace)`: final results, on a table whose windows close at end + grace. */
const finalResults = (grace: number) => new Harness(untilWindowCloses(unbounded()), Serdes.windowed(STRING), grace);

describe("KTableSuppressProcessorTest", () => {
  it("zeroTimeLimitShouldImmediatelyEmit", () => {
    const harness = new Harness(untilTimeLimit(0, unbounded()), STRING);
    const timestamp = ARBITRARY_LONG;
    const key = "hey";
    const value = ARBITRARY_CHANGE;
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("windowedZeroTimeLimitShouldImmediatelyEmit", () => {
    const harness = new Harness(untilTimeLimit(0, unbounded()), Serdes.windowed(STRING));
    const timestamp = ARBITRARY_LONG;
    const key = windowed("hey", 0, 100);
    const value = ARBITRARY_CHANGE;
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("intermediateSuppressionShouldBufferAndEmitLater", () => {
    const harness = new Harness(untilTimeLimit(1, unbounded()), STRING);
    const timestamp = 0;
    const key = "hey";
    const value = chg<number>(null, 1);
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toHaveLength(0);
    harness.process(record("tick", chg<number>(null, null), 1));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("finalResultsSuppressionShouldBufferAndEmitAtGraceExpiration", () => {
    const harness = finalResults(1);
    const windowStart = 99;
    const recordTime = 99;
    const windowEnd = 100;
    const key = windowed("hey", windowStart, windowEnd);
    const value = ARBITRARY_CHANGE;
    harness.process(record(key, value, recordTime));
    expect(harness.forwarded).toHaveLength(0);

    // although the stream time is now 100, we have to wait 1 ms after the window *end* before we
    // emit "hey", so we don't emit yet.
    harness.process(record(windowed("dummyKey1", 100, 101), ARBITRARY_CHANGE, 100));
    expect(harness.forwarded).toHaveLength(0);

    // ok, now it's time to emit "hey"
    harness.process(record(windowed("dummyKey2", 101, 102), ARBITRARY_CHANGE, 101));
    expect(harness.forwarded).toEqual([record(key, value, recordTime)]);
  });

  /**
   * Testing a special case of final results: that even with a grace period of 0, it will still
   * buffer events and emit only after the end of the window. As opposed to emitting immediately
   * the way regular suppression would with a time limit of 0.
   */
  it("finalResultsWithZeroGraceShouldStillBufferUntilTheWindowEnd", () => {
    const harness = finalResults(0);
    // note the record is in the past, but the window end is in the future, so we still have to buffer,
    // even though the grace period is 0.
    const timestamp = 5;
    const windowEnd = 100;
    const key = windowed("hey", 0, windowEnd);
    const value = ARBITRARY_CHANGE;
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toHaveLength(0);
    harness.process(record(windowed("dummyKey", windowEnd, windowEnd + 100), ARBITRARY_CHANGE, windowEnd));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("finalResultsWithZeroGraceAtWindowEndShouldImmediatelyEmit", () => {
    const harness = finalResults(0);
    const timestamp = 100;
    const key = windowed("hey", 0, 100);
    const value = ARBITRARY_CHANGE;
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  /** It's desirable to drop tombstones for final-results windowed streams, since they are unnecessary to emit. */
  it("finalResultsShouldDropTombstonesForTimeWindows", () => {
    const harness = finalResults(0);
    const timestamp = 100;
    harness.process(record(windowed("hey", 0, 100), chg<number>(null, ARBITRARY_LONG), timestamp));
    expect(harness.forwarded).toHaveLength(0);
  });

  /** It's desirable to drop tombstones for final-results windowed streams, since they are unnecessary to emit. */
  it("finalResultsShouldDropTombstonesForSessionWindows", () => {
    const harness = finalResults(0);
    const timestamp = 100;
    harness.process(record(windowed("hey", 0, 0), chg<number>(null, ARBITRARY_LONG), timestamp));
    expect(harness.forwarded).toHaveLength(0);
  });

  /**
   * It's NOT OK to drop tombstones for non-final-results windowed streams, since we may have
   * emitted some results for the window before getting the tombstone.
   */
  it("suppressShouldNotDropTombstonesForTimeWindows", () => {
    const harness = new Harness(untilTimeLimit(0, maxRecords(0)), Serdes.windowed(STRING));
    const timestamp = 100;
    const headers = [{ key: "k", value: "v" }];
    const key = windowed("hey", 0, 100);
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record(key, value, timestamp), { headers });
    expect(harness.forwarded).toEqual([record(key, value, timestamp, headers)]);
  });

  /**
   * It's NOT OK to drop tombstones for non-final-results windowed streams, since we may have
   * emitted some results for the window before getting the tombstone.
   */
  it("suppressShouldNotDropTombstonesForSessionWindows", () => {
    const harness = new Harness(untilTimeLimit(0, maxRecords(0)), Serdes.windowed(STRING));
    const timestamp = 100;
    const key = windowed("hey", 0, 0);
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  /**
   * It's SUPER NOT OK to drop tombstones for non-windowed streams, since we may have emitted some
   * results for the key before getting the tombstone.
   */
  it("suppressShouldNotDropTombstonesForKTable", () => {
    const harness = new Harness(untilTimeLimit(0, maxRecords(0)), STRING);
    const timestamp = 100;
    const key = "hey";
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record(key, value, timestamp));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("suppressShouldEmitWhenOverRecordCapacity", () => {
    const harness = new Harness(untilTimeLimit(DAYS_100, maxRecords(1)), STRING);
    const timestamp = 100;
    const key = "hey";
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record(key, value, timestamp));
    harness.process(record("dummyKey", value, timestamp + 1));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("suppressShouldEmitWhenOverByteCapacity", () => {
    const harness = new Harness(untilTimeLimit(DAYS_100, maxBytes(60)), STRING);
    const timestamp = 100;
    const key = "hey";
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record(key, value, timestamp));
    harness.process(record("dummyKey", value, timestamp + 1));
    expect(harness.forwarded).toEqual([record(key, value, timestamp)]);
  });

  it("suppressShouldShutDownWhenOverRecordCapacity", () => {
    const harness = new Harness(untilTimeLimit(DAYS_100, maxRecords(1).shutDownWhenFull()), STRING);
    const timestamp = 100;
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record("hey", value, timestamp));
    expect(() => harness.process(record("dummyKey", value, timestamp))).toThrow(/buffer exceeded its max capacity/);
  });

  it("suppressShouldShutDownWhenOverByteCapacity", () => {
    const harness = new Harness(untilTimeLimit(DAYS_100, maxBytes(60).shutDownWhenFull()), STRING);
    const timestamp = 100;
    const value = chg<number>(null, ARBITRARY_LONG);
    harness.process(record("hey", value, timestamp));
    expect(() => harness.process(record("dummyKey", value, timestamp), { timestamp: 1 })).toThrow(/buffer exceeded its max capacity/);
  });
});
