/**
 * `?stale=true` reads: while a task's active instance restores, the answer may come from an
 * instance holding part of the store's changelog — a standby, or the restoring active itself
 * once it restored some of it — marked stale. An instance that restored nothing says so (it
 * would call every key absent); when none can answer, the route answers 503 with the task's
 * restore progress.
 */
import type { TaskObject } from "../../durable-objects/task-object";
import type { Host } from "../../platform/host";
import { holdersOf, taskObject } from "./cluster";

type Answer = { readonly status: string; readonly stale?: boolean; readonly restored?: number };
type Ok<A> = Extract<A, { status: "ok" }>;

/**
 * Asks every standby and the active instance of `taskId` (in parallel; by the cached assignment,
 * or every placement's instance when the coordinator cannot answer) and takes the best answer:
 * the active's own if it runs by now, else the one that restored furthest. Undefined when none
 * can answer; an instance that cannot be reached does not stop the others from answering.
 */
export async function staleAnswer<A extends Answer>(
  host: Host,
  taskId: string,
  ask: (stub: DurableObjectStub<TaskObject>) => Promise<A>,
): Promise<Ok<A> | undefined> {
  const instances = await holdersOf(host, taskId);
  const settled = await Promise.allSettled(instances.map((instance) => ask(taskObject(host, instance))));
  const answers = settled.flatMap((s) => (s.status === "fulfilled" && s.value.status === "ok" ? [s.value as Ok<A>] : []));
  const current = answers.find((a) => !a.stale);
  if (current) return current;
  return answers.reduce<Ok<A> | undefined>((best, a) => (best === undefined || (a.restored ?? 0) > (best.restored ?? 0) ? a : best), undefined);
}
