/**
 * Finding the instance that owns a task, off the coordinator's path: for the API's reads
 * (workers/api/cluster.ts) and for a subscription hub's fresh snapshot after a resync
 * (durable-objects/subscription-hub.ts, docs/subscriptions.md). The versioned assignment (every
 * instance and the version: the last epoch the coordinator handed out) is cached per cluster
 * (`ClusterPort.key`: one per host, i.e. per isolate) with no expiry, and read again only when an
 * instance it names answers "not the owner" — as a Kafka client refreshes its metadata on
 * NOT_LEADER_OR_FOLLOWER. Refreshes are coalesced, and one made by a concurrent request since
 * counts. When the coordinator cannot answer, the task's instance at every configured placement is
 * asked instead: the active one answers (src/task: only the active RUNNING instance answers with
 * authority; every other says "not-owner"). So a coordinator outage stops rebalancing, never
 * queries of running tasks. Platform-free: the caller gives the coordinator and the task objects.
 */
import type { InstanceAssignment } from "./coordinator-store";

/** The assignment as the coordinator answers it (durable-objects/calls.ts `AssignmentSnapshot`). */
export interface AssignmentRead {
  /** Names the coordinator's storage: a new one (its storage deleted) starts versions over. */
  readonly generation: string;
  readonly version: number;
  readonly instances: readonly InstanceAssignment[];
}

/** How a caller reaches the cluster: the coordinator's assignment and a task instance's object. */
export interface ClusterPort<Stub> {
  /** What the cached assignment is kept per (the host: one per application and environment). */
  readonly key: object;
  /** Every configured placement (asked in turn when the coordinator cannot answer). */
  readonly placements: readonly string[];
  assignment(): Promise<AssignmentRead>;
  instance(instance: { readonly taskId: string; readonly placement: string }): Stub;
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

let cache = new WeakMap<object, CacheEntry>();

function entry(port: ClusterPort<unknown>): CacheEntry {
  const found = cache.get(port.key);
  if (found) return found;
  const made: CacheEntry = {};
  cache.set(port.key, made);
  return made;
}

/** Reads the assignment from the coordinator (which makes it on first use), one read at a time per cluster. */
function load(port: ClusterPort<unknown>): Promise<AssignmentView> {
  const e = entry(port);
  if (e.loading) return e.loading;
  const loading = (async () => {
    const snapshot = await port.assignment();
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
export async function cachedAssignment(port: ClusterPort<unknown>): Promise<AssignmentView> {
  return entry(port).view ?? load(port);
}

/**
 * The assignment after an instance named by `seen` said it is not the owner: the cached one if
 * another was read meanwhile, else read again.
 */
async function refreshAssignment(port: ClusterPort<unknown>, seen: AssignmentView): Promise<AssignmentView> {
  const view = entry(port).view;
  if (view && view !== seen) return view;
  return load(port);
}

/** The assignment read now, not joined with a read that began earlier (admin routes, which act on it). */
export async function freshAssignment(port: ClusterPort<unknown>): Promise<AssignmentView> {
  await entry(port).loading?.catch(() => undefined);
  return load(port);
}

type Answer = { readonly status: string };

/**
 * Asks the active instance of `taskId`: the one the cached assignment names; when it says it is
 * not the owner, the one a refreshed assignment names; when the coordinator cannot answer, the
 * task's instance at each configured placement (in parallel; the one that does not answer
 * "not-owner" is the active one). Undefined when no instance answers as the owner (a move under
 * way: retry shortly). Errors of the instance asked travel on.
 */
export async function askActive<S, A extends Answer>(port: ClusterPort<S>, taskId: string, ask: (stub: S) => Promise<A>): Promise<A | undefined> {
  let view: AssignmentView | undefined;
  try {
    view = await cachedAssignment(port);
  } catch {
    return askEveryPlacement(port, taskId, ask);
  }
  const asked = view.active(taskId);
  if (asked) {
    const answer = await ask(port.instance(asked));
    if (answer.status !== "not-owner") return answer;
  }
  let fresh: AssignmentView;
  try {
    fresh = await refreshAssignment(port, view);
  } catch {
    return askEveryPlacement(port, taskId, ask);
  }
  const active = fresh.active(taskId);
  // The same instance again is asked again only if it has taken its assignment since.
  const same = asked !== undefined && active?.placement === asked.placement && active.epoch === asked.epoch;
  if (!active || (same && (asked.acknowledged || !active.acknowledged))) return undefined;
  const answer = await ask(port.instance(active));
  return answer.status === "not-owner" ? undefined : answer;
}

/** The coordinator cannot say who owns the task: every configured placement's instance is asked. */
async function askEveryPlacement<S, A extends Answer>(port: ClusterPort<S>, taskId: string, ask: (stub: S) => Promise<A>): Promise<A | undefined> {
  const settled = await Promise.allSettled(port.placements.map((placement) => ask(port.instance({ taskId, placement }))));
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
export async function holdersOf(port: ClusterPort<unknown>, taskId: string): Promise<{ taskId: string; placement: string }[]> {
  try {
    const view = await cachedAssignment(port);
    return view.ofTask(taskId).filter((i) => i.role === "standby" || i.role === "active");
  } catch {
    return port.placements.map((placement) => ({ taskId, placement }));
  }
}

/** Forgets every cached assignment, as a new isolate starts without one (tests). */
export function forgetAssignments(): void {
  cache = new WeakMap();
}
