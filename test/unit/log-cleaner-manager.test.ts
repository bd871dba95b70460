/**
 * When retention and compaction are due, and when a compaction pass starts its sweep
 * (src/log/partition/log-cleaner-manager.ts): pure, on a fixed clock.
 */
import { describe, expect, it } from "vitest";
import { MIN_DIRTY_RECORDS } from "../../src/log/compaction";
import { initialState, type CompactionState } from "../../src/log/partition/cleaner-checkpoint";
import { afterIndexing, compactionDueAt, maintenanceDueAt, QUIET_COMPACTION_MS, RETENTION_CHECK_MS } from "../../src/log/partition/log-cleaner-manager";
import { topicConfig } from "../../src/log/topic-config";

const now = 1_000_000;
const changelog = topicConfig("changelog");
const state = (over: Partial<CompactionState> = {}): CompactionState => ({ ...initialState(0), ...over });

describe("compactionDueAt", () => {
  it("is now while a sweep is under way, and when the dirty section reaches the compacted one", () => {
    expect(compactionDueAt(changelog, { logEnd: 5 }, state({ sweepCursor: 2, sweepTo: 4, indexedTo: 5 }), now, now)).toBe(now);
    expect(compactionDueAt(changelog, { logEnd: MIN_DIRTY_RECORDS }, state(), now, now)).toBe(now);
    expect(
      compactionDueAt(changelog, { logEnd: 3 * MIN_DIRTY_RECORDS }, state({ indexedTo: MIN_DIRTY_RECORDS, cleanRecords: MIN_DIRTY_RECORDS }), now, now),
    ).toBe(now);
  });

  it("waits for the partition to go quiet when few records are dirty, or for max.compaction.lag.ms", () => {
    const lastAppend = now - 4_000;
    expect(compactionDueAt(changelog, { logEnd: 10 }, state(), lastAppend, now)).toBe(lastAppend + QUIET_COMPACTION_MS);
    // After a restart the last append is unknown: quiet from now.
    expect(compactionDueAt(changelog, { logEnd: 10 }, state(), undefined, now)).toBe(now + QUIET_COMPACTION_MS);
    const lagged = topicConfig("changelog", { "max.compaction.lag.ms": 1_000 });
    expect(compactionDueAt(lagged, { logEnd: 10 }, state(), lastAppend, now)).toBe(now + 1_000);
    // A dirty section under the floor is not enough, however much is compacted.
    expect(compactionDueAt(changelog, { logEnd: MIN_DIRTY_RECORDS - 1 }, state(), now, now)).toBe(now + QUIET_COMPACTION_MS);
  });

  it("is when a kept tombstone's time is up, and never when nothing is dirty", () => {
    expect(compactionDueAt(changelog, { logEnd: 10 }, state({ indexedTo: 10, tombstonesDue: now + 50 }), now, now)).toBe(now + 50);
    // With records dirty too, the sooner of the two.
    expect(compactionDueAt(changelog, { logEnd: 10 }, state({ indexedTo: 5, tombstonesDue: now + 50_000 }), now, now)).toBe(now + QUIET_COMPACTION_MS);
    expect(compactionDueAt(changelog, { logEnd: 10 }, state({ indexedTo: 10, tombstonesDue: now + 50_000 }), now, now)).toBe(now + 50_000);
    expect(compactionDueAt(changelog, { logEnd: 10 }, state({ indexedTo: 10 }), now, now)).toBeUndefined();
  });
});

