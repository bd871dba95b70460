/**
 * Which listener calls end a registration early, as Kafka Streams makes them: an active
 * instance's restoration cut short (revoked or wiped before the end) is `onRestoreSuspended`; a
 * standby that stops updating is `onUpdateSuspended`, because it was promoted (it now registers
 * as the active instance and restores only the tail) or migrated (revoked from the placement).
 * A wiped standby re-registers as a new incarnation and starts updating again: no call.
 */
import type { TaskRole, TaskState } from "../task/state";
import type { ChangelogWork } from "./registry";

/** Why an instance's registration ends: restored to the end, revoked, or wiped (corrupted). */
export type RegistrationEnd = "finished" | "revoked" | "wiped";

export type Suspension =
  | { readonly listener: "restore"; readonly work: ChangelogWork }
  | { readonly listener: "standby"; readonly work: ChangelogWork; readonly reason: "promoted" | "migrated" };

/** The calls owed when an instance's registration is removed (`removed`: its changelogs). */
export function suspensionsOnEnd(removed: readonly ChangelogWork[], end: RegistrationEnd): Suspension[] {
  if (end === "finished") return [];
  return removed.flatMap((work): Suspension[] => {
    if (work.role === "active") return work.caughtUp ? [] : [{ listener: "restore", work }];
    if (work.role === "standby" && end === "revoked") return [{ listener: "standby", work, reason: "migrated" }];
    return [];
  });
}

/**
 * The calls owed when an instance registers again (`previous`: its changelogs until now) as
 * `next`: a registration of an older incarnation ended with a wipe (its instance may have died
 * before it could say so); a standby registering as active was promoted.
 */
export function suspensionsOnRegister(previous: readonly ChangelogWork[], next: { readonly role: TaskRole; readonly incarnation: number }): Suspension[] {
  const wiped = previous.filter((work) => work.incarnation < next.incarnation);
  const kept = previous.filter((work) => work.incarnation >= next.incarnation);
  const promoted: Suspension[] =
    next.role === "active" ? kept.filter((work) => work.role === "standby").map((work) => ({ listener: "standby", work, reason: "promoted" })) : [];
  return [...suspensionsOnEnd(wiped, "wiped"), ...promoted];
}

/** What an instance's reply to a batch says of the registration it was read for. */
export interface ReplyState {
  readonly incarnation: number;
  readonly epoch: number;
  readonly role: TaskRole;
  readonly state: TaskState;
}

/**
 * Whether a reply says the registration `work` was read for is over, and how it ended: the
 * instance was wiped (a newer incarnation), reassigned (another epoch), runs (restored to the
 * end) or was revoked. The instance may have died before it could unregister: its reply is
 * what keeps the restore worker from serving a registration nobody needs.
 */
export function registrationEnded(work: Pick<ChangelogWork, "incarnation" | "epoch">, reply: ReplyState): RegistrationEnd | undefined {
  if (reply.incarnation > work.incarnation) return "wiped";
  if (reply.epoch !== work.epoch) return "revoked";
  if (reply.state === "RESTORING" || reply.state === "UPDATING") return undefined;
  return reply.state === "RUNNING" ? "finished" : "revoked";
}
