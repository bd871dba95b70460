/**
 * The reconcile plan: what the stored assignment must change to match the configuration — an
 * active per task (sticky, balanced), `standbys` standbys per task at other placements, and a
 * warm-up standby for every active on a placement no longer configured — as a list of instances
 * taking a new role, each under a fresh epoch (the coordinator hands them out in this order).
 * Pure and O(T log T) in the number of instances: every look-up goes through maps, so 10,000 tasks
 * plan in milliseconds (test/coordinator-scale.test.ts).
 */
import { assignActives } from "./assignor";
import { instanceKey, placeStandbys, warmUpTargets, type HeldInstance } from "./standbys";
import type { TaskRole } from "../task/state";

/** An instance to store with this role, a new epoch, unacknowledged. */
export interface RoleChange {
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
}

export interface ReconcileInput {
  /** Every task of the application. */
  readonly taskIds: readonly string[];
  /** The configured placements, in order. */
  readonly placements: readonly string[];
  /** NUM_STANDBYS. */
  readonly standbys: number;
  /** The stored assignment. */
  readonly instances: readonly HeldInstance[];
}

export function planReconcile({ taskIds, placements, standbys, instances }: ReconcileInput): RoleChange[] {
  const changes: RoleChange[] = [];
  const configured = new Set(placements);
  // The assignment as it will be once the changes so far are applied (insertion order kept).
  const current = new Map<string, HeldInstance>();
  for (const i of instances) current.set(instanceKey(i), i);
  const change = (c: RoleChange) => {
    changes.push(c);
    current.set(instanceKey(c), c);
  };

  // 1. Tasks without an active instance get one.
  const activeTasks = new Set<string>();
  for (const i of instances) if (i.role === "active") activeTasks.add(i.taskId);
  const missing = new Set(taskIds.filter((t) => !activeTasks.has(t)));
  if (missing.size > 0) {
    const previous = instances.filter((i) => i.role === "active" && configured.has(i.placement));
    for (const wanted of assignActives(taskIds, placements, previous)) {
      if (missing.has(wanted.taskId)) change({ ...wanted, role: "active" });
    }
  }

  // 2. Standbys: NUM_STANDBYS per task at other placements, plus warm-up targets; others idle.
  const all = [...current.values()].sort(byTaskAndPlacement);
  const actives = all.filter((i) => i.role === "active" && configured.has(i.placement));
  const desired = [...placeStandbys(actives, placements, all, standbys), ...warmUpTargets(all, placements)];
  const wanted = new Set(desired.map(instanceKey));
  for (const instance of all) {
    if (instance.role === "active") continue;
    const isWanted = wanted.has(instanceKey(instance));
    if (isWanted && instance.role !== "standby") change({ taskId: instance.taskId, placement: instance.placement, role: "standby" });
    if (!isWanted && instance.role === "standby") change({ taskId: instance.taskId, placement: instance.placement, role: "idle" });
  }
  // New standbys: desired instances not held yet (`change` adds each to `current`, so a repeat is skipped).
  for (const d of desired) if (!current.has(instanceKey(d))) change({ ...d, role: "standby" });
  return changes;
}

/** The store's order (task id, then placement), as SQLite's ORDER BY compares text. */
export function byTaskAndPlacement(a: { taskId: string; placement: string }, b: { taskId: string; placement: string }): number {
  return compareText(a.taskId, b.taskId) || compareText(a.placement, b.placement);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
