/**
 * Which listener calls end a registration early, as Kafka Streams makes them: an active
 * instance's restoration cut short (revoked or wiped before the end) is `onRestoreSuspended`; a
 * standby that stops updating is `onUpdateSuspended`, because it was promoted (it now registers
 * as the active instance and restores only the tail) or migrated (revoked from the placement).
 * A wiped standby re-registers as a new incarnation and starts updating again: no call.
 */
import type { TaskRole } from "../task/state";
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

/** The calls owed when an instance registers again (`previous`: its changelogs until now) in `role`. */
export function suspensionsOnRegister(previous: readonly ChangelogWork[], role: TaskRole): Suspension[] {
  if (role !== "active") return [];
  return previous.filter((work) => work.role === "standby").map((work) => ({ listener: "standby", work, reason: "promoted" }));
}
