/**
 * The pure rules behind a failed task and its recovery: FAILED derived in one place, which record
 * a skip may pass over and when a skip is done with, where an input reset moves a partition (never
 * back), lag in time from the records fetches saw, and a summary that counts FAILED instances, names
 * them and keeps their lag.
 */
import { describe, expect, it } from "vitest";
import { recordOrigin, remainingSkips, skipDecision } from "../../src/task/skips";
import { positionAfterReset, resets, targetOffset } from "../../src/task/input-reset";
import { ageMs, oldestWaiting } from "../../src/task/input-lag";
import { shownState } from "../../src/task/state";
import { FAILURES_NAMED, mergeSummaries, summarize, type InstanceReport } from "../../src/summary/summary";
import { DeserializationError, ProcessingError } from "../../src/streams/errors";

const at = { topic: "orders", partition: 1, offset: 7 };

describe("FAILED", () => {
  it("is what an active instance with a failure shows, whatever its lifecycle state; never a standby or idle one", () => {
    expect(shownState({ role: "active", state: "RUNNING", failure: "boom" })).toBe("FAILED");
    expect(shownState({ role: "active", state: "RESTORING", failure: "application shut down: …" })).toBe("FAILED");
    expect(shownState({ role: "active", state: "RUNNING", failure: null })).toBe("RUNNING");
    expect(shownState({ role: "standby", state: "UPDATING", failure: "boom" })).toBe("UPDATING");
    expect(shownState({ role: "idle", state: "SUSPENDED", failure: "boom" })).toBe("SUSPENDED");
  });
});

describe("skips", () => {
  it("pass over only the record the failure names", () => {
    expect(skipDecision({ failure: "boom", failedAt: at }, [], undefined, at)).toBe("skip");
    expect(skipDecision({ failure: "boom", failedAt: at }, [], undefined, { ...at, offset: 8 })).toEqual({
      status: "refused",
      reason: "it is stopped at orders/1 offset 7",
    });
    expect(skipDecision({ failure: "fenced", failedAt: null }, [], undefined, at)).toMatchObject({ status: "refused", reason: /no record caused/ });
    expect(skipDecision({ failure: null }, [], undefined, at)).toMatchObject({ status: "refused", reason: /not stopped/ });
  });

  it("answer a repeated request as done: the record is still among the skips, or was the last one skipped", () => {
    expect(skipDecision({ failure: null }, [at], undefined, at)).toEqual({ status: "skipped", already: true });
    expect(skipDecision({ failure: null }, [], at, at)).toEqual({ status: "skipped", already: true });
    expect(skipDecision({ failure: "boom", failedAt: { ...at, offset: 9 } }, [], at, at)).toEqual({ status: "skipped", already: true });
  });

  it("leave once the partition's position is past the record, not before", () => {
    const other = { topic: "orders", partition: 2, offset: 3 };
    expect(remainingSkips([at, other], { "orders/1": 7, "orders/2": 9 })).toEqual([at]);
    expect(remainingSkips([at, other], { "orders/1": 8 })).toEqual([other]);
  });

  it("find the record an error names, also through its causes", () => {
    expect(recordOrigin(new DeserializationError("not a number", at))).toEqual(at);
    expect(recordOrigin(new Error("outer", { cause: new ProcessingError("inner", "node", at) }))).toEqual(at);
    expect(recordOrigin(new DeserializationError("a store's value", undefined))).toBeUndefined();
    expect(recordOrigin("not an error")).toBeUndefined();
  });
});

describe("input resets", () => {
  const tp = { topic: "orders", partition: 1 };
  const range = { earliest: 10, latest: 50 };

  it("aim at the end, a timestamp's offset, or the offset given, within what the partition keeps", () => {
    expect(targetOffset({ to: "latest" }, tp, range)).toBe(50);
    expect(targetOffset({ to: "timestamp", timestamp: 5 }, tp, range, 30)).toBe(30);
    expect(targetOffset({ to: "offsets", offsets: [{ ...tp, offset: 70 }] }, tp, range)).toBe(50);
    expect(targetOffset({ to: "offsets", offsets: [{ ...tp, offset: 3 }] }, tp, range)).toBe(10);
  });

  it("only move forward: a target behind the position leaves it where it is", () => {
    expect(positionAfterReset(20, 45)).toBe(45);
    expect(positionAfterReset(20, 12)).toBe(20);
  });

  it("move the topics reset, and for offsets only the partitions named", () => {
    expect(resets({ target: { to: "latest" }, topics: ["orders"] }, tp)).toBe(true);
    expect(resets({ target: { to: "latest" }, topics: ["other"] }, tp)).toBe(false);
    expect(resets({ target: { to: "offsets", offsets: [{ topic: "orders", partition: 2, offset: 1 }] }, topics: ["orders"] }, tp)).toBe(false);
  });
});

