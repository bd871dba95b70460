/**
 * Durable identities, built and parsed in this one place: a task instance's object is
 * `<task>@<placement>`, a placement's restore worker `restore@<placement>`, a log partition
 * `<topic>/<partition>`, the application's coordinator `coordinator`, a Kafka REST consumer group
 * `group:<id>` (and its directory `directory`). If two copies of a name drifted, state would split
 * between two objects.
 */

/** The task object of one instance of a task at a placement. */
export function instanceName(instance: { readonly taskId: string; readonly placement: string }): string {
  return `${instance.taskId}@${instance.placement}`;
}

const RESTORE_PREFIX = "restore@";

/** The restore worker of a placement. */
export function restoreWorkerName(placement: string): string {
  return `${RESTORE_PREFIX}${placement}`;
}

/** Whether an object name is a restore worker's (log partitions wake both task objects and restore workers). */
export function isRestoreWorkerName(name: string): boolean {
  return name.startsWith(RESTORE_PREFIX);
}

/** The object of one partition of the embedded log: `<topic>/<partition>` (a `/` never occurs in a topic name). */
export function partitionName(tp: { readonly topic: string; readonly partition: number }): string {
  return `${tp.topic}/${tp.partition}`;
}

/** The coordinator of the application (one per Worker, so one name). */
export const COORDINATOR_NAME = "coordinator";

/** The object that runs a consumer group of the Kafka REST endpoint (a prefix keeps group names apart from the directory's). */
export function groupObjectName(group: string): string {
  return `group:${group}`;
}

/** The object that lists the consumer groups (Durable Objects cannot be enumerated). */
export const GROUP_DIRECTORY_NAME = "directory";
