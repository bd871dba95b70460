/** How the lifecycle operations change a task instance's meta row (src/task/meta-transitions.ts): pure. */
import { describe, expect, it } from "vitest";
import { assignedMeta, assignmentChange, isRevoked, resumesOnRepush, revivedMeta, StaleAssignment, suspendedMeta } from "../../src/task/meta-transitions";
import { APPLICATION_SHUT_DOWN, type Assignment } from "../../src/task/protocol";
import type { TaskMeta } from "../../src/task/task-storage";

const running: TaskMeta = {
  taskId: "0_1",
  placement: "a",
  role: "active",
  state: "RUNNING",
  epoch: 3,
  incarnation: 2,
  nextCommit: 7,
  failure: null,
  failedAt: null,
  shutdownRequested: false,
  skips: [{ topic: "orders", partition: 1, offset: 5 }],
  lastReset: null,
  processedBefore: 11,
};
const assignment = (more: Partial<Assignment> = {}): Assignment => ({ taskId: "0_1", placement: "a", role: "active", epoch: 3, ...more });

describe("assignmentChange", () => {
  it("tells the assignment held from a new one, and refuses an older epoch or another task", () => {
    expect(assignmentChange(undefined, assignment())).toBe("new");
    expect(assignmentChange(running, assignment())).toBe("same");
    expect(assignmentChange(running, assignment({ role: "standby" }))).toBe("new");
    expect(assignmentChange(running, assignment({ epoch: 4 }))).toBe("new");
    expect(() => assignmentChange(running, assignment({ epoch: 2 }))).toThrow(StaleAssignment);
    expect(() => assignmentChange(running, assignment({ taskId: "0_2" }))).toThrow(/cannot take 0_2/);
  });
});

describe("resumesOnRepush", () => {
  it("resumes an active instance stopped by the shutdown, or any failure when told to resume, never while halted", () => {
    const shutDown = { ...running, failure: `${APPLICATION_SHUT_DOWN}: by 0_2` };
    const failed = { ...running, failure: "processing failed: boom" };
    expect(resumesOnRepush(shutDown, assignment())).toBe(true);
    expect(resumesOnRepush(failed, assignment())).toBe(false);
    expect(resumesOnRepush(failed, assignment({ resume: true }))).toBe(true);
    expect(resumesOnRepush(shutDown, assignment({ halted: "stopped" }))).toBe(false);
    expect(resumesOnRepush(running, assignment({ resume: true }))).toBe(false);
    expect(resumesOnRepush({ ...shutDown, role: "standby" }, assignment())).toBe(false);
  });
});

describe("assignedMeta", () => {
  it("starts a first assignment from CREATED", () => {
    expect(assignedMeta(undefined, assignment({ epoch: 1 }))).toMatchObject({
      state: "RESTORING",
      epoch: 1,
      incarnation: 0,
      nextCommit: 1,
      failure: null,
      skips: [],
    });
    expect(assignedMeta(undefined, assignment({ role: "standby" })).state).toBe("UPDATING");
    expect(assignedMeta(undefined, assignment({ role: "idle" })).state).toBe("CREATED");
  });

  it("suspends what ran and keeps what an operator asked and the incarnation's counters", () => {
    const next = assignedMeta(running, assignment({ role: "standby", epoch: 4 }));
    expect(next).toMatchObject({ role: "standby", state: "UPDATING", epoch: 4, incarnation: 2, nextCommit: 7, skips: running.skips, processedBefore: 11 });
    expect(assignedMeta({ ...running, state: "CLOSED" }, assignment({ epoch: 4 })).state).toBe("RESTORING");
  });

  it("keeps a shutdown not yet reported, and starts stopped when the application is halted", () => {
    const asked = { ...running, failure: "processing failed", failedAt: { topic: "orders", partition: 1, offset: 9 }, shutdownRequested: true };
    expect(assignedMeta(asked, assignment({ epoch: 4 }))).toMatchObject({ failure: "processing failed", failedAt: asked.failedAt, shutdownRequested: true });
    expect(assignedMeta(running, assignment({ epoch: 4, halted: "halted" }))).toMatchObject({ failure: "halted", failedAt: null });
    expect(assignedMeta({ ...running, failure: "processing failed" }, assignment({ epoch: 4 })).failure).toBeNull();
  });
});

describe("revocation and wipe", () => {
  it("suspends an instance that was active in any state, and only then", () => {
    expect(isRevoked({ ...running, role: "idle", state: "SUSPENDED" })).toBe(true);
    expect(isRevoked({ ...running, role: "idle" })).toBe(false);
    expect(suspendedMeta(running)).toMatchObject({ role: "idle", state: "SUSPENDED" });
    expect(suspendedMeta({ ...running, state: "CREATED" })).toMatchObject({ role: "idle", state: "CREATED" });
  });

  it("revives a wiped instance as the next incarnation in its role, clearing any failure but the application's shutdown", () => {
    expect(revivedMeta({ ...running, failure: "corrupted" }, 40)).toMatchObject({ state: "RESTORING", incarnation: 3, failure: null, processedBefore: 40 });
    expect(revivedMeta({ ...running, role: "standby", state: "UPDATING" }, 0).state).toBe("UPDATING");
    const shutDown = `${APPLICATION_SHUT_DOWN}: by 0_2`;
    expect(revivedMeta({ ...running, failure: shutDown }, 0).failure).toBe(shutDown);
  });
});
