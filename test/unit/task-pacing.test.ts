/**
 * The task's pacing policy (src/task/pacing.ts) on an explicit clock: when the alarm and the
 * in-memory timer bring an instance back, and why, case by case. The workerd tests
 * (test/task-pacing.test.ts, test/wake-runs.test.ts, …) check the same policy through the object.
 */
import { describe, expect, it } from "vitest";
import { merge, TaskPacing, type PacingInputs, type RunResult } from "../../src/task/pacing";

const NOW = 1_700_000_000_000;
const running = { role: "active", state: "RUNNING" } as const;
const restoring = { role: "active", state: "RESTORING" } as const;

/** A running instance with nothing pending (nothing to commit, no timers, no progress owed). */
function pending(over: Partial<PacingInputs> = {}): PacingInputs {
  return { now: NOW, instance: running, nextCommitAt: NOW, timersDueAt: undefined, progressDueAt: undefined, ...over };
}

function ran(over: Partial<Extract<RunResult, { status: "ran" }>> = {}): RunResult {
  return { status: "ran", synced: true, outcome: "idle", lingering: false, ...over };
}

describe("TaskPacing: operations", () => {
  it("arms the recovery alarm a second ahead before a lifecycle operation, and the alarm at once after it", () => {
    const pacing = new TaskPacing(false);
    expect(pacing.beforeOperation(NOW)).toEqual({ alarm: { at: NOW + 1_000, why: "recovery" } });
    expect(pacing.atOnce(NOW)).toEqual({ alarm: { at: NOW, why: "work" } });
  });

  it("asks the coordinator again a second after it did not hear the shutdown request", () => {
    expect(new TaskPacing(false).shutdownReportFailed(NOW)).toEqual({ alarm: { at: NOW + 1_000, why: "shutdown-report" } });
  });

  it("looks by a time with the in-memory timer and the alarm 5 s behind it; with a polled log, with the alarm alone", () => {
    expect(new TaskPacing(false).lookBy(NOW + 100, NOW, "commit")).toEqual({
      alarm: { at: NOW + 5_100, why: "commit" },
      timer: { at: NOW + 100, why: "commit" },
    });
    expect(new TaskPacing(true).lookBy(NOW + 100, NOW, "commit")).toEqual({ alarm: { at: NOW + 100, why: "commit" } });
    // A time already past: the polled alarm fires now, never in the past.
    expect(new TaskPacing(true).lookBy(NOW - 50, NOW, "commit")).toEqual({ alarm: { at: NOW, why: "commit" } });
  });
});

