/**
 * Durable identities, built in one place: a task instance's object is `<task>@<placement>`, a
 * placement's restore worker `restore@<placement>`. If two copies of a name drifted, state would
 * split between two objects.
 */

/** The task object of one instance of a task at a placement. */
export function instanceName(instance: { readonly taskId: string; readonly placement: string }): string {
  return `${instance.taskId}@${instance.placement}`;
}

/** The restore worker of a placement. */
export function restoreWorkerName(placement: string): string {
  return `restore@${placement}`;
}
