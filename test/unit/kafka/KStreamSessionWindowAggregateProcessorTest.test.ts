/**
 * Ported from Kafka Streams' KStreamSessionWindowAggregateProcessorTest, with both emit
 * strategies: Kafka drives the processor directly; here records go through TopologyTestDriver into
 * `windowedBy(SessionWindows).aggregate(() => 0, +1, sum)` over a session store kept 3 gaps.
 * Results carry their session's end as timestamp, tombstones of merged sessions included; a record
 * is late only when its session's end + gap + grace is before stream time (KAFKA-12718). Tests
 * that Kafka runs only with a caching store compare `cacheFlush` of the results (what the cache
 * forwards) with Kafka's expectation. With ON_WINDOW_CLOSE a session is forwarded once, when stream
 * time passes its end + gap + grace. Not ported: the ON_WINDOW_CLOSE variants of the
 * non-cached-store tests, which Kafka skips for that strategy.
 */
import { describe, expect, it } from "vitest";
import { EmitStrategy, Materialized, SessionWindows, StreamsBuilder, TopologyTestDriver, type Windowed } from "../../../src/streams";
import { build, cacheFlush, droppedRecordsTotal, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const GAP_MS = 5 * 60 * 1000;
const STORE_NAME = "session-store";

function setup(windows = SessionWindows.ofInactivityGapWithNoGrace(GAP_MS), emit = EmitStrategy.onWindowUpdate()) {
  const builder = new StreamsBuilder();
  const results = new MockApiProcessorSupplier<Windowed<string>, number | null>();
  builder
    .stream("input", { key: STRING, value: STRING })
    .groupByKey()
    .windowedBy(windows)
    .emitStrategy(emit)
    .aggregate(
      () => 0,
      (_aggKey, _value, aggregate) => aggregate + 1,
      (_aggKey, aggOne, aggTwo) => aggOne + aggTwo,
      Materialized.as(STORE_NAME, { value: INTEGER, retentionMs: GAP_MS * 3 }),
    )
    .toStream()
    .process(results.supplier);
  const driver = new TopologyTestDriver(build(builder, "input"));
  const input = new TestInputTopic(driver, "input", STRING, STRING);
  return {
    driver,
    results,
    process: (key: string | null, value: string, timestamp: number) => input.pipeInput(key, value, timestamp),
    /** Kafka's `sessionStore.findSessions(key, earliestEnd, latestStart)`: sessions overlapping the range. */
    findSessions: (key: string, earliestEnd: number, latestStart: number) =>
      driver.sessions<string, number>(STORE_NAME, key).filter((s) => s.window.end >= earliestEnd && s.window.start <= latestStart),
  };
}

const sessionKey = (key: string, start: number, end: number): Windowed<string> => ({ key, window: { start, end } });

describe("KStreamSessionWindowAggregateProcessorTest", () => {
  it("shouldCreateSingleSessionWhenWithinGap", () => {
    const { process, findSessions } = setup();
    process("john", "first", 0);
    process("john", "second", 500);
    const values = findSessions("john", 0, 2000);
    expect(values.length).toBeGreaterThan(0);
    expect(values[0]!.value).toBe(2);
  });

  it("shouldMergeSessions", () => {
    const { process, findSessions } = setup();
    const sessionId = "mel";
    process(sessionId, "first", 0);
    expect(findSessions(sessionId, 0, 0).length).toBeGreaterThan(0);
    // move time beyond gap
    process(sessionId, "second", GAP_MS + 1);
    expect(findSessions(sessionId, GAP_MS + 1, GAP_MS + 1).length).toBeGreaterThan(0);
    // should still exist as not within gap
    expect(findSessions(sessionId, 0, 0).length).toBeGreaterThan(0);
    // move time back
    process(sessionId, "third", GAP_MS / 2);
    const iterator = findSessions(sessionId, 0, GAP_MS + 1);
    expect(iterator[0]!.value).toBe(3);
    expect(iterator).toHaveLength(1);
  });

  it("shouldUpdateSessionIfTheSameTime", () => {
    const { process, findSessions } = setup();
    process("mel", "first", 0);
    process("mel", "second", 0);
    const iterator = findSessions("mel", 0, 0);
    expect(iterator[0]!.value).toBe(2);
    expect(iterator).toHaveLength(1);
  });

  it("shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap", () => {
    const { process, results } = setup();
    const sessionId = "mel";
    let now = 0;
    process(sessionId, "first", now);
    now += GAP_MS + 1;
    process(sessionId, "second", now);
    process(sessionId, "second", now);
    now += GAP_MS + 1;
    process(sessionId, "third", now);
    process(sessionId, "third", now);
    process(sessionId, "third", now);
    // Kafka's test runs with a caching store: what its flush forwards.
    expect(cacheFlush(results.processed)).toEqual([
      kvt(sessionKey(sessionId, 0, 0), 1, 0),
      kvt(sessionKey(sessionId, GAP_MS + 1, GAP_MS + 1), 2, GAP_MS + 1),
      kvt(sessionKey(sessionId, now, now), 3, now),
    ]);
  });

  it("shouldRemoveMergedSessionsFromStateStore", () => {
    const { process, findSessions } = setup();
    process("a", "1", 0);
    // first ensure it is in the store
    expect(findSessions("a", 0, 0)[0]).toEqual({ window: { start: 0, end: 0 }, value: 1 });
    process("a", "2", 100);
    // a1 from above should have been removed; should have merged session in store
    expect(findSessions("a", 0, 100)).toEqual([{ window: { start: 0, end: 100 }, value: 2 }]);
  });

  it("shouldHandleMultipleSessionsAndMerging", () => {
    const { process, results } = setup();
    process("a", "1", 0);
    process("b", "1", 0);
    process("c", "1", 0);
    process("d", "1", 0);
    process("d", "2", GAP_MS / 2);
    process("a", "2", GAP_MS + 1);
    process("b", "2", GAP_MS + 1);
    process("a", "3", GAP_MS + 1 + GAP_MS / 2);
    process("c", "3", GAP_MS + 1 + GAP_MS / 2);
    // Kafka's test runs with a caching store: what its flush forwards.
    expect(cacheFlush(results.processed)).toEqual([
      kvt(sessionKey("a", 0, 0), 1, 0),
      kvt(sessionKey("b", 0, 0), 1, 0),
      kvt(sessionKey("c", 0, 0), 1, 0),
      kvt(sessionKey("d", 0, GAP_MS / 2), 2, GAP_MS / 2),
      kvt(sessionKey("b", GAP_MS + 1, GAP_MS + 1), 1, GAP_MS + 1),
      kvt(sessionKey("a", GAP_MS + 1, GAP_MS + 1 + GAP_MS / 2), 2, GAP_MS + 1 + GAP_MS / 2),
      kvt(sessionKey("c", GAP_MS + 1 + GAP_MS / 2, GAP_MS + 1 + GAP_MS / 2), 1, GAP_MS + 1 + GAP_MS / 2),
    ]);
  });

  it("shouldGetAggregatedValuesFromValueGetter", () => {
    const { process, findSessions } = setup();
    process("a", "1", 0);
    process("a", "1", GAP_MS + 1);
    process("a", "2", GAP_MS + 1);
    const t0 = findSessions("a", 0, 0).find((s) => s.window.start === 0 && s.window.end === 0)!.value;
    const t1 = findSessions("a", GAP_MS + 1, GAP_MS + 1).find((s) => s.window.start === GAP_MS + 1)!.value;
    expect(t0).toBe(1);
    expect(t1).toBe(2);
  });

  it("shouldImmediatelyForwardNewSessionWhenNonCachedStore", () => {
    const { process, results } = setup();
    process("a", "1", 0);
    process("b", "1", 0);
    process("c", "1", 0);
    expect(results.processed).toEqual([kvt(sessionKey("a", 0, 0), 1, 0), kvt(sessionKey("b", 0, 0), 1, 0), kvt(sessionKey("c", 0, 0), 1, 0)]);
  });

  it("shouldImmediatelyForwardRemovedSessionsWhenMerging", () => {
    const { process, results } = setup();
    process("a", "1", 0);
    process("a", "1", 5);
    expect(results.processed).toEqual([kvt(sessionKey("a", 0, 0), 1, 0), kvt(sessionKey("a", 0, 0), null, 0), kvt(sessionKey("a", 0, 5), 2, 5)]);
  });

  it("shouldLogAndMeterWhenSkippingNullKeyWithBuiltInMetrics", () => {
    const { process, driver } = setup();
    process(null, "1", 0);
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldLogAndMeterWhenSkippingLateRecordWithZeroGrace", () => {
    const { process, driver, results } = setup(SessionWindows.ofInactivityGapAndGrace(10, 0));
    // dummy record to establish stream time = 0
    process("dummy", "dummy", 0);
    // record arrives on time, should not be skipped
    process("OnTime1", "1", 0);
    // dummy record to advance stream time = 11, 10 for gap time plus 1 to place outside window
    process("dummy", "dummy", 11);
    // record is late
    process("Late1", "1", 0);
    expect(results.processed.map((r) => r.key.key)).not.toContain("Late1");
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace", () => {
    const { process, driver, results } = setup(SessionWindows.ofInactivityGapAndGrace(10, 1));
    // dummy record to establish stream time = 0
    process("dummy", "dummy", 0);
    // record arrives on time, should not be skipped
    process("OnTime1", "1", 0);
    // dummy record to advance stream time = 11, 10 for gap time plus 1 to place at edge of window
    process("dummy", "dummy", 11);
    // delayed record arrives on time, should not be skipped
    process("OnTime2", "1", 0);
    // dummy record to advance stream time = 12, 10 for gap time plus 2 to place outside window
    process("dummy", "dummy", 12);
    // delayed record arrives late
    process("Late1", "1", 0);
    expect(results.processed.map((r) => r.key.key)).toContain("OnTime2");
    expect(results.processed.map((r) => r.key.key)).not.toContain("Late1");
    expect(droppedRecordsTotal(driver)).toBe(1);
  });
});

describe("KStreamSessionWindowAggregateProcessorTest ON_WINDOW_CLOSE", () => {
  const onClose = () => setup(SessionWindows.ofInactivityGapWithNoGrace(GAP_MS), EmitStrategy.onWindowClose());

  it("shouldCreateSingleSessionWhenWithinGap", () => {
    const { process, findSessions, results } = onClose();
    process("john", "first", 0);
    process("john", "second", 500);
    const values = findSessions("john", 0, 2000);
    expect(values.length).toBeGreaterThan(0);
    expect(values[0]!.value).toBe(2);
    expect(results.processed).toEqual([]);
  });

  it("shouldMergeSessions", () => {
    const { process, findSessions } = onClose();
    const sessionId = "mel";
    process(sessionId, "first", 0);
    expect(findSessions(sessionId, 0, 0).length).toBeGreaterThan(0);
    // move time beyond gap
    process(sessionId, "second", GAP_MS + 1);
    expect(findSessions(sessionId, GAP_MS + 1, GAP_MS + 1).length).toBeGreaterThan(0);
    // should still exist as not within gap
    expect(findSessions(sessionId, 0, 0).length).toBeGreaterThan(0);
    // move time back
    process(sessionId, "third", GAP_MS / 2);
    const iterator = findSessions(sessionId, 0, GAP_MS + 1);
    expect(iterator[0]!.value).toBe(3);
    expect(iterator).toHaveLength(1);
  });

  it("shouldUpdateSessionIfTheSameTime", () => {
    const { process, findSessions } = onClose();
    process("mel", "first", 0);
    process("mel", "second", 0);
    const iterator = findSessions("mel", 0, 0);
    expect(iterator[0]!.value).toBe(2);
    expect(iterator).toHaveLength(1);
  });

  it("shouldHaveMultipleSessionsForSameIdWhenTimestampApartBySessionGap", () => {
    const { process, results } = onClose();
    const sessionId = "mel";
    let now = 0;
    process(sessionId, "first", now);
    now += GAP_MS + 1;
    process(sessionId, "second", now);
    process(sessionId, "second", now);
    now += GAP_MS + 1;
    process(sessionId, "third", now);
    process(sessionId, "third", now);
    process(sessionId, "third", now);
    expect(results.processed).toEqual([kvt(sessionKey(sessionId, 0, 0), 1, 0), kvt(sessionKey(sessionId, GAP_MS + 1, GAP_MS + 1), 2, GAP_MS + 1)]);
  });

  it("shouldRemoveMergedSessionsFromStateStore", () => {
    const { process, findSessions } = onClose();
    process("a", "1", 0);
    // first ensure it is in the store
    expect(findSessions("a", 0, 0)[0]).toEqual({ window: { start: 0, end: 0 }, value: 1 });
    process("a", "2", 100);
    // a1 from above should have been removed; should have merged session in store
    expect(findSessions("a", 0, 100)).toEqual([{ window: { start: 0, end: 100 }, value: 2 }]);
  });

  it("shouldHandleMultipleSessionsAndMerging", () => {
    const { process, results } = onClose();
    process("a", "1", 0);
    process("b", "1", 0);
    process("c", "1", 0);
    process("d", "1", 0);
    process("d", "2", GAP_MS / 2);
    process("a", "2", GAP_MS + 1);
    process("b", "2", GAP_MS + 1);
    process("a", "3", GAP_MS + 1 + GAP_MS / 2);
    process("c", "3", GAP_MS + 1 + GAP_MS / 2);
    expect(results.processed).toEqual([
      kvt(sessionKey("a", 0, 0), 1, 0),
      kvt(sessionKey("b", 0, 0), 1, 0),
      kvt(sessionKey("c", 0, 0), 1, 0),
      kvt(sessionKey("d", 0, GAP_MS / 2), 2, GAP_MS / 2),
    ]);
  });

  it("shouldGetAggregatedValuesFromValueGetter", () => {
    const { process, findSessions } = onClose();
    process("a", "1", 0);
    process("a", "1", GAP_MS + 1);
    process("a", "2", GAP_MS + 1);
    const t0 = findSessions("a", 0, 0).find((s) => s.window.start === 0 && s.window.end === 0)!.value;
    const t1 = findSessions("a", GAP_MS + 1, GAP_MS + 1).find((s) => s.window.start === GAP_MS + 1)!.value;
    expect(t0).toBe(1);
    expect(t1).toBe(2);
  });

  it("shouldLogAndMeterWhenSkippingNullKeyWithBuiltInMetrics", () => {
    const { process, driver } = onClose();
    process(null, "1", 0);
    expect(droppedRecordsTotal(driver)).toBe(1);
  });
});
