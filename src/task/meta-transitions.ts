/**
 * How the lifecycle operations change an instance's meta row, as pure functions of the row before:
 * an assignment pushed again or a new one (Kafka's TaskManager `handleAssignment`), a revocation
 * (`suspend`), and a wipe (close dirty, then revive as a new incarnation). Every state change goes
 * through state.ts's `transition`; the task writes each row in the operation's own transaction.
 */
import { APPLICATION_SHUT_DOWN, type Assignment } from "./protocol";
import { transition, type TaskState } from "./state";
import type { TaskMeta } from "./task-storage";

export class StaleAssignment extends Error {
  override name = "StaleAssignment";
}

/**
 * Whether `assignment` is the one the instance holds (`"same"`: the coordinator pushes assignments
 * again, after a crash and in its periodic sweep) or a new one. An older epoch is refused (I3), as
 * is another task's.
 */
export function assignmentChange(current: TaskMeta | undefined, assignment: Assignment): "same" | "new" {
  if (!current) return "new";
  if (current.taskId !== assignment.taskId) throw new Error(`instance of ${current.taskId} cannot take ${assignment.taskId}`);
  if (assignment.epoch < current.epoch) throw new StaleAssignment(`task ${assignment.taskId}: epoch ${assignment.epoch} is older than ${current.epoch}`);
  return assignment.epoch === current.epoch && assignment.role === current.role ? "same" : "new";
}

/**
 * Whether the same assignment, pushed again, resumes an active instance: the application's
 * shutdown was lifted (`resume`), or it stopped only because the application was shut down.
 */
export function resumesOnRepush(current: TaskMeta, assignment: Assignment): boolean {
  return (
    assignment.halted === undefined &&
    current.role === "active" &&
    current.failure !== null &&
    (assignment.resume === true || current.failure.startsWith(APPLICATION_SHUT_DOWN))
  );
}

/** The meta row of an instance that takes a new assignment (`before`: its row until now, if any). */
export function assignedMeta(before: TaskMeta | undefined, assignment: Assignment): TaskMeta {
  let state: TaskState = before?.state ?? "CREATED";
  if (state === "CLOSED") state = transition(state, "CREATED");
  if (state === "RUNNING" || state === "RESTORING" || state === "UPDATING") state = transition(state, "SUSPENDED");
  if (assignment.role === "active") state = transition(state, "RESTORING");
  else if (assignment.role === "standby") state = transition(state, "UPDATING");
  return {
    taskId: assignment.taskId,
    placement: assignment.placement,
    role: assignment.role,
    state,
    epoch: assignment.epoch,
    incarnation: before?.incarnation ?? 0,
    nextCommit: before?.nextCommit ?? 1,
    failure: assignment.halted ?? (before?.shutdownRequested ? before.failure : null),
    failedAt: assignment.halted === undefined && before?.shutdownRequested ? before.failedAt : null,
    // A shutdown not yet reported must still reach the coordinator.
    shutdownRequested: before?.shutdownRequested ?? false,
    // What an operator asked of this instance still holds under a new assignment.
    skips: before?.skips ?? [],
    lastReset: before?.lastReset ?? null,
    processedBefore: before?.processedBefore ?? 0,
  };
}

/** Whether a revocation has anything to do: an idle instance that is not active in any state already is revoked. */
export function isRevoked(meta: TaskMeta): boolean {
  return meta.role === "idle" && meta.state !== "RUNNING" && meta.state !== "RESTORING" && meta.state !== "UPDATING";
}

/** The meta row of a revoked instance: idle, and SUSPENDED unless it is already at rest. */
export function suspendedMeta(meta: TaskMeta): TaskMeta {
  if (meta.state !== "SUSPENDED" && meta.state !== "CLOSED" && meta.state !== "CREATED")
    return { ...meta, state: transition(meta.state, "SUSPENDED"), role: "idle" };
  return { ...meta, role: "idle" };
}

/**
 * The meta row of an instance wiped (closed dirty) and revived as a new incarnation, which
 * restores again in its role. `processedBefore`: the records processed in all, which lived in the
 * rows the wipe deletes.
 */
export function revivedMeta(meta: TaskMeta, processedBefore: number): TaskMeta {
  let state = transition(meta.state, "CLOSED");
  state = transition(state, "CREATED");
  if (meta.role === "active") state = transition(state, "RESTORING");
  else if (meta.role === "standby") state = transition(state, "UPDATING");
  // A wipe cures a corrupted store, not an application someone shut down.
  const failure = meta.failure?.startsWith(APPLICATION_SHUT_DOWN) ? meta.failure : null;
  return { ...meta, state, incarnation: meta.incarnation + 1, failure, processedBefore };
}
