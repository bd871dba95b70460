/**
 * The runtime's identities are the runtime's alone. What only the application itself may do is
 * refused with 403 to every client, whatever its token (the all-powerful API_TOKEN included):
 *
 * - write the topics it writes (`Application.writtenTopics`): its internal topics (a record
 *   appended to a changelog from outside would be covered by the next checkpoint although the
 *   store never wrote it, breaking I1; a repartition topic feeds tasks records their own upstream
 *   never produced), its output topics and its dead-letter topics, unless declared open;
 * - append as one of its producers: the `edge-producer` record header carries a task's producer id,
 *   epoch and sequence, and the log fences by them, so a forged epoch would fence the task for good;
 * - commit its consumer group's offsets, which record the tasks' input progress and are fenced by
 *   the tasks' epochs.
 *
 * The one caller that may is the runtime itself, from outside: another Edge Streams deployment
 * whose log is this one's `/kafka` (LOG_BACKEND=upstash), authenticated with the `log` role
 * (LOG_TOKEN). Its tasks send their producer identities and epochs, which this log fences as its
 * own. Reading stays allowed to anyone who may read.
 */
import type { Application } from "../../src/application";
import { epochFromInstanceId } from "../../src/kafka-rest/commit-epoch";
import { EDGE_PRODUCER_HEADER } from "../../src/kafka-rest/producer-header";
import type { Role } from "./credentials";
import { ApiError } from "./http-error";

const NO_ROLES: ReadonlySet<Role> = new Set();

/** The runtime's own role: the only one that may act as the application. */
export function actsAsRuntime(roles: ReadonlySet<Role>): boolean {
  return roles.has("log");
}

/** Throws 403 when `topic` is one the application writes and the caller is not the runtime. */
export function refuseOutsideWrite(application: Application, topic: string, roles: ReadonlySet<Role> = NO_ROLES): void {
  if (actsAsRuntime(roles) || !application.writtenTopics.has(topic)) return;
  const app = application.applicationId;
  if (application.internalTopics.has(topic)) {
    throw new ApiError(403, "forbidden", `topic ${JSON.stringify(topic)} is internal to application ${app}: only its tasks write it (reading is allowed)`);
  }
  throw new ApiError(
    403,
    "forbidden",
    `topic ${JSON.stringify(topic)} is written by application ${app} (an output or dead-letter topic): only its tasks write it; declare it in openTopics to let clients write it too (reading is allowed)`,
  );
}

/** What the ingest route calls: every client (ingest is never the runtime). */
export function refuseInternalTopicWrite(application: Application, topic: string): void {
  refuseOutsideWrite(application, topic);
}

/**
 * Throws 403 when a record carries the runtime's producer header and the caller is not the
 * runtime. `records` are as the request gave them: anything with `headers: [{key, value}]`.
 */
export function refuseRuntimeHeaders(records: readonly unknown[], roles: ReadonlySet<Role> = NO_ROLES): void {
  if (actsAsRuntime(roles)) return;
  const index = records.findIndex((record) => {
    const headers = typeof record === "object" && record !== null ? (record as { headers?: unknown }).headers : undefined;
    return Array.isArray(headers) && headers.some((h) => typeof h === "object" && h !== null && (h as { key?: unknown }).key === EDGE_PRODUCER_HEADER);
  });
  if (index < 0) return;
  throw new ApiError(
    403,
    "forbidden",
    `record ${index} carries the ${EDGE_PRODUCER_HEADER} header, the application's own producer identity: only its runtime sends it (for an idempotent producer, send an Idempotency-Key header)`,
  );
}

/**
 * Throws 403 when `group` is the application's own consumer group, unless the commit comes from
 * the runtime: a task instance whose log is this deployment's `/kafka` commits as
 * `edge-epoch-<epoch>` (src/kafka-rest/commit-epoch.ts), and the log fences it by that epoch like
 * any of the group's commits (I3). Anyone else is refused whatever instance id it names.
 */
export function refuseApplicationGroupCommit(application: Application, group: string, instance?: string, roles: ReadonlySet<Role> = NO_ROLES): void {
  if (group !== application.groupId) return;
  if (actsAsRuntime(roles) && instance !== undefined && epochFromInstanceId(instance) !== undefined) return;
  throw new ApiError(
    403,
    "forbidden",
    `the committed offsets of group ${JSON.stringify(group)} belong to application ${application.applicationId}'s tasks: commit in another group`,
  );
}
