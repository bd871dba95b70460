/**
 * What `GET /metrics` and the status page show, gathered once per request: every task instance
 * the coordinator knows (with its counters and lifecycle history), each placement's restore
 * control, and whether the application is shut down. An instance that cannot answer is listed as down rather than failing the whole view.
 */
import type { InstanceMetrics } from "../../../durable-objects/task-object";
import type { Config } from "../../../src/config";
import type { ApplicationShutdown, InstanceAssignment } from "../../../src/coordinator/coordinator-store";
import type { Host } from "../../../platform/host";
import { coordinator, freshAssignment, taskObject } from "../cluster";

export type InstanceView =
  | ({ readonly up: true } & InstanceMetrics)
  | { readonly up: false; readonly id: string; readonly placement: string; readonly role: InstanceAssignment["role"]; readonly epoch: number };

export interface PlacementView {
  readonly name: string;
  /** False for a placement no longer configured that still holds instances. */
  readonly configured: boolean;
  /** Restoration paused by `POST /admin/restore/pause` (null when its worker did not answer). */
  readonly restorePaused: boolean | null;
  /** Batches still allowed while paused (`resume` with `maxBatches`). */
  readonly restoreBudget: number | null;
}

export interface ClusterSnapshot {
  /** When it was taken (epoch ms). */
  readonly at: number;
  readonly placements: PlacementView[];
  readonly instances: InstanceView[];
  /** Set while an uncaught error's `"shutdown-application"` keeps every task stopped. */
  readonly shutdown: ApplicationShutdown | null;
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

export async function clusterSnapshot(host: Host, config: Config): Promise<ClusterSnapshot> {
  const known = (await freshAssignment(host)).instances;
  const [described, controls, shutdown] = await Promise.all([
    Promise.allSettled(known.map((instance) => taskObject(host, instance).metrics() as Promise<InstanceMetrics>)),
    Promise.allSettled(config.PLACEMENTS.map((p) => host.restoreWorker(p).status())),
    coordinator(host).shutdownState() as Promise<ApplicationShutdown | null>,
  ]);
  const instances: InstanceView[] = described.map((result, i) => {
    if (result.status === "fulfilled") return { up: true, ...result.value };
    const { taskId, placement, role, epoch } = known[i]!;
    return { up: false, id: taskId, placement, role, epoch };
  });
  const extra = [...new Set(known.map((i) => i.placement))].filter((p) => !config.PLACEMENTS.includes(p));
  const placements: PlacementView[] = [
    ...config.PLACEMENTS.map((name, i) => {
      const control = controls[i]!;
      const value = control.status === "fulfilled" ? control.value : undefined;
      return { name, configured: true, restorePaused: value?.paused ?? null, restoreBudget: value?.budget ?? null };
    }),
    ...extra.map((name) => ({ name, configured: false, restorePaused: null, restoreBudget: null })),
  ];
  return { at: Date.now(), placements, instances, shutdown };
}
