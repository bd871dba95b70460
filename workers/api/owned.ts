/**
 * What only the application itself may write, refused with 403 to every client: its internal
 * topics (a record appended to a changelog from outside would be covered by the next checkpoint
 * although the store never wrote it, breaking I1; a repartition topic feeds tasks records their
 * own upstream never produced) and its consumer group's committed offsets, which record the
 * tasks' input progress. Reading them stays allowed.
 */
import { application } from "#application";
import { ApiError } from "./http-error";

/** Throws 403 when `topic` is one of the application's changelog or repartition topics. */
export function refuseInternalTopicWrite(topic: string): void {
  if (!application.internalTopics.has(topic)) return;
  throw new ApiError(403, "forbidden", `topic ${JSON.stringify(topic)} is internal to application ${application.applicationId}: only its tasks write it (reading is allowed)`);
}

/** Throws 403 when `group` is the application's own consumer group. */
export function refuseApplicationGroupCommit(group: string): void {
  if (group !== application.groupId) return;
  throw new ApiError(403, "forbidden", `the committed offsets of group ${JSON.stringify(group)} belong to application ${application.applicationId}'s tasks: commit in another group`);
}
