/**
 * What `GET /metrics` and the status page show, gathered once per request in a bounded number of
 * calls (../views.ts): a page of the task instances (each with its counters and lifecycle
 * history), the application summary and each placement's restore control from the restore
 * worker shards, and whether the application is shut down. An instance that cannot answer is
 * listed as down rather than failing the whole view.
 */
import type { InstanceMetrics } from "../../../durable-objects/task-object";
import type { ApplicationShutdown, InstanceAssignment } from "../../../src/coordinator/coordinator-store";
import { EMPTY_SUMMARY, type Summary } from "../../../src/summary/summary";
import type { Host } from "../../../platform/host";
import { taskObject } from "../cluster";
import { applicationView, assignmentPage, nextCursor, type PlacementView } from "../views";

export type { PlacementView } from "../views";

export type InstanceView =
  | ({ readonly up: true } & InstanceMetrics)
  | { readonly up: false; readonly id: string; readonly placement: string; readonly role: InstanceAssignment["role"]; readonly epoch: number };

export interface ClusterSnapshot {
  /** When it was taken (epoch ms). */
  readonly at: number;
  /** Empty, as `summary` is, when the snapshot was taken without them (later pages of `/metrics`). */
  readonly placements: PlacementView[];
  /** The instances of this page. */
  readonly instances: InstanceView[];
  /** Set while an uncaught error's `"shutdown-application"` keeps every task stopped. */
  readonly shutdown: ApplicationShutdown | null;
  /** The whole application, summed up (`instances`: every instance of the assignment). */
  readonly summary: Summary & { readonly instances: number };
  /** The cursor of the next page of instances; null on the last page. */
  readonly next: string | null;
  /** Whether this is the first page. */
  readonly first: boolean;
}

/** Changelog records an instance still has to apply to catch up (restoring or standing by). */
export function remainingToRestore(instance: InstanceMetrics): number {
  if (instance.state !== "RESTORING" && instance.state !== "UPDATING") return 0;
  return instance.changelogs.reduce((n, c) => n + Math.max(0, c.end - c.restored), 0);
}

/** Restored so far and the total to reach, summed over the instance's changelogs. */
export function restoreProgress(instance: InstanceMetrics): { restored: number; total: number } {
  return {
    restored: instance.changelogs.reduce((n, c) => n + c.restored, 0),
    total: instance.changelogs.reduce((n, c) => n + c.end, 0),
  };
}

/**
 * A page of `limit` instances after `after` (the first page without), with the summary and
 * placements unless `summary` is false (they cost a call per restore worker shard).
 */
export async function clusterSnapshot(
  host: Host,
  page: { after?: { taskId: string; placement: string }; limit: number; first?: boolean; summary?: boolean },
): Promise<ClusterSnapshot> {
  const assigned = await assignmentPage(host, page.after, page.limit);
  const known = assigned.instances;
  const [described, view] = await Promise.all([
    Promise.allSettled(known.map((instance) => taskObject(host, instance).metrics() as Promise<InstanceMetrics>)),
    page.summary === false
      ? { placements: [], summary: { ...EMPTY_SUMMARY, instances: assigned.total } }
      : applicationView(
          host,
          assigned.total,
          known.map((i) => i.placement),
        ),
  ]);
  const instances: InstanceView[] = described.map((result, i) => {
    if (result.status === "fulfilled") return { up: true, ...result.value };
    const { taskId, placement, role, epoch } = known[i]!;
    return { up: false, id: taskId, placement, role, epoch };
  });
  return {
    at: Date.now(),
    placements: view.placements,
    instances,
    shutdown: assigned.shutdown,
    summary: view.summary,
    next: nextCursor(assigned),
    first: page.first ?? page.after === undefined,
  };
}
