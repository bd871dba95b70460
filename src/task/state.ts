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
 *
 * `FAILED` is not one of these states: it is what an active instance stopped by a failure shows
 * (`shownState`), derived in that one place from the meta row's `failure`, which alone says
 * whether the instance is stopped. A failure stops processing whatever the lifecycle state (a
 * halted instance may be RESTORING), and revocation, wipes and restoration go on under it; resume,
 * skip and an input reset clear it. (docs/design.md, "A stopped task is FAILED".)
 */

export type TaskState = "CREATED" | "RESTORING" | "RUNNING" | "SUSPENDED" | "CLOSED" | "UPDATING";

export type TaskRole = "active" | "standby" | "idle";

/** The state an instance shows outside (`GET /tasks`, the summary, metrics, the status page). */
export type ShownState = TaskState | "FAILED";

/**
 * `FAILED` for an active instance whose processing stopped on a failure (an uncaught error, a
 * fencing, an application shutdown) until an operator resumes it, skips its record or resets its
 * input; otherwise its lifecycle state. The one place FAILED is derived.
 */
export function shownState(instance: { readonly role: TaskRole; readonly state: TaskState; readonly failure: string | null }): ShownState {
  return instance.role === "active" && instance.failure !== null ? "FAILED" : instance.state;
}

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
