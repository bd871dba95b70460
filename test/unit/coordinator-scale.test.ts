/**
 * The coordinator's pure steps at 10,000 tasks: the reconcile plan (actives, standbys, warm-up
 * targets), the assignor and standby placement. Maps, not nested scans: an O(T²) step at this
 * size is 10⁸ operations and would run past the test's time limit; here each runs in
 * milliseconds (`npm run bench` reports `reconcile_ms_10k_tasks`).
 */
import { describe, expect, it } from "vitest";
import { assignActives } from "../../src/coordinator/assignor";
import { planReconcile, type RoleChange } from "../../src/coordinator/reconcile";
import { placeStandbys, warmUpTargets, type HeldInstance } from "../../src/coordinator/standbys";

const TASKS = Array.from({ length: 10_000 }, (_, i) => `0_${i}`);

/** The assignment after applying a plan's changes to `instances`. */
function apply(instances: readonly HeldInstance[], changes: readonly RoleChange[]): HeldInstance[] {
  const byKey = new Map(instances.map((i) => [`${i.taskId}@${i.placement}`, i]));
  for (const c of changes) byKey.set(`${c.taskId}@${c.placement}`, c);
  return [...byKey.values()];
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

describe("the reconcile plan at 10,000 tasks", () => {
  it("assigns every task an active, balanced, and a standby at another placement", () => {
    const changes = planReconcile({ taskIds: TASKS, placements: ["eu", "us"], standbys: 1, instances: [] });
    expect(changes).toHaveLength(20_000);
    const actives = changes.filter((c) => c.role === "active");
    expect(new Set(actives.map((a) => a.taskId)).size).toBe(10_000);
    expect(countBy(actives, (a) => a.placement)).toEqual({ eu: 5_000, us: 5_000 });
    const activeAt = new Map(actives.map((a) => [a.taskId, a.placement]));
    const standbys = changes.filter((c) => c.role === "standby");
    expect(standbys).toHaveLength(10_000);
    for (const s of standbys) expect(s.placement).not.toBe(activeAt.get(s.taskId));
  });

  it("plans nothing for an assignment that already matches, and keeps actives where they are", () => {
    const placements = ["a", "b", "c"];
    const first = apply([], planReconcile({ taskIds: TASKS, placements, standbys: 1, instances: [] }));
    expect(planReconcile({ taskIds: TASKS, placements, standbys: 1, instances: first })).toEqual([]);
    // A fourth placement: sticky actives, nothing moves; new tasks go to the least loaded ones.
    const more = [...TASKS, ...Array.from({ length: 300 }, (_, i) => `1_${i}`)];
    const plan = planReconcile({ taskIds: more, placements: [...placements, "d"], standbys: 1, instances: first });
    const newActives = plan.filter((c) => c.role === "active");
    expect(newActives.map((c) => c.taskId).every((t) => t.startsWith("1_"))).toBe(true);
    expect(newActives.every((c) => c.placement === "d")).toBe(true);
  });

  it("puts a warm-up standby beside every active on a removed placement, and retires standbys no longer wanted", () => {
    const first = apply([], planReconcile({ taskIds: TASKS, placements: ["a", "b"], standbys: 1, instances: [] }));
    // Placement "b" is removed and standbys are turned off.
    const plan = planReconcile({ taskIds: TASKS, placements: ["a"], standbys: 0, instances: first });
    const strandedTasks = first.filter((i) => i.role === "active" && i.placement === "b").map((i) => i.taskId);
    expect(strandedTasks).toHaveLength(5_000);
    // Their standby at "a" stays (a warm-up target); the standbys at "b" of the tasks active at "a" go idle.
    const after = apply(first, plan);
    const standbys = after.filter((i) => i.role === "standby");
    expect(new Set(standbys.map((s) => s.taskId))).toEqual(new Set(strandedTasks));
    expect(standbys.every((s) => s.placement === "a")).toBe(true);
    expect(after.filter((i) => i.role === "idle")).toHaveLength(5_000);
    expect(warmUpTargets(after, ["a"])).toHaveLength(5_000);
  });
});

describe("the assignor and standby placement at 10,000 tasks", () => {
  it("the assignor is sticky and balanced", () => {
    const placements = ["p0", "p1", "p2", "p3", "p4"];
    const first = assignActives(TASKS, placements, []);
    expect(Object.values(countBy(first, (a) => a.placement))).toEqual([2_000, 2_000, 2_000, 2_000, 2_000]);
    // Placement p4 goes: only its tasks move, spread over the others.
    const second = assignActives(TASKS, placements.slice(0, 4), first);
    const moved = second.filter((a, i) => a.placement !== first[i]!.placement);
    expect(moved).toHaveLength(2_000);
    expect(Object.values(countBy(second, (a) => a.placement))).toEqual([2_500, 2_500, 2_500, 2_500]);
  });

  it("places standbys away from their active, warm ones first, balanced", () => {
    const placements = ["p0", "p1", "p2", "p3"];
    const actives = assignActives(TASKS, placements, []);
    const standbys = placeStandbys(
      actives,
      placements,
      actives.map((a) => ({ ...a, role: "active" as const })),
      2,
    );
    expect(standbys).toHaveLength(20_000);
    const activeAt = new Map(actives.map((a) => [a.taskId, a.placement]));
    for (const s of standbys) expect(s.placement).not.toBe(activeAt.get(s.taskId));
    const loads = Object.values(countBy(standbys, (s) => s.placement));
    expect(loads).toHaveLength(4);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(2);
    // A placement already holding a task's state (here an idle instance) is preferred.
    const held: HeldInstance[] = [{ taskId: "0_0", placement: "p3", role: "idle" }];
    const [first] = placeStandbys([{ taskId: "0_0", placement: "p0" }], placements, held, 1);
    expect(first).toEqual({ taskId: "0_0", placement: "p3" });
  });
});
