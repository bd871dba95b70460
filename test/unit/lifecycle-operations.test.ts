/**
 * The order of a lifecycle operation's calls (src/task/lifecycle-operations.ts), the rule that
 * makes each converge after a crash at any await: the recovery alarm is armed before the first
 * await that writes, the new state is written in one step before the outside is told, and what
 * follows is left to the alarm that state makes run. Ports that record each call, in order; the
 * real task under these operations is killed at every crash point in test/lifecycle-crashes.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Application } from "../../src/application";
import type { LifecycleHistory } from "../../src/task/lifecycle";
import { LifecycleOperations, type OperationsDeps } from "../../src/task/lifecycle-operations";
import type { OutsideReconciliation } from "../../src/task/outside-reconciliation";
import type { Assignment, RestoreBatch } from "../../src/task/protocol";
import type { StreamTask } from "../../src/task/stream-task";
import type { TaskCrashPoints } from "../../src/task/task-crash-points";
import type { TaskRunner } from "../../src/task/task-runner";
import type { TaskMeta } from "../../src/task/task-storage";

const META = { taskId: "0_0", placement: "a", role: "active", state: "RUNNING", epoch: 1, incarnation: 1, nextCommit: 0, failure: null } as TaskMeta;

/** A port whose every method records `<port>.<method>` and answers what `answers` gives (else undefined, or a resolved promise for `async`). */
function recorder<T>(port: string, calls: string[], answers: Record<string, (...args: unknown[]) => unknown> = {}): T {
  return new Proxy(
    {},
    {
      get: (_, method: string) => {
        if (method === "then") return undefined;
        return (...args: unknown[]) => {
          calls.push(`${port}.${method}`);
          return answers[method] ? answers[method](...args) : undefined;
        };
      },
    },
  ) as T;
}

function setUp(task: Record<string, (...args: unknown[]) => unknown> = {}) {
  const calls: string[] = [];
  const resolved = async () => undefined;
  const deps: OperationsDeps = {
    task: recorder<StreamTask>("task", calls, {
      meta: () => META,
      assign: async () => META,
      suspend: async () => ({ ...META, role: "idle" }),
      resetInput: async () => ({ positions: [] }),
      commitInputOffsets: resolved,
      deliverBeforeWipe: resolved,
      tryCompleteRestoration: async () => true,
      skip: () => ({ status: "skipped", already: false }),
      ...task,
    }),
    application: {} as Application,
    runner: recorder<TaskRunner>("runner", calls, {
      armRecovery: resolved,
      armAtOnce: resolved,
      armAfterDrain: resolved,
      steps: async () => ({ worked: 0, outcome: "idle", lingering: false }),
      identity: () => ({}),
    }),
    outside: recorder<OutsideReconciliation>("outside", calls, { reconcile: async () => true }),
    lifecycle: recorder<LifecycleHistory>("lifecycle", calls, { snapshot: () => ({}) }),
    crashes: recorder<TaskCrashPoints>("crashes", calls, {
      reachAfterWrites: resolved,
      drain: (work) => (work as () => Promise<unknown>)(),
    }),
    reports: recorder("reports", calls),
    report: () => calls.push("report"),
    describe: async () => {
      calls.push("describe");
      return {} as Awaited<ReturnType<OperationsDeps["describe"]>>;
    },
  };
  return { operations: new LifecycleOperations(deps), calls };
}

/** The calls that matter for convergence: arming, durable writes, crash points, the outside. */
function order(calls: string[], of: string[]): string[] {
  return calls.filter((call) => of.includes(call));
}

