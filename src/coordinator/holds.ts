/**
 * Whether an instance holds an assignment: the same role, and for an active or standby the same
 * epoch (a revocation leaves the epoch the instance had). The coordinator's sweep compares what
 * an instance answers with what it was told by this rule.
 */
import type { TaskRole } from "../task/state";

export function holds(held: { readonly role: TaskRole; readonly epoch: number }, assignment: { readonly role: TaskRole; readonly epoch: number }): boolean {
  return held.role === assignment.role && (assignment.role === "idle" || held.epoch === assignment.epoch);
}

/**
 * Whether an instance's answer to a check (`held`: what it holds, none when it has nothing) shows
 * it still has what it was told: an idle instance may hold nothing; others must hold their assignment.
 */
export function stillHolds(
  held: { readonly role: TaskRole; readonly epoch: number } | undefined,
  assignment: { readonly role: TaskRole; readonly epoch: number },
): boolean {
  if (held === undefined) return assignment.role === "idle";
  return holds(held, assignment);
}
