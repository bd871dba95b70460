/**
 * The task runner (src/task/task-runner.ts) on a fake clock, with ports that note what they are
 * asked: a run never fails (its failure arms the alarm with a back-off), a wake-up runs, arms or
 * is noted as pacing and runs in progress say, a planned commit crash leaves runs to the alarm, and
 * a shutdown request is reported until the coordinator has it. The task is a small stand-in for
 * StreamTask's surface the runner uses: the runner's decisions are what is tested here; the real
 * task runs under the runner in every workerd test.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { LifecycleHistory } from "../../src/task/lifecycle";
import type { OutsideReconciliation } from "../../src/task/outside-reconciliation";
import { BACKSTOP_MS, MAX_RETRY_DELAY_MS, RECOVERY_DELAY_MS, RETRY_DELAY_MS } from "../../src/task/pacing";
import type { StepOutcome } from "../../src/task/protocol";
import type { StreamTask } from "../../src/task/stream-task";
import type { TaskCrashPoints } from "../../src/task/task-crash-points";
import { TaskRunner } from "../../src/task/task-runner";
import type { TaskMeta } from "../../src/task/task-storage";
import { Serial } from "../../src/util/serial";

const NOW = 1_700_000_000_000;

function meta(over: Partial<TaskMeta> = {}): TaskMeta {
  return { taskId: "0_0", placement: "a", role: "active", state: "RUNNING", epoch: 1, incarnation: 1, nextCommit: 0, failure: null, ...over } as TaskMeta;
}

interface Options {
  meta?: TaskMeta;
  /** What each step answers, in turn (then "idle"). */
  steps?: StepOutcome[];
  /** The outside cannot be brought in line: reconcile throws (changeable while the runner lives). */
  reconcileFails?: boolean;
  /** Reconciling waits for this first (a run in progress). */
  reconcileWaits?: Promise<void>;
  /** The coordinator does not answer the shutdown request. */
  shutdownFails?: boolean;
  commitCrashPlanned?: boolean;
  nextCommitAt?: number;
}