describe("maintenanceDueAt", () => {
  const range = { logStart: 0, logEnd: 10 };
  const day = 24 * 60 * 60 * 1000;
  /** Appended at `lastAppendAt`, rows expiring at `expiresAt`. */
  const inputs = (lastAppendAt: number | undefined, expiresAt: number | null | undefined) => ({ lastAppendAt, quietSince: lastAppendAt ?? now, expiresAt });

  it("checks time retention when the oldest row's time is up, never sooner than RETENTION_CHECK_MS after the last check", () => {
    const lastRetention = now - 1_000;
    const user = topicConfig("user");
    expect(maintenanceDueAt(user, range, state({ lastRetention }), inputs(now, now + day), now)).toBe(now + day);
    expect(maintenanceDueAt(user, range, state({ lastRetention }), inputs(now, now + 5), now)).toBe(lastRetention + RETENTION_CHECK_MS);
    // Not known (after a restart): one check, which learns it.
    expect(maintenanceDueAt(user, range, state({ lastRetention }), inputs(undefined, undefined), now)).toBe(lastRetention + RETENTION_CHECK_MS);
  });

  it("arms nothing for a quiet partition whose rows are young or that keeps none retention may remove: no periodic check", () => {
    const lastRetention = now - 1_000;
    expect(maintenanceDueAt(topicConfig("user"), range, state({ lastRetention }), inputs(now - 2_000, null), now)).toBeUndefined();
    const bySize = topicConfig("user", { "retention.ms": -1, "retention.bytes": 100 });
    expect(maintenanceDueAt(bySize, range, state({ lastRetention }), inputs(now - 2_000, null), now)).toBeUndefined();
  });

  it("checks size retention after the partition grew (or may have: after a restart), RETENTION_CHECK_MS after the last check", () => {
    const lastRetention = now - 1_000;
    const bySize = topicConfig("user", { "retention.ms": -1, "retention.bytes": 100 });
    expect(maintenanceDueAt(bySize, range, state({ lastRetention }), inputs(now, null), now)).toBe(lastRetention + RETENTION_CHECK_MS);
    expect(maintenanceDueAt(bySize, range, state({ lastRetention }), inputs(undefined, null), now)).toBe(lastRetention + RETENTION_CHECK_MS);
  });

  it("is never for a topic kept forever, and the sooner of retention and compaction for compact,delete", () => {
    expect(maintenanceDueAt(topicConfig("repartition"), range, state(), inputs(now, undefined), now)).toBeUndefined();
    const both = topicConfig("user", { "cleanup.policy": "compact,delete" });
    expect(maintenanceDueAt(both, range, state({ lastRetention: now }), inputs(now, undefined), now)).toBe(now + QUIET_COMPACTION_MS);
    expect(maintenanceDueAt(both, range, state({ lastRetention: now - RETENTION_CHECK_MS + 5 }), inputs(now, undefined), now)).toBe(now + 5);
  });

  it("counts a compaction's quiet from when the object started while the last append is unknown, not from each look", () => {
    const started = now - 4_000;
    expect(maintenanceDueAt(changelog, range, state(), { lastAppendAt: undefined, quietSince: started, expiresAt: undefined }, now)).toBe(
      started + QUIET_COMPACTION_MS,
    );
  });
});

describe("afterIndexing", () => {
  it("starts a sweep from the log start to the index's end once the index covers all that is cleanable", () => {
    const next = afterIndexing(state({ tombstonesDue: now + 5 }), 80, 80, 7, now);
    expect(next).toMatchObject({ indexedTo: 80, sweepCursor: 7, sweepTo: 80, tombstonesDue: null });
  });

  it("does not sweep while the index is incomplete, while a sweep is under way, nor over what the last sweep covered", () => {
    expect(afterIndexing(state(), 50, 80, 0, now)).toMatchObject({ indexedTo: 50, sweepCursor: null, sweepTo: 0 });
    expect(afterIndexing(state({ sweepCursor: 30, sweepTo: 60 }), 80, 80, 0, now)).toMatchObject({ sweepCursor: 30, sweepTo: 60 });
    expect(afterIndexing(state({ indexedTo: 80, sweepTo: 80 }), 80, 80, 0, now)).toMatchObject({ sweepCursor: null, sweepTo: 80 });
  });

  it("sweeps again over the same section when a kept tombstone's time is up", () => {
    const covered = state({ indexedTo: 80, sweepTo: 80 });
    expect(afterIndexing({ ...covered, tombstonesDue: now + 1 }, 80, 80, 0, now).sweepCursor).toBeNull();
    expect(afterIndexing({ ...covered, tombstonesDue: now }, 80, 80, 0, now)).toMatchObject({ sweepCursor: 0, sweepTo: 80, tombstonesDue: null });
  });

  it("keeps what it does not decide", () => {
    expect(afterIndexing(state({ lastRetention: 42, cleanRecords: 9 }), 50, 80, 0, now)).toMatchObject({ lastRetention: 42, cleanRecords: 9 });
  });
});
