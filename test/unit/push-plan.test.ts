/**
 * The coordinator's push plan (src/coordinator/push-plan.ts): revocations and standbys first, a
 * task's new active only once every other instance of that task acknowledged; what each is told.
 */
import { describe, expect, it } from "vitest";
import type { ApplicationShutdown, InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { assignmentOf, haltReason, readyActives, revocationsAndStandbys } from "../../src/coordinator/push-plan";
import { APPLICATION_SHUT_DOWN } from "../../src/task/protocol";
import type { TaskRole } from "../../src/task/state";

const LIMIT = { limit: 200 };

function at(taskId: string, placement: string, role: TaskRole, acknowledged: boolean, epoch = 1): InstanceAssignment {
  return { taskId, placement, role, epoch, acknowledged };
}

const names = (instances: readonly InstanceAssignment[]) => instances.map((i) => `${i.taskId}@${i.placement}`);

/** The assignment after the instances named acknowledged. */
function acknowledged(assignment: readonly InstanceAssignment[], told: readonly InstanceAssignment[]): InstanceAssignment[] {
  const done = new Set(names(told));
  return assignment.map((i) => (done.has(`${i.taskId}@${i.placement}`) ? { ...i, acknowledged: true } : i));
}

describe("the push plan's order", () => {
  it("revokes a moved task's old active first, and assigns its new active only once the revocation is acknowledged", () => {
    // A migration of 0_0 from a to b: the old active is idle (to revoke), the new one active.
    const assignment = [at("0_0", "a", "idle", false), at("0_0", "b", "active", false, 2)];
    const first = revocationsAndStandbys(assignment, LIMIT);
    expect(names(first)).toEqual(["0_0@a"]);
    // Not acknowledged yet (the revocation failed or is in flight): the new active waits.
    expect(readyActives(assignment, LIMIT)).toEqual([]);
    expect(names(readyActives(acknowledged(assignment, first), LIMIT))).toEqual(["0_0@b"]);
  });

  it("holds a task's active back while one of its standbys has not acknowledged, not other tasks' actives", () => {
    const assignment = [at("0_0", "a", "active", false), at("0_0", "b", "standby", false), at("0_1", "a", "standby", true), at("0_1", "b", "active", false)];
    expect(names(revocationsAndStandbys(assignment, LIMIT))).toEqual(["0_0@b"]);
    expect(names(readyActives(assignment, LIMIT))).toEqual(["0_1@b"]);
    expect(names(readyActives(acknowledged(assignment, [assignment[1]!]), LIMIT))).toEqual(["0_0@a", "0_1@b"]);
  });

  it("never puts an active in the first wave, and never pushes what is acknowledged", () => {
    const assignment = [at("0_0", "a", "active", false), at("0_1", "a", "active", true), at("0_1", "b", "standby", true), at("0_2", "c", "idle", true)];
    expect(revocationsAndStandbys(assignment, LIMIT)).toEqual([]);
    expect(names(readyActives(assignment, LIMIT))).toEqual(["0_0@a"]);
  });

  it("puts the focus task's instances first in each wave, so that a limited round takes them", () => {
    const assignment = [at("0_0", "a", "standby", false), at("0_0", "b", "active", false), at("0_1", "a", "active", false), at("0_1", "b", "idle", false)];
    expect(names(revocationsAndStandbys(assignment, { limit: 1, focus: "0_1" }))).toEqual(["0_1@b"]);
    expect(names(revocationsAndStandbys(assignment, { limit: 1 }))).toEqual(["0_0@a"]);
    const afterFirst = acknowledged(assignment, [assignment[0]!, assignment[3]!]);
    expect(names(readyActives(afterFirst, { limit: 1, focus: "0_1" }))).toEqual(["0_1@a"]);
    expect(names(readyActives(afterFirst, { limit: 2, focus: "0_1" }))).toEqual(["0_1@a", "0_0@b"]);
  });

  it("tells at most the limit in a wave (none when the first wave filled the round)", () => {
    const assignment = [0, 1, 2, 3].map((n) => at(`0_${n}`, "a", "standby", false));
    expect(revocationsAndStandbys(assignment, { limit: 3 })).toHaveLength(3);
    expect(readyActives([at("0_0", "a", "active", false)], { limit: 0 })).toEqual([]);
  });

  it("in any assignment, pushes an active only once every other instance of its task acknowledged", () => {
    // A seeded walk over random assignments (several instances per task, any roles, any flags).
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 48_271) % 2_147_483_647; // Park–Miller: exact in doubles
      return seed % n;
    };
    const roles: TaskRole[] = ["active", "standby", "idle"];
    for (let round = 0; round < 200; round++) {
      const assignment: InstanceAssignment[] = [];
      for (let t = 0; t < 4; t++)
        for (const placement of ["a", "b", "c"].slice(0, 1 + random(3)))
          assignment.push(at(`0_${t}`, placement, placement === "a" ? "active" : roles[1 + random(2)]!, random(2) === 0));
      const first = revocationsAndStandbys(assignment, { limit: 1 + random(6) });
      expect(first.every((i) => i.role !== "active" && !i.acknowledged)).toBe(true);
      // Some of the first wave fail: they stay unacknowledged.
      const after = acknowledged(
        assignment,
        first.filter(() => random(3) > 0),
      );
      for (const active of readyActives(after, LIMIT)) {
        expect(active.role).toBe("active");
        expect(active.acknowledged).toBe(false);
        const others = after.filter((i) => i.taskId === active.taskId && i.placement !== active.placement);
        expect(others.every((i) => i.acknowledged)).toBe(true);
      }
      // And every active it holds back has an unacknowledged instance beside it.
      const ready = new Set(names(readyActives(after, LIMIT)));
      for (const held of after.filter((i) => i.role === "active" && !i.acknowledged && !ready.has(`${i.taskId}@${i.placement}`)))
        expect(after.some((i) => i.taskId === held.taskId && i.role !== "active" && !i.acknowledged)).toBe(true);
    }
  });
});

describe("what an instance is told", () => {
  const shutdown: ApplicationShutdown = { taskId: "0_1", placement: "b", reason: "boom", at: 1 };

  it("halts actives while the application is shut down, with the reason", () => {
    const told = assignmentOf(at("0_0", "a", "active", false, 5), { shutdown, resuming: false });
    expect(told).toEqual({ taskId: "0_0", placement: "a", role: "active", epoch: 5, halted: haltReason(shutdown) });
    expect(told.halted).toBe(`${APPLICATION_SHUT_DOWN}: task 0_1 at b failed: boom`);
  });

  it("tells actives not yet told since the shutdown was lifted to resume, and no one else", () => {
    expect(assignmentOf(at("0_0", "a", "active", false), { shutdown: undefined, resuming: true })).toMatchObject({ resume: true });
    expect(assignmentOf(at("0_0", "a", "active", true), { shutdown: undefined, resuming: true })).not.toHaveProperty("resume");
    expect(assignmentOf(at("0_0", "a", "active", false), { shutdown: undefined, resuming: false })).not.toHaveProperty("resume");
  });

  it("tells standbys and idle instances their role and epoch only", () => {
    for (const role of ["standby", "idle"] as const)
      expect(assignmentOf(at("0_0", "b", role, false, 3), { shutdown, resuming: true })).toEqual({ taskId: "0_0", placement: "b", role, epoch: 3 });
  });
});
