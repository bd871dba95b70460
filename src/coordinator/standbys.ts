/**
 * Where each task's standby replicas go: `count` placements other than the active's, preferring
 * placements that already hold the task's state (a standby, or an idle instance left behind by a
 * migration — warm, so little to restore), then the least loaded. Pure; the coordinator applies it.
 * Instances are indexed once by task and placement, so placing standbys for T tasks over P
 * placements is O(T · P log P), whatever the number of instances.
 */
import { leastLoaded, type ActivePlacement } from "./assignor";

export interface HeldInstance {
  readonly taskId: string;
  readonly placement: string;
  readonly role: "active" | "standby" | "idle";
}

/** The key of an instance in maps: a task id and a placement (neither holds a NUL). */
export function instanceKey(instance: { readonly taskId: string; readonly placement: string }): string {
  return `${instance.taskId}\u0000${instance.placement}`;
}

export function placeStandbys(
  actives: readonly ActivePlacement[],
  placements: readonly string[],
  held: readonly HeldInstance[],
  count: number,
): ActivePlacement[] {
  const result: ActivePlacement[] = [];
  if (count <= 0) return result;
  const load = new Map(placements.map((p) => [p, 0]));
  for (const a of actives) if (load.has(a.placement)) load.set(a.placement, load.get(a.placement)! + 1);
  const roles = new Map<string, HeldInstance["role"]>();
  for (const h of held) roles.set(instanceKey(h), h.role);
  const order = new Map(placements.map((p, i) => [p, i]));
  for (const { taskId, placement: activeAt } of actives) {
    const candidates = placements.filter((p) => p !== activeAt);
    const warmth = (p: string) => {
      const role = roles.get(instanceKey({ taskId, placement: p }));
      return role === "standby" ? 2 : role ? 1 : 0;
    };
    const chosen = candidates
      .sort((a, b) => warmth(b) - warmth(a) || load.get(a)! - load.get(b)! || order.get(a)! - order.get(b)!)
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
  if (stranded.length === 0) return [];
  // The first standby of each task at a configured placement, in the instances' order.
  const standbyAt = new Map<string, string>();
  for (const i of instances) if (i.role === "standby" && load.has(i.placement) && !standbyAt.has(i.taskId)) standbyAt.set(i.taskId, i.placement);
  return stranded.map(({ taskId }) => {
    const placement = standbyAt.get(taskId) ?? leastLoaded(placements, load);
    load.set(placement, load.get(placement)! + 1);
    return { taskId, placement };
  });
}
