/**
 * The API's view of the running application, kept off the coordinator's path. The versioned
 * assignment (every instance and the version: the last epoch the coordinator handed out) is
 * cached per host, i.e. per isolate, with no expiry, and read again only when an instance it
 * names answers "not the owner" — as a Kafka client refreshes its metadata on
 * NOT_LEADER_OR_FOLLOWER. Refreshes are coalesced, and one made by a concurrent request since
 * counts. When the coordinator cannot answer, a query asks the task's instance at every
 * configured placement instead: the active one answers (src/task: only the active RUNNING
 * instance answers with authority; every other says "not-owner"). So a coordinator outage stops
 * rebalancing, never queries of running tasks.
 */
import type { InstanceAssignment } from "../../src/coordinator/coordinator-store";
import type { Host } from "../../platform/host";

export function coordinator(host: Host) {
  return host.coordinator();
}

export function taskObject(host: Host, instance: { taskId: string; placement: string }) {
  return host.taskObject(instance);
}

/** The assignment as cached: its version, its instances, and look-ups by task. */
export class AssignmentView {
  private readonly byTask = new Map<string, InstanceAssignment[]>();

  constructor(
    /** The coordinator's storage the assignment comes from (versions count within one). */
    readonly generation: string,
    readonly version: number,
    readonly instances: readonly InstanceAssignment[],
  ) {
    for (const i of instances) {
      const list = this.byTask.get(i.taskId);
      if (list) list.push(i);
      else this.byTask.set(i.taskId, [i]);
    }
  }

  ofTask(taskId: string): readonly InstanceAssignment[] {
    return this.byTask.get(taskId) ?? [];
  }

  active(taskId: string): InstanceAssignment | undefined {
    return this.ofTask(taskId).find((i) => i.role === "active");
  }
}

interface CacheEntry {
  view?: AssignmentView;
  loading?: Promise<AssignmentView>;
}

let cache = new WeakMap<Host, CacheEntry>();

function entry(host: Host): CacheEntry {
  const found = cache.get(host);
  if (found) return found;
  const made: CacheEntry = {};
  cache.set(host, made);
  return made;
}

/** Reads the assignment from the coordinator (which makes it on first use), one read at a time per host. */
function load(host: Host): Promise<AssignmentView> {
  const e = entry(host);
  if (e.loading) return e.loading;
  const loading = (async () => {
    const snapshot = await host.coordinator().snapshot();
    const view = new AssignmentView(snapshot.generation, snapshot.version, snapshot.instances);
    // A slower read of an older version never replaces a newer one.
    if (!e.view || e.view.generation !== view.generation || e.view.version <= view.version) e.view = view;
    return e.view;
  })();
  e.loading = loading;
  const clear = () => {
    if (e.loading === loading) e.loading = undefined;
  };
  loading.then(clear, clear);
  return loading;
}

/** The cached assignment; read once from the coordinator on first use. */
export async function cachedAssignment(host: Host): Promise<AssignmentView> {
  return entry(host).view ?? load(host);
}

/**
 * The assignment after an instance named by `seen` said it is not the owner: the cached one if
 * another was read meanwhile, else read again.
 */
async function refreshAssignment(host: Host, seen: AssignmentView): Promise<AssignmentView> {
  const view = entry(host).view;
  if (view && view !== seen) return view;
  return load(host);
}

/** The assignment read now, not joined with a read that began earlier (admin routes, which act on it). */
async function freshAssignment(host: Host): Promise<AssignmentView> {
  await entry(host).loading?.catch(() => undefined);
  return load(host);
}

/** The cached active instance of a task, read again from the coordinator when `fresh`. */
export async function activeInstance(host: Host, taskId: string, fresh = false): Promise<InstanceAssignment | undefined> {
  return (fresh ? await freshAssignment(host) : await cachedAssignment(host)).active(taskId);
}

type Answer = { readonly status: string };
type Stub = ReturnType<Host["taskObject"]>;

/**
 * Asks the active instance of `taskId`: the one the cached assignment names; when it says it is
 * not the owner, the one a refreshed assignment names; when the coordinator cannot answer, the
 * task's instance at each configured placement (in parallel; the one that does not answer
 * "not-owner" is the active one). Undefined when no instance answers as the owner (a move under
 * way: retry shortly). Errors of the instance asked travel on.
 */
export async function askActive<A extends Answer>(host: Host, taskId: string, ask: (stub: Stub) => Promise<A>): Promise<A | undefined> {
  let view: AssignmentView | undefined;
  try {
    view = await cachedAssignment(host);
  } catch {
    return askEveryPlacement(host, taskId, ask);
  }
  const asked = view.active(taskId);
  if (asked) {
    const answer = await ask(taskObject(host, asked));
    if (answer.status !== "not-owner") return answer;
  }
  let fresh: AssignmentView;
  try {
    fresh = await refreshAssignment(host, view);
  } catch {
    return askEveryPlacement(host, taskId, ask);
  }
  const active = fresh.active(taskId);
  // The same instance again is asked again only if it has taken its assignment since.
  const same = asked !== undefined && active?.placement === asked.placement && active.epoch === asked.epoch;
  if (!active || (same && (asked.acknowledged || !active.acknowledged))) return undefined;
  const answer = await ask(taskObject(host, active));
  return answer.status === "not-owner" ? undefined : answer;
}

/** The coordinator cannot say who owns the task: every configured placement's instance is asked. */
async function askEveryPlacement<A extends Answer>(host: Host, taskId: string, ask: (stub: Stub) => Promise<A>): Promise<A | undefined> {
  const placements = host.config.PLACEMENTS;
  const settled = await Promise.allSettled(placements.map((placement) => ask(taskObject(host, { taskId, placement }))));
  const answers = settled.flatMap((s) => (s.status === "fulfilled" && s.value.status !== "not-owner" ? [s.value] : []));
  if (answers.length > 0) return answers[0];
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return undefined;
}

/**
 * The instances of `taskId` that may hold its state (its standbys and its active), by the cached
 * assignment; every configured placement's when the coordinator cannot answer.
 */
export async function holdersOf(host: Host, taskId: string): Promise<{ taskId: string; placement: string }[]> {
  try {
    const view = await cachedAssignment(host);
    return view.ofTask(taskId).filter((i) => i.role === "standby" || i.role === "active");
  } catch {
    return host.config.PLACEMENTS.map((placement) => ({ taskId, placement }));
  }
}

/** Forgets every cached assignment, as a new isolate starts without one (tests). */
export function forgetAssignments(): void {
  cache = new WeakMap();
}
