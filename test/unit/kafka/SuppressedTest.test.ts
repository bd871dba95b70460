/**
 * Ported from Kafka Streams' SuppressedTest: the `Suppressed` and `BufferConfig` builders set what
 * they say, whatever the order of the calls. Kafka's `Long.MAX_VALUE` (no limit) is `Infinity`;
 * Kafka compares its config classes with `equals`, here the objects are compared field by field.
 * Not ported: the `withLoggingEnabled(config)` assertions — a buffer here is always change-logged,
 * with the topic configuration of every changelog.
 */
import { describe, expect, it } from "vitest";
import { BufferConfig, EagerBufferConfig, StrictBufferConfig, Suppressed } from "../../../src/streams";

const { maxBytes, maxRecords, unbounded } = BufferConfig;
const { untilTimeLimit, untilWindowCloses } = Suppressed;
const MAX_VALUE = Infinity;

/** What Kafka's `SuppressedInternal` / `FinalResultsSuppressionBuilder` hold. */
const suppressedOf = (mode: "until-window-closes" | "until-time-limit", name: string | undefined, timeLimitMs: number, bufferConfig: BufferConfig) => ({
  mode,
  name,
  timeLimitMs,
  bufferConfig,
});

describe("SuppressedTest", () => {
  it("bufferBuilderShouldBeConsistent", () => {
    // noBound should remove bounds
    expect(maxBytes(2).withMaxRecords(4).withNoBound()).toEqual(unbounded());
    // keys alone should be set
    expect(maxRecords(2)).toEqual(new EagerBufferConfig(2, MAX_VALUE));
    // size alone should be set
    expect(maxBytes(2)).toEqual(new EagerBufferConfig(MAX_VALUE, 2));
    // config should be set even after max records
    expect(maxRecords(2).withMaxBytes(4)).toEqual(new EagerBufferConfig(2, 4));
  });

  it("intermediateEventsShouldAcceptAnyBufferAndSetBounds", () => {
    // name should be set
    expect(untilTimeLimit(2, unbounded()).withName("myname")).toEqual(suppressedOf("until-time-limit", "myname", 2, unbounded()));
    // time alone should be set
    expect(untilTimeLimit(2, unbounded())).toEqual(suppressedOf("until-time-limit", undefined, 2, unbounded()));
    // time and keys buffer should be set
    expect(untilTimeLimit(2, maxRecords(2))).toEqual(suppressedOf("until-time-limit", undefined, 2, maxRecords(2)));
    // time and size buffer should be set
    expect(untilTimeLimit(2, maxBytes(2))).toEqual(suppressedOf("until-time-limit", undefined, 2, maxBytes(2)));
    // all constraints should be set
    expect(untilTimeLimit(2, maxRecords(3).withMaxBytes(2))).toEqual(suppressedOf("until-time-limit", undefined, 2, new EagerBufferConfig(3, 2)));
    // early emit is kept
    expect(untilTimeLimit(2, maxRecords(2).emitEarlyWhenFull())).toEqual(suppressedOf("until-time-limit", undefined, 2, new EagerBufferConfig(2, MAX_VALUE)));
  });

  it("finalEventsShouldAcceptStrictBuffersAndSetBounds", () => {
    expect(untilWindowCloses(unbounded())).toEqual(suppressedOf("until-window-closes", undefined, 0, unbounded()));
    expect(untilWindowCloses(maxRecords(2).shutDownWhenFull())).toEqual(
      suppressedOf("until-window-closes", undefined, 0, new StrictBufferConfig(2, MAX_VALUE)),
    );
    expect(untilWindowCloses(maxBytes(2).shutDownWhenFull())).toEqual(suppressedOf("until-window-closes", undefined, 0, new StrictBufferConfig(MAX_VALUE, 2)));
    expect(untilWindowCloses(unbounded()).withName("name")).toEqual(suppressedOf("until-window-closes", "name", 0, unbounded()));
    expect(untilWindowCloses(maxRecords(2).shutDownWhenFull()).withName("name")).toEqual(
      suppressedOf("until-window-closes", "name", 0, new StrictBufferConfig(2, MAX_VALUE)),
    );
    expect(untilWindowCloses(maxBytes(2).shutDownWhenFull()).withName("name")).toEqual(
      suppressedOf("until-window-closes", "name", 0, new StrictBufferConfig(MAX_VALUE, 2)),
    );
    // Kafka's types refuse an eager buffer here; TypeScript's do too, and so does the call.
    expect(() => untilWindowCloses(maxRecords(2) as unknown as StrictBufferConfig)).toThrow(/strict buffer/);
  });

  it("supportLongChainOfMethods", () => {
    const bufferConfig = unbounded().emitEarlyWhenFull().withMaxRecords(3).withMaxBytes(4).withMaxRecords(5).withMaxBytes(6);
    // long chain of eager buffer config sets attributes properly
    expect(bufferConfig).toEqual(new EagerBufferConfig(5, 6));
    expect(bufferConfig.whenFull).toBe("emit-early");
    // long chain of strict buffer config sets attributes properly
    expect(bufferConfig.shutDownWhenFull()).toEqual(new StrictBufferConfig(5, 6));
    expect(bufferConfig.shutDownWhenFull().whenFull).toBe("shut-down");
  });
});
