/**
 * The push plan: in which order the coordinator tells instances their unacknowledged assignments,
 * and what each is told. Pure, so that the order rule is tested without workerd
 * (test/unit/push-plan.test.ts).
 *
 * The rule (I3, and nothing doubled by two actives): revocations and standby assignments go
 * first; a task's new active only once every other instance of that task has acknowledged, so
 * that the previous active has flushed, committed and stopped before the next one starts. One
 * round pushes the first wave, records the acknowledgements, then asks for the second wave of the
 * assignment as it then stands. Within each wave the `focus` task comes first (the task an
 * operator is waiting on), and a round tells at most `limit` instances in all.
 */
import type { ApplicationShutdown, InstanceAssignment } from "./coordinator-store";
import { APPLICATION_SHUT_DOWN, type Assignment } from "../task/protocol";

export interface PushLimits {
  /** Instances told in this wave at most. */
  readonly limit: number;
  /** A task whose instances go before the others'. */
  readonly focus?: string;
}

/** The first wave: unacknowledged revocations (idle) and standby assignments, `focus`'s first. */
export function revocationsAndStandbys<I extends InstanceAssignment>(assignment: readonly I[], limits: PushLimits): I[] {
  return unacknowledged(assignment, limits.focus)
    .filter((i) => i.role !== "active")
    .slice(0, Math.max(0, limits.limit));
}

/**
 * The second wave: unacknowledged actives of tasks whose every other instance has acknowledged
 * its assignment (in `assignment` as it stands after the first wave), `focus`'s first.
 */
export function readyActives<I extends InstanceAssignment>(assignment: readonly I[], limits: PushLimits): I[] {
  const waiting = new Set(assignment.filter((i) => !i.acknowledged && i.role !== "active").map((i) => i.taskId));
  return unacknowledged(assignment, limits.focus)
    .filter((i) => i.role === "active" && !waiting.has(i.taskId))
    .slice(0, Math.max(0, limits.limit));
}

function unacknowledged<I extends InstanceAssignment>(assignment: readonly I[], focus: string | undefined): I[] {
  const pending = assignment.filter((i) => !i.acknowledged);
  if (focus === undefined) return pending;
  return [...pending.filter((i) => i.taskId === focus), ...pending.filter((i) => i.taskId !== focus)];
}

/** What the application's state adds to an active's assignment. */
export interface ApplicationState {
  /** The application is shut down: actives start stopped. */
  readonly shutdown: ApplicationShutdown | undefined;
  /** The shutdown was just lifted: actives not yet told so are told to resume. */
  readonly resuming: boolean;
}

/**
 * What an instance is told: its assignment, halted while the application is shut down, and for an
 * active whose shutdown was just lifted (and that has not acknowledged since), to resume.
 */
export function assignmentOf(instance: InstanceAssignment, { shutdown, resuming }: ApplicationState): Assignment {
  const { taskId, placement, role, epoch } = instance;
  if (role !== "active") return { taskId, placement, role, epoch };
  if (shutdown) return { taskId, placement, role, epoch, halted: haltReason(shutdown) };
  return resuming && !instance.acknowledged ? { taskId, placement, role, epoch, resume: true } : { taskId, placement, role, epoch };
}

/** Why an active is stopped while the application is shut down. */
export function haltReason(shutdown: ApplicationShutdown): string {
  return `${APPLICATION_SHUT_DOWN}: task ${shutdown.taskId} at ${shutdown.placement} failed: ${shutdown.reason}`;
}
