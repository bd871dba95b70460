/**
 * An instance's report for the application summary (src/summary/summary.ts), made from what the
 * instance knows of itself: pure, without the runtime.
 */
import { describe, expect, it } from "vitest";
import { InstanceReporter } from "../../src/summary/instance-reporter";
import { instanceReport, REPORT_INTERVAL_MS, REPORTED_FAILURE_CHARS, type InstanceFacts, type InstanceReport } from "../../src/summary/summary";
import type { TaskMeta } from "../../src/task/task-storage";

const changelogs = [
  { topic: "app-counts-changelog", partition: 3 },
  { topic: "app-totals-changelog", partition: 3 },
];
const inputs = [
  { topic: "orders", partition: 3 },
  { topic: "customers", partition: 0 },
];

function facts(overrides: Partial<InstanceFacts> & { role?: "active" | "standby" | "idle" } = {}): InstanceFacts {
  const { role = "standby", ...rest } = overrides;
  return {
    meta: { taskId: "0_3", placement: "eu", role, state: "RUNNING", epoch: 7, incarnation: 2, failure: null },
    changelogs,
    checkpoints: new Map([["app-counts-changelog/3", 40]]),
    changelogEnds: new Map([
      ["app-counts-changelog/3", 50],
      ["app-totals-changelog/3", 10],
    ]),
    input: () => ({ partitions: inputs, positions: { "orders/3": 90, "customers/0": 5 }, ends: new Map([["orders/3", 100]]) }),
    seq: 11,
    ...rest,
  };
}

describe("instanceReport (pure)", () => {
  it("reports a standby's restore progress over its changelogs, its lag the records not applied yet", () => {
    expect(instanceReport(facts())).toEqual({
      instance: "0_3@eu",
      taskId: "0_3",
      placement: "eu",
      role: "standby",
      state: "RUNNING",
      epoch: 7,
      incarnation: 2,
      failed: false,
      failure: null,
      lag: 20,
      oldestWaiting: null,
      restored: 40,
      total: 60,
      seq: 11,
    });
  });

  it("reports an active's lag as input records not processed yet (an input with no end seen counts none); input is read for an active only", () => {
    let read = 0;
    const input = facts().input;
    const counted = () => {
      read++;
      return input();
    };
    expect(instanceReport(facts({ role: "active", input: counted }))).toMatchObject({ role: "active", lag: 10, restored: 40, total: 60 });
    expect(read).toBe(1);
    instanceReport(facts({ role: "idle", input: counted }));
    expect(read).toBe(1);
  });

  it("raises a changelog's known end to its checkpoint, and remembers it", () => {
    const changelogEnds = new Map([["app-counts-changelog/3", 30]]);
    const report = instanceReport(facts({ changelogEnds }));
    expect(report).toMatchObject({ restored: 40, total: 40, lag: 0 });
    expect(changelogEnds).toEqual(
      new Map([
        ["app-counts-changelog/3", 40],
        ["app-totals-changelog/3", 0],
      ]),
    );
  });

  it("says failed when the instance has a failure", () => {
    const { meta } = facts();
    expect(instanceReport(facts({ meta: { ...meta, failure: "boom" } })).failed).toBe(true);
  });

  it("reports a stopped active instance as FAILED (never RUNNING), with the record it stopped at, its lag and its oldest waiting record", () => {
    const { meta, input } = facts();
    const failedAt = { topic: "orders", partition: 3, offset: 92 };
    const report = instanceReport(
      facts({
        role: "active",
        meta: { ...meta, role: "active", failure: "processing failed: not a number", failedAt },
        input: () => ({ ...input(), oldestWaiting: 1_000 }),
      }),
    );
    expect(report).toMatchObject({
      state: "FAILED",
      failed: true,
      failure: "stopped at orders/3 offset 92: processing failed: not a number",
      lag: 10,
      oldestWaiting: 1_000,
    });
    // A failure no record caused (fencing, an application shutdown) has no position; a long message is bounded.
    const long = instanceReport(facts({ role: "active", meta: { ...meta, role: "active", failure: "x".repeat(5_000), failedAt: null } }));
    expect(long.failure!.length).toBeLessThanOrEqual(REPORTED_FAILURE_CHARS);
    // A standby is never FAILED: only active instances process.
    expect(instanceReport(facts({ meta: { ...meta, failure: "boom" } })).state).toBe("RUNNING");
  });

  it("reports no oldest waiting record when nothing waits", () => {
    const { meta, input } = facts();
    const caughtUp = () => ({ ...input(), positions: { "orders/3": 100, "customers/0": 5 }, oldestWaiting: 1_000 });
    expect(instanceReport(facts({ role: "active", meta: { ...meta, role: "active" }, input: caughtUp }))).toMatchObject({ lag: 0, oldestWaiting: null });
  });
});

describe("InstanceReporter (pure): what it sends", () => {
  /** An active instance of task 0_3 whose input end, position and changelog checkpoint the test moves. */
  function active() {
    const state = { end: 0, position: 0, checkpoint: 0, changelogEnd: 0 };
    const sent: InstanceReport[] = [];
    const reporter = new InstanceReporter({
      instance: {
        meta: () =>
          ({
            taskId: "0_3",
            placement: "eu",
            role: "active",
            state: "RUNNING",
            epoch: 1,
            incarnation: 0,
            failure: null,
            failedAt: null,
          }) as unknown as TaskMeta,
        checkpoints: () => new Map([["app-counts-changelog/3", state.checkpoint]]),
        positions: () => ({ "orders/3": state.position }),
        knownInputEnds: () => new Map([["orders/3", state.end]]),
        oldestWaiting: () => null,
      },
      application: { changelogPartitions: () => [changelogs[0]!], inputPartitions: () => [inputs[0]!] },
      deliver: async (report) => void sent.push(report),
      background: () => {},
      now: 0,
    });
    return { state, sent, reporter };
  }

  it("tells no spell behind that ends within REPORT_INTERVAL_MS, however often they come (256 partitions: a few orders every few seconds)", () => {
    const { state, sent, reporter } = active();
    reporter.report(0);
    expect(sent).toHaveLength(1);
    // Every 2.7 s four orders arrive (the wake-up tells the end) and are processed 5 ms later,
    // the changelog's end and checkpoint moving with each commit.
    for (let t = 2_700; t < 120_000; t += 2_700) {
      state.end += 4;
      reporter.report(t);
      state.position = state.end;
      state.changelogEnd += 4;
      reporter.sawChangelogEnd(changelogs[0]!, state.changelogEnd);
      reporter.report(t + 5);
      state.checkpoint = state.changelogEnd;
    }
    expect(sent).toHaveLength(1);
  });

  it("tells a spell behind once it lasted REPORT_INTERVAL_MS, its progress at most that often, and catching up at once", () => {
    const { state, sent, reporter } = active();
    reporter.report(0);
    state.end = 1_000;
    for (let t = 1_000; t <= 1_000 + 2 * REPORT_INTERVAL_MS; t += 500) {
      state.position = Math.min(state.end - 1, state.position + 10);
      reporter.report(t);
    }
    // Behind from 1,000: told at 6,000 (the interval since it fell behind) and 11,000.
    expect(sent.map((r) => r.lag)).toEqual([0, 890, 790]);
    state.position = state.end;
    reporter.report(11_100);
    expect(sent.map((r) => r.lag)).toEqual([0, 890, 790, 0]);
  });
});
