/**
 * Where each task's standby replicas go: `count` placements other than the active's, preferring
 * placements that already hold the task's state (a standby, or an idle instance left behind by a
 * migration — warm, so little to restore), then the least loaded. Pure; the coordinator applies it.
 */
import type { ActivePlacement } from "./assignor";

export interface HeldInstance {
  readonly taskId: string;
  readonly placement: string;
  readonly role: "active" | "standby" | "idle";
}

export function placeStandbys(
  actives: readonly ActivePlacement[],
  placements: readonly string[],
  held: readonly HeldInstance[],
  count: number,
): ActivePlacement[] {
  const load = new Map(placements.map((p) => [p, 0]));
  for (const a of actives) if (load.has(a.placement)) load.set(a.placement, load.get(a.placement)! + 1);
  const result: ActivePlacement[] = [];
  for (const { taskId, placement: activeAt } of actives) {
    const candidates = placements.filter((p) => p !== activeAt);
    const warmth = (p: string) => {
      const instance = held.find((h) => h.taskId === taskId && h.placement === p);
      return instance?.role === "standby" ? 2 : instance ? 1 : 0;
    };
    const chosen = [...candidates]
      .sort((a, b) => warmth(b) - warmth(a) || load.get(a)! - load.get(b)! || placements.indexOf(a) - placements.indexOf(b))
      .slice(0, Math.min(count, candidates.length));
    for (const placement of chosen) {
      load.set(placement, load.get(placement)! + 1);
      result.push({ taskId, placement });
    }
  }
  return result;
}

/**
 * Where the active instances on placements no longer configured move (Kafka's warm-up replicas):
 * to a standby the task already has at a configured placement, else to the least loaded one
 * (ties by placement order). A warm-up standby stands there until it caught up, and it must stay
 * a wanted standby meanwhile, whatever NUM_STANDBYS says, or it would flap between idle and standby.
 */
export function warmUpTargets(instances: readonly HeldInstance[], placements: readonly string[]): ActivePlacement[] {
  const load = new Map(placements.map((p) => [p, 0]));
  for (const i of instances) if (i.role === "active" && load.has(i.placement)) load.set(i.placement, load.get(i.placement)! + 1);
  const stranded = instances
    .filter((i) => i.role === "active" && !load.has(i.placement))
    .sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
  return stranded.map(({ taskId }) => {
    const standby = instances.find((i) => i.taskId === taskId && i.role === "standby" && load.has(i.placement));
    const placement = standby?.placement ?? placements.reduce((best, p) => (load.get(p)! < load.get(best)! ? p : best), placements[0]!);
    load.set(placement, load.get(placement)! + 1);
    return { taskId, placement };
  });
}
