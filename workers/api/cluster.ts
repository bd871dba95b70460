/**
 * The API's view of the running application, kept off the coordinator's path: the cached
 * assignment and the asking of a task's active instance (src/coordinator/assignment-view.ts, which
 * a subscription hub uses too), reached through this host's coordinator and task objects.
 */
import {
  type AssignmentView,
  askActive as askActiveOf,
  cachedAssignment as cachedAssignmentOf,
  type ClusterPort,
  freshAssignment,
  holdersOf as holdersOfPort,
} from "../../src/coordinator/assignment-view";
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import type { Host } from "../../platform/host";

export { AssignmentView, forgetAssignments } from "../../src/coordinator/assignment-view";

export function coordinator(host: Host) {
  return host.coordinator();
}

export function taskObject(host: Host, instance: { taskId: string; placement: string }) {
  return host.taskObject(instance);
}

type Stub = ReturnType<Host["taskObject"]>;

const ports = new WeakMap<Host, ClusterPort<Stub>>();

/** The cluster as this host reaches it (one per host: the assignment is cached per host, i.e. per isolate). */
function cluster(host: Host): ClusterPort<Stub> {
  const found = ports.get(host);
  if (found) return found;
  const port: ClusterPort<Stub> = {
    key: host,
    placements: host.config.PLACEMENTS,
    assignment: () => host.coordinator().snapshot(),
    instance: (instance) => host.taskObject(instance),
  };
  ports.set(host, port);
  return port;
}

/** The cached assignment; read once from the coordinator on first use. */
export function cachedAssignment(host: Host): Promise<AssignmentView> {
  return cachedAssignmentOf(cluster(host));
}

/** The cached active instance of a task, read again from the coordinator when `fresh`. */
export async function activeInstance(host: Host, taskId: string, fresh = false): Promise<InstanceAssignment | undefined> {
  return (fresh ? await freshAssignment(cluster(host)) : await cachedAssignment(host)).active(taskId);
}

/** Asks the active instance of `taskId` (src/coordinator/assignment-view.ts `askActive`). */
export function askActive<A extends { readonly status: string }>(host: Host, taskId: string, ask: (stub: Stub) => Promise<A>): Promise<A | undefined> {
  return askActiveOf(cluster(host), taskId, ask);
}

/** The instances of `taskId` that may hold its state (its standbys and its active). */
export function holdersOf(host: Host, taskId: string): Promise<{ taskId: string; placement: string }[]> {
  return holdersOfPort(cluster(host), taskId);
}
