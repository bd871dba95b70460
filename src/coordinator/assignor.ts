/**
 * The assignor: which placement runs each task's active instance. Sticky (a task stays where it
 * is while its placement exists) and balanced (new or orphaned tasks go to the least loaded
 * placement, ties broken by placement order). Pure: the coordinator stores and applies the result.
 * O(T · P) for T tasks and P placements: maps and sets, never a scan per task.
 */

export interface ActivePlacement {
  readonly taskId: string;
  readonly placement: string;
}

export function assignActives(taskIds: readonly string[], placements: readonly string[], previous: readonly ActivePlacement[]): ActivePlacement[] {
  if (placements.length === 0) throw new Error("there is no placement to assign tasks to");
  const load = new Map(placements.map((p) => [p, 0]));
  const known = new Set(taskIds);
  const kept = new Map<string, string>();
  for (const { taskId, placement } of previous) {
    if (known.has(taskId) && load.has(placement) && !kept.has(taskId)) {
      kept.set(taskId, placement);
      load.set(placement, load.get(placement)! + 1);
    }
  }
  return taskIds.map((taskId) => {
    let placement = kept.get(taskId);
    if (placement === undefined) {
      placement = leastLoaded(placements, load);
      load.set(placement, load.get(placement)! + 1);
    }
    return { taskId, placement };
  });
}

/** The placement with the smallest load, the first in placement order among equals. */
export function leastLoaded(placements: readonly string[], load: ReadonlyMap<string, number>): string {
  let best = placements[0]!;
  for (const p of placements) if (load.get(p)! < load.get(best)!) best = p;
  return best;
}