describe("each lifecycle operation arms its recovery before it writes, and writes before it tells the outside", () => {
  it("assign", async () => {
    const { operations, calls } = setUp();
    await operations.assign({ taskId: "0_0", role: "active" } as unknown as Assignment);
    expect(order(calls, ["runner.armRecovery", "task.assign", "crashes.reachAfterWrites", "outside.reconcile", "runner.armAtOnce"])).toEqual([
      "runner.armRecovery",
      "task.assign",
      "crashes.reachAfterWrites",
      "outside.reconcile",
      "runner.armAtOnce",
    ]);
  });

  it("revoke", async () => {
    const { operations, calls } = setUp();
    const ack = await operations.revoke();
    expect(ack?.role).toBe("idle");
    expect(order(calls, ["runner.armRecovery", "task.suspend", "crashes.reachAfterWrites", "outside.reconcile"])).toEqual([
      "runner.armRecovery",
      "task.suspend",
      "crashes.reachAfterWrites",
      "outside.reconcile",
    ]);
  });

  it("corrupt: delivers what was committed, wipes in one step, then restores", async () => {
    const { operations, calls } = setUp();
    await operations.corrupt();
    expect(
      order(calls, ["runner.armRecovery", "task.deliverBeforeWipe", "task.wipe", "task.tryCompleteRestoration", "outside.reconcile", "runner.armAtOnce"]),
    ).toEqual(["runner.armRecovery", "task.deliverBeforeWipe", "task.wipe", "task.tryCompleteRestoration", "outside.reconcile", "runner.armAtOnce"]);
  });

  it("corrupt of an incarnation already wiped changes nothing", async () => {
    const { operations, calls } = setUp();
    await operations.corrupt(META.incarnation - 1);
    expect(calls.filter((call) => call.startsWith("runner.") || call === "task.wipe")).toEqual([]);
  });

  it("skip: armed first, one write, then the crash point; a refused skip writes no history", async () => {
    const { operations, calls } = setUp();
    await operations.skip({ topic: "orders", partition: 0, offset: 3 });
    expect(order(calls, ["runner.armAtOnce", "task.skip", "lifecycle.record", "crashes.reachAfterWrites"])).toEqual([
      "runner.armAtOnce",
      "task.skip",
      "lifecycle.record",
      "crashes.reachAfterWrites",
    ]);
    const refused = setUp({ skip: () => ({ status: "refused", reason: "not stopped there" }) });
    expect(await refused.operations.skip({ topic: "orders", partition: 0, offset: 3 })).toMatchObject({ status: "refused" });
    expect(refused.calls).not.toContain("lifecycle.record");
  });

  it("an input reset: armed before it is applied, the group told after", async () => {
    const { operations, calls } = setUp();
    await operations.resetInput({ id: "r1" } as never);
    expect(order(calls, ["runner.armRecovery", "task.resetInput", "task.commitInputOffsets", "runner.armAtOnce"])).toEqual([
      "runner.armRecovery",
      "task.resetInput",
      "task.commitInputOffsets",
      "runner.armAtOnce",
    ]);
  });

  it("an input reset the group cannot hear of now still completes (the next offset commit tells it)", async () => {
    const { operations, calls } = setUp({
      commitInputOffsets: async () => {
        throw new Error("partition unavailable");
      },
    });
    await expect(operations.resetInput({ id: "r1" } as never)).resolves.toBeDefined();
    expect(calls).toContain("runner.armAtOnce");
  });

  it("a restore batch that completes restoration: armed, turned RUNNING, crash point, then the outside", async () => {
    const { operations, calls } = setUp({
      applyRestoreBatch: () => ({ caughtUp: true, role: "active", state: "RESTORING" }),
    });
    const reply = await operations.applyRestoreBatch({ topic: "c", partition: 0, end: 10 } as unknown as RestoreBatch);
    expect(reply.state).toBe("RUNNING");
    expect(
      order(calls, ["task.applyRestoreBatch", "runner.armRecovery", "task.tryCompleteRestoration", "crashes.reachAfterWrites", "outside.reconcile"]),
    ).toEqual(["task.applyRestoreBatch", "runner.armRecovery", "task.tryCompleteRestoration", "crashes.reachAfterWrites", "outside.reconcile"]);
  });

  it("a restore batch caught up with an end that moved on is still work for the restore worker", async () => {
    const { operations } = setUp({
      applyRestoreBatch: () => ({ caughtUp: true, role: "active", state: "RESTORING" }),
      tryCompleteRestoration: async () => false,
    });
    const reply = await operations.applyRestoreBatch({ topic: "c", partition: 0, end: 10 } as unknown as RestoreBatch);
    expect(reply).toMatchObject({ caughtUp: false, state: "RESTORING" });
  });

  it("a drain of an active instance arms its recovery first and flushes once idle", async () => {
    const { operations, calls } = setUp();
    await operations.drain(10);
    expect(order(calls, ["runner.armRecovery", "outside.reconcile", "runner.steps", "task.flush", "runner.armAfterDrain"])).toEqual([
      "runner.armRecovery",
      "outside.reconcile",
      "runner.steps",
      "task.flush",
      "runner.armAfterDrain",
    ]);
  });
});