function setUp(options: Options = {}) {
  let current: TaskMeta | undefined = options.meta ?? meta();
  const outcomes = [...(options.steps ?? [])];
  const armed: number[] = [];
  const background: Promise<unknown>[] = [];
  const calls: string[] = [];
  const task = {
    loaded: false,
    /** Input is waiting while steps are left to answer. */
    get backlog() {
      return outcomes.length > 0;
    },
    meta: () => current,
    nextCommitAt: () => options.nextCommitAt ?? Date.now(),
    pendingWork: () => ({ timersDueAt: undefined, progressDueAt: undefined, progressEchoed: false }),
    toldOfInput: () => calls.push("toldOfInput"),
    step: async () => {
      calls.push("step");
      return outcomes.shift() ?? "idle";
    },
    shutdownReported: () => {
      calls.push("shutdownReported");
      current = current && { ...current, shutdownRequested: false };
    },
  };
  const runner = new TaskRunner({
    task: task as unknown as StreamTask,
    serial: new Serial(),
    outside: {
      reconcile: async () => {
        calls.push("reconcile");
        await options.reconcileWaits;
        if (options.reconcileFails) throw new Error("partition unavailable");
        return true;
      },
      forget: () => calls.push("forget"),
    } as unknown as OutsideReconciliation,
    lifecycle: { noteRunning: () => {}, noteFailure: () => {} } as unknown as LifecycleHistory,
    crashes: { commitCrashPlanned: options.commitCrashPlanned ?? false } as TaskCrashPoints,
    polls: false,
    alarm: {
      armBy: async (at) => {
        armed.push(at);
      },
    },
    background: (work) => background.push(work),
    report: () => calls.push("report"),
    shutdownApplication: async (request) => {
      calls.push(`shutdown ${request.taskId} ${request.reason}`);
      if (options.shutdownFails) throw new Error("coordinator unavailable");
    },
  });
  return {
    runner,
    options,
    armed,
    calls,
    /** Runs started in the background (by wake-ups, a timer's turn later, or the timer) have ended. */
    settle: async () => {
      await vi.advanceTimersByTimeAsync(0);
      await Promise.all(background);
    },
    background,
    setMeta: (next: TaskMeta) => {
      current = next;
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
  vi.setSystemTime(NOW);
});
afterEach(() => {
  vi.useRealTimers();
});

describe("a run", () => {
  it("never fails: a run that cannot bring the outside in line arms the alarm to retry, backing off, and reports nothing", async () => {
    const { runner, armed, calls } = setUp({ reconcileFails: true });
    await runner.run();
    await runner.run();
    await runner.run();
    expect(armed).toEqual([NOW + RETRY_DELAY_MS, NOW + 2 * RETRY_DELAY_MS, NOW + 4 * RETRY_DELAY_MS]);
    expect(calls).not.toContain("step");
    expect(calls).not.toContain("report");
  });

  it("backs off no further than the longest retry delay, and starts over after a run that ran", async () => {
    const { runner, armed } = setUp({ reconcileFails: true });
    for (let i = 0; i < 10; i++) await runner.run();
    expect(armed.at(-1)).toBe(NOW + MAX_RETRY_DELAY_MS);
  });

  it("starts its back-off over after a run that ran", async () => {
    const { runner, armed, options } = setUp({ reconcileFails: true });
    await runner.run();
    await runner.run();
    expect(armed).toEqual([NOW + RETRY_DELAY_MS, NOW + 2 * RETRY_DELAY_MS]);
    options.reconcileFails = false;
    await runner.run();
    options.reconcileFails = true;
    await runner.run();
    expect(armed.at(-1)).toBe(NOW + RETRY_DELAY_MS);
  });

  it("takes steps while they bring more, then reports; work left at the step limit is looked at again at once", async () => {
    const { runner, armed, calls } = setUp({ steps: ["more", "more", "idle"] });
    await runner.run();
    expect(calls.filter((call) => call === "step")).toHaveLength(3);
    expect(calls.at(-1)).toBe("report");
    expect(armed).toEqual([]);

    const busy = setUp({ steps: Array<StepOutcome>(60).fill("more") });
    await busy.runner.run();
    expect(busy.calls.filter((call) => call === "step")).toHaveLength(50);
    expect(busy.armed).toEqual([NOW]);
  });

  it("leaves the steps to the alarm while a commit crash is planned: it only arms the recovery", async () => {
    const { runner, armed, calls } = setUp({ commitCrashPlanned: true, steps: ["more"] });
    await runner.run();
    expect(calls).toEqual([]);
    expect(armed).toEqual([NOW + RECOVERY_DELAY_MS]);
  });
});

describe("a wake-up", () => {
  it("of an instance that is not active does nothing", async () => {
    const { runner, armed, calls, background } = setUp({ meta: meta({ role: "standby" }) });
    expect(await runner.wake()).toBeNull();
    expect(calls).toEqual([]);
    expect(armed).toEqual([]);
    expect(background).toHaveLength(0);
  });

  it("that would look at once runs in the background, a turn of the event loop after its answer, with no alarm written", async () => {
    const { runner, armed, calls, settle } = setUp({ steps: ["more", "idle"] });
    await runner.wake();
    // Answered before the run began (the append that woke it answers its producer first).
    expect(calls.filter((call) => call === "reconcile" || call === "step")).toEqual([]);
    await settle();
    expect(calls.filter((call) => call === "step")).toHaveLength(2);
    expect(armed).toEqual([]);
  });

  it("that comes before the next commit arms the timer for it, the alarm behind it, and the timer runs then", async () => {
    const at = NOW + 100;
    const { runner, armed, calls, background, settle } = setUp({ nextCommitAt: at, steps: ["idle"] });
    await runner.wake();
    expect(armed).toEqual([at + BACKSTOP_MS]);
    expect(background).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(99);
    expect(background).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(background).toHaveLength(1);
    await settle();
    expect(calls).toContain("step");
  });

  it("that comes while a run is in progress is noted, not run beside it: the run looks again as it ends", async () => {
    let release: () => void = () => {};
    const reconcileWaits = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { runner, armed, background, settle } = setUp({ reconcileWaits, steps: ["idle", "idle"] });
    const running = runner.run();
    await runner.wake();
    expect(background).toHaveLength(0);
    release();
    await running;
    // The note became a look at the next commit (now): the timer, with the alarm behind it.
    expect(armed).toEqual([NOW + BACKSTOP_MS]);
    await vi.advanceTimersByTimeAsync(0);
    expect(background).toHaveLength(1);
    await settle();
  });
});

describe("an application shutdown an uncaught error asked for", () => {
  it("is reported to the coordinator after the run, and marked reported", async () => {
    const { runner, calls, armed } = setUp({ meta: meta({ shutdownRequested: true, failure: "boom" } as Partial<TaskMeta>) });
    await runner.run();
    expect(calls).toContain("shutdown 0_0 boom");
    expect(calls.at(-1)).toBe("shutdownReported");
    expect(armed).toEqual([]);
  });

  it("is asked again by the alarm while the coordinator does not answer", async () => {
    const { runner, calls, armed } = setUp({ meta: meta({ shutdownRequested: true } as Partial<TaskMeta>), shutdownFails: true });
    await runner.run();
    expect(calls).toContain("shutdown 0_0 an uncaught error");
    expect(calls).not.toContain("shutdownReported");
    expect(armed).toEqual([NOW + RETRY_DELAY_MS]);
  });
});
