/**
 * The API's view of the running application: the coordinator's assignment (cached briefly per
 * isolate — a stale entry only costs a retry, because an instance that is no longer the owner
 * says so) and the task object stubs it names. Reading it changes nothing: the coordinator pushes
 * assignments on its own (its alarm). Only an assignment not made yet (first use, or a task the
 * application gained) is asked for, which makes it.
 */
import { application } from "#application";
import { COORDINATOR_NAME, type InstanceAssignment } from "../../src/coordinator/coordinator-store";
import { instanceName } from "../../src/names";
import type { Env } from "../env";

const CACHE_MS = 2_000;
let cached: { at: number; instances: Promise<InstanceAssignment[]> } | undefined;

export function coordinator(env: Env) {
  return env.COORDINATOR.getByName(COORDINATOR_NAME);
}

/** The assignment, making it on first use. `fresh` bypasses the cache. */
export async function assignments(env: Env, fresh = false): Promise<InstanceAssignment[]> {
  const now = Date.now();
  if (fresh || !cached || now - cached.at > CACHE_MS) {
    const instances = readAssignment(env);
    cached = { at: now, instances };
    instances.catch(() => {
      if (cached?.instances === instances) cached = undefined;
    });
  }
  return cached.instances;
}

/** The stored assignment; made first when some task has no active instance in it yet. */
async function readAssignment(env: Env): Promise<InstanceAssignment[]> {
  const stored = (await coordinator(env).assignments()) as InstanceAssignment[];
  const actives = new Set(stored.filter((i) => i.role === "active").map((i) => i.taskId));
  if (application.taskIds().every((t) => actives.has(t))) return stored;
  return (await coordinator(env).ensureAssigned()) as InstanceAssignment[];
}

export { instanceName };

export function taskObject(env: Env, instance: { taskId: string; placement: string }) {
  return env.TASK_OBJECT.getByName(instanceName(instance));
}

export async function activeInstance(env: Env, taskId: string, fresh = false): Promise<InstanceAssignment | undefined> {
  return (await assignments(env, fresh)).find((i) => i.taskId === taskId && i.role === "active");
}