describe("lag in time", () => {
  const partitions = [
    { topic: "orders", partition: 1 },
    { topic: "customers", partition: 0 },
  ];

  it("is the age of the oldest record known to wait at the processed position", () => {
    const heads = new Map([
      ["orders/1", { offset: 40, timestamp: 5_000 }],
      ["customers/0", { offset: 3, timestamp: 2_000 }],
    ]);
    const ends = new Map([
      ["orders/1", 50],
      ["customers/0", 3],
    ]);
    // customers/0 is caught up (its head was processed): only orders/1 waits.
    expect(oldestWaiting(partitions, { "orders/1": 40, "customers/0": 3 }, ends, heads)).toBe(5_000);
    expect(ageMs(5_000, 9_000)).toBe(4_000);
    // Nothing waits, or a timestamp in the future: 0.
    expect(oldestWaiting(partitions, { "orders/1": 50, "customers/0": 3 }, ends, heads)).toBeNull();
    expect(ageMs(null, 9_000)).toBe(0);
    expect(ageMs(10_000, 9_000)).toBe(0);
  });

  it("uses the head before the last commit until the next fetch (an upper bound), and knows nothing without a head", () => {
    const ends = new Map([["orders/1", 50]]);
    expect(oldestWaiting(partitions, { "orders/1": 45 }, ends, new Map([["orders/1", { offset: 40, timestamp: 5_000 }]]))).toBe(5_000);
    expect(oldestWaiting(partitions, { "orders/1": 45 }, ends, new Map())).toBeNull();
  });
});

describe("the summary of a failed instance", () => {
  const report = (over: Partial<InstanceReport>): InstanceReport => ({
    instance: "0_0@a",
    taskId: "0_0",
    placement: "a",
    role: "active",
    state: "RUNNING",
    epoch: 1,
    incarnation: 0,
    failed: false,
    failure: null,
    lag: 0,
    oldestWaiting: null,
    restored: 0,
    total: 0,
    seq: 1,
    ...over,
  });

  it("counts it FAILED, keeps its lag and oldest waiting record, and names it with its reason", () => {
    const summary = summarize([
      report({}),
      report({ instance: "0_1@a", taskId: "0_1", state: "FAILED", failed: true, failure: "stopped at orders/1 offset 7: boom", lag: 3, oldestWaiting: 1_000 }),
      report({ instance: "0_1@b", taskId: "0_1", placement: "b", role: "standby", state: "UPDATING", lag: 2, oldestWaiting: 10 }),
    ]);
    // The failed active's lag counts (API v1.2); the standby's changelog lag is kept apart.
    expect(summary).toMatchObject({ byState: { RUNNING: 1, FAILED: 1, UPDATING: 1 }, lag: 3, standbyLag: 2, failed: 1, oldestWaiting: 1_000 });
    expect(summary.failures).toEqual([{ task: "0_1", placement: "a", reason: "stopped at orders/1 offset 7: boom" }]);
  });

  it("names at most FAILURES_NAMED failed instances when merging shards, by task, and counts them all", () => {
    const shard = (from: number) =>
      summarize(
        Array.from({ length: FAILURES_NAMED }, (_, i) =>
          report({ instance: `0_${from + i}@a`, taskId: `0_${String(from + i).padStart(4, "0")}`, state: "FAILED", failed: true, failure: "boom" }),
        ),
      );
    const merged = mergeSummaries([shard(FAILURES_NAMED), shard(0)]);
    expect(merged.failed).toBe(2 * FAILURES_NAMED);
    expect(merged.failures).toHaveLength(FAILURES_NAMED);
    expect(merged.failures[0]!.task).toBe("0_0000");
  });
});
