/**
 * The assignor: which placement runs each task's active instance. Sticky (a task stays where it
 * is while its placement exists) and balanced (new or orphaned tasks go to the least loaded
 * placement, ties broken by placement order). Pure: the coordinator stores and applies the result.
 */

export interface ActivePlacement {
  readonly taskId: string;
  readonly placement: string;
}

export function assignActives(taskIds: readonly string[], placements: readonly string[], previous: readonly ActivePlacement[]): ActivePlacement[] {
  if (placements.length === 0) throw new Error("there is no placement to assign tasks to");
  const load = new Map(placements.map((p) => [p, 0]));
  const kept = new Map<string, string>();
  for (const { taskId, placement } of previous) {
    if (taskIds.includes(taskId) && load.has(placement) && !kept.has(taskId)) {
      kept.set(taskId, placement);
      load.set(placement, load.get(placement)! + 1);
    }
  }
  return taskIds.map((taskId) => {
    let placement = kept.get(taskId);
    if (placement === undefined) {
      placement = placements.reduce((best, p) => (load.get(p)! < load.get(best)! ? p : best), placements[0]!);
      load.set(placement, load.get(placement)! + 1);
    }
    return { taskId, placement };
  });
}
