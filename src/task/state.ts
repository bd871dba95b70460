/**
 * The lifecycle of a task instance, as an explicit state machine: the legal transitions are
 * listed here, once, and every change of state goes through `transition`.
 *
 *   CREATED ──► RESTORING ──► RUNNING
 *      │            │  ▲         │
 *      │            ▼  │         ▼
 *      └──► UPDATING ◄─► SUSPENDED ──► CLOSED ──► CREATED (revive / reassign)
 *
 * Any state may close dirty (corruption, crash handling); only SUSPENDED closes clean.
 */

export type TaskState = "CREATED" | "RESTORING" | "RUNNING" | "SUSPENDED" | "CLOSED" | "UPDATING";

export type TaskRole = "active" | "standby" | "idle";

const transitions: Readonly<Record<TaskState, readonly TaskState[]>> = {
  CREATED: ["RESTORING", "UPDATING", "SUSPENDED", "CLOSED"],
  // A restoring task runs once caught up, or is suspended when revoked mid-restore.
  RESTORING: ["RUNNING", "SUSPENDED", "CLOSED"],
  RUNNING: ["SUSPENDED", "CLOSED"],
  // Suspended: resumed as active (restore the tail first), recycled into a standby, or closed.
  SUSPENDED: ["RESTORING", "UPDATING", "CLOSED"],
  CLOSED: ["CREATED"],
  // A standby is promoted by way of RESTORING (it restores only the tail), or suspended.
  UPDATING: ["RESTORING", "SUSPENDED", "CLOSED"],
};

export class IllegalStateTransition extends Error {
  constructor(
    readonly from: TaskState,
    readonly to: TaskState,
  ) {
    super(`illegal task state transition ${from} -> ${to}`);
    this.name = "IllegalStateTransition";
  }
}

export function canTransition(from: TaskState, to: TaskState): boolean {
  return transitions[from].includes(to);
}

/** Returns `to` when the transition is legal; throws `IllegalStateTransition` otherwise. */
export function transition(from: TaskState, to: TaskState): TaskState {
  if (!canTransition(from, to)) throw new IllegalStateTransition(from, to);
  return to;
}

export const TASK_STATES: readonly TaskState[] = Object.keys(transitions) as TaskState[];
