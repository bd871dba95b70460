/**
 * The API's view of the running application: the coordinator's assignment (cached briefly per
 * host — a stale entry only costs a retry, because an instance that is no longer the owner says
 * so) and the task object stubs it names. Reading it changes nothing: the coordinator pushes
 * assignments on its own (its alarm). Only an assignment not made yet (first use, or a task the
 * application gained) is asked for, which makes it.
 */
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import type { Host } from "../../platform/host";

const CACHE_MS = 2_000;
const cache = new WeakMap<Host, { at: number; instances: Promise<InstanceAssignment[]> }>();

export function coordinator(host: Host) {
  return host.coordinator();
}

/** The assignment, making it on first use. `fresh` bypasses the cache. */
export async function assignments(host: Host, fresh = false): Promise<InstanceAssignment[]> {
  const now = Date.now();
  const cached = cache.get(host);
  if (!fresh && cached && now - cached.at <= CACHE_MS) return cached.instances;
  const instances = readAssignment(host);
  cache.set(host, { at: now, instances });
  instances.catch(() => {
    if (cache.get(host)?.instances === instances) cache.delete(host);
  });
  return instances;
}

/** The stored assignment; made first when some task has no active instance in it yet. */
async function readAssignment(host: Host): Promise<InstanceAssignment[]> {
  const stored = await host.coordinator().assignments();
  const actives = new Set(stored.filter((i) => i.role === "active").map((i) => i.taskId));
  if (host.application.taskIds().every((t) => actives.has(t))) return stored;
  return host.coordinator().ensureAssigned();
}

export function taskObject(host: Host, instance: { taskId: string; placement: string }) {
  return host.taskObject(instance);
}

export async function activeInstance(host: Host, taskId: string, fresh = false): Promise<InstanceAssignment | undefined> {
  return (await assignments(host, fresh)).find((i) => i.taskId === taskId && i.role === "active");
}
