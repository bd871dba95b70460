/**
 * What only the application itself may write, refused with 403 to every client: its internal
 * topics (a record appended to a changelog from outside would be covered by the next checkpoint
 * although the store never wrote it, breaking I1; a repartition topic feeds tasks records their
 * own upstream never produced) and its consumer group's committed offsets, which record the
 * tasks' input progress. Reading them stays allowed.
 */
import type { Application } from "../../src/application";
import { epochFromInstanceId } from "../../src/kafka-rest/commit-epoch";
import { ApiError } from "./http-error";

/**
 * Throws 403 when `topic` is one of the application's changelog or repartition topics, unless
 * the write comes from one of its task instances: a deployment whose log is this one's `/kafka`
 * sends its tasks' batches with their idempotent producer (`producerId`, `<app>-<task>`, in the
 * `edge-producer` header), which the log fences by epoch like any of theirs.
 */
export function refuseInternalTopicWrite(application: Application, topic: string, producerId?: string): void {
  if (!application.internalTopics.has(topic)) return;
  if (producerId !== undefined && producerId.startsWith(`${application.applicationId}-`)) return;
  throw new ApiError(
    403,
    "forbidden",
    `topic ${JSON.stringify(topic)} is internal to application ${application.applicationId}: only its tasks write it (reading is allowed)`,
  );
}

/**
 * Throws 403 when `group` is the application's own consumer group, unless the commit comes from
 * a task instance: one whose log is this deployment's `/kafka` commits as `edge-epoch-<epoch>`
 * (src/kafka-rest/commit-epoch.ts), and the log fences it by that epoch like any of the group's
 * commits (I3).
 */
export function refuseApplicationGroupCommit(application: Application, group: string, instance?: string): void {
  if (group !== application.groupId) return;
  if (instance !== undefined && epochFromInstanceId(instance) !== undefined) return;
  throw new ApiError(
    403,
    "forbidden",
    `the committed offsets of group ${JSON.stringify(group)} belong to application ${application.applicationId}'s tasks: commit in another group`,
  );
}