describe("TaskPacing: after a run", () => {
  it("arms nothing for an idle instance with nothing due: an idle task costs nothing", () => {
    expect(new TaskPacing(false).afterRun(ran(), pending())).toEqual({});
  });

  it("runs again at once when the steps left work (the run yielded)", () => {
    expect(new TaskPacing(false).afterRun(ran({ outcome: "more" }), pending())).toEqual({ alarm: { at: NOW, why: "work" } });
  });

  it("under load, looks again at the next commit with the timer, the alarm standing 5 s behind", () => {
    const plan = new TaskPacing(false).afterRun(ran({ outcome: "more", lingering: true }), pending({ nextCommitAt: NOW + 100 }));
    expect(plan).toEqual({ alarm: { at: NOW + 5_100, why: "commit" }, timer: { at: NOW + 100, why: "commit" } });
  });

  it("looks again at the next commit for a wake-up that came while the run ended", () => {
    const plan = new TaskPacing(false).afterRun(ran(), pending({ woken: true, nextCommitAt: NOW + 40 }));
    expect(plan).toEqual({ alarm: { at: NOW + 5_040, why: "commit" }, timer: { at: NOW + 40, why: "commit" } });
  });

  it("retries with a back-off from 1 s doubling to 30 s while the outside cannot be brought in line, and starts over once it is", () => {
    const pacing = new TaskPacing(false);
    const delays = [1, 2, 3, 4, 5, 6, 7].map(() => pacing.afterRun(ran({ synced: false }), pending()).alarm);
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000].map((d) => ({ at: NOW + d, why: "retry" })));
    expect(pacing.afterRun(ran(), pending())).toEqual({});
    expect(pacing.afterRun(ran({ synced: false }), pending()).alarm).toEqual({ at: NOW + 1_000, why: "retry" });
  });

  it("counts a run that threw as a failure too, and still arms what the instance has pending", () => {
    const pacing = new TaskPacing(false);
    const failed: RunResult = { status: "failed" };
    expect(pacing.afterRun(failed, pending())).toEqual({ alarm: { at: NOW + 1_000, why: "retry" } });
    expect(pacing.afterRun(ran({ synced: false }), pending()).alarm).toEqual({ at: NOW + 2_000, why: "retry" });
    // Punctuation due sooner than the retry wins the alarm; the timer looks at progress owed.
    expect(pacing.afterRun(failed, pending({ timersDueAt: NOW + 300, progressDueAt: NOW + 20 }))).toEqual({
      alarm: { at: NOW + 300, why: "timers" },
      timer: { at: NOW + 20, why: "progress" },
    });
  });

  it("has a restoring active instance check again from 2 s doubling to 30 s, repeating its registration from the second check", () => {
    const pacing = new TaskPacing(false);
    const plans = [1, 2, 3, 4, 5, 6].map(() => pacing.afterRun(ran(), pending({ instance: restoring })));
    expect(plans.map((p) => p.alarm)).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000].map((d) => ({ at: NOW + d, why: "restoring-check" })));
    expect(plans.map((p) => p.resync ?? false)).toEqual([false, true, true, true, true, true]);
    // Running now: the checks stop, and a later restoration starts its back-off over.
    expect(pacing.afterRun(ran(), pending())).toEqual({});
    expect(pacing.afterRun(ran(), pending({ instance: restoring }))).toEqual({ alarm: { at: NOW + 2_000, why: "restoring-check" } });
  });

  it("does not check a restoring standby (its restore worker drives it)", () => {
    expect(new TaskPacing(false).afterRun(ran(), pending({ instance: { role: "standby", state: "RESTORING" } }))).toEqual({});
  });

  it("polls a log that wakes no one from 500 ms doubling to 15 s while it brings nothing, and at once when it did", () => {
    const pacing = new TaskPacing(true);
    const idle = [1, 2, 3, 4, 5, 6, 7].map(() => pacing.afterRun(ran(), pending()).alarm);
    expect(idle).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000].map((d) => ({ at: NOW + d, why: "poll" })));
    expect(pacing.afterRun(ran({ outcome: "more" }), pending())).toEqual({ alarm: { at: NOW, why: "work" } });
    expect(pacing.afterRun(ran(), pending()).alarm).toEqual({ at: NOW + 500, why: "poll" });
  });

  it("polls only a running active instance, and not a log that wakes its readers", () => {
    expect(new TaskPacing(true).afterRun(ran(), pending({ instance: { role: "standby", state: "RUNNING" } }))).toEqual({});
    expect(new TaskPacing(true).afterRun(ran(), pending({ instance: undefined }))).toEqual({});
    expect(new TaskPacing(false).afterRun(ran(), pending())).toEqual({});
  });

  it("keeps the alarm at the task's punctuation or retry back-off, never in the past", () => {
    expect(new TaskPacing(false).afterRun(ran(), pending({ timersDueAt: NOW + 250 }))).toEqual({ alarm: { at: NOW + 250, why: "timers" } });
    expect(new TaskPacing(false).afterRun(ran(), pending({ timersDueAt: NOW - 10 }))).toEqual({ alarm: { at: NOW, why: "timers" } });
  });

  it("looks at progress owed to the log with the timer (the alarm behind it), or with the alarm on a polled log", () => {
    expect(new TaskPacing(false).afterRun(ran(), pending({ progressDueAt: NOW + 100 }))).toEqual({
      alarm: { at: NOW + 5_100, why: "progress" },
      timer: { at: NOW + 100, why: "progress" },
    });
    const polled = new TaskPacing(true).afterRun(ran({ outcome: "more" }), pending({ progressDueAt: NOW + 100 }));
    expect(polled).toEqual({ alarm: { at: NOW, why: "work" } });
  });

  it("looks at progress its input partitions echo for with the timer alone: no alarm written (a polled log echoes nothing)", () => {
    expect(new TaskPacing(false).afterRun(ran(), pending({ progressDueAt: NOW + 10_000, progressEchoed: true }))).toEqual({
      timer: { at: NOW + 10_000, why: "progress" },
    });
    expect(new TaskPacing(false).afterDrain(pending({ progressDueAt: NOW + 10_000, progressEchoed: true, timersDueAt: NOW + 60_000 }))).toEqual({
      alarm: { at: NOW + 60_000, why: "timers" },
      timer: { at: NOW + 10_000, why: "progress" },
    });
    expect(new TaskPacing(true).afterDrain(pending({ progressDueAt: NOW + 10_000, progressEchoed: true }))).toEqual({
      alarm: { at: NOW + 10_000, why: "progress" },
    });
  });

  it("arms the earliest of everything asked for", () => {
    const plan = new TaskPacing(false).afterRun(ran({ synced: false, lingering: true }), pending({ nextCommitAt: NOW + 100, timersDueAt: NOW + 700 }));
    expect(plan).toEqual({ alarm: { at: NOW + 700, why: "timers" }, timer: { at: NOW + 100, why: "commit" } });
  });
});

describe("TaskPacing: after a drain", () => {
  it("arms only the task's timers and the progress it owes (a drain leaves no input behind)", () => {
    const pacing = new TaskPacing(false);
    expect(pacing.afterDrain(pending())).toEqual({});
    expect(pacing.afterDrain(pending({ timersDueAt: NOW + 60_000, progressDueAt: NOW + 100 }))).toEqual({
      alarm: { at: NOW + 5_100, why: "progress" },
      timer: { at: NOW + 100, why: "progress" },
    });
  });
});

describe("merge", () => {
  it("keeps the earlier wake-up of each kind (the first on a tie) and either's resync", () => {
    const a = { alarm: { at: 10, why: "retry" as const }, resync: true };
    const b = { alarm: { at: 10, why: "work" as const }, timer: { at: 5, why: "commit" as const } };
    expect(merge(a, b)).toEqual({ alarm: { at: 10, why: "retry" }, timer: { at: 5, why: "commit" }, resync: true });
    expect(merge(b, { alarm: { at: 9, why: "poll" } })).toEqual({ alarm: { at: 9, why: "poll" }, timer: { at: 5, why: "commit" } });
  });
});
