/**
 * Whether a task instance answers a read of one of its stores, and how: the RUNNING active
 * instance with authority; with `allowStale`, a standby or the restoring active from what it holds
 * — only if it has restored some of the store's changelog, since one that restored nothing would
 * call every key absent; the restoring active otherwise says how far it is; anyone else is not
 * the owner.
 */
import type { TopicPartition } from "../log/types";
import type { RestoreProgress } from "./protocol";
import type { TaskMeta } from "./task-storage";
import { topicPartition } from "../names";

export type ReadStanding =
  | { readonly answer: "authoritative" }
  | { readonly answer: "stale"; readonly restored: number }
  | { readonly answer: "restoring" }
  | { readonly answer: "not-owner" };

/** `restoredOf`: how far the instance holds the store's changelog (see `restoredOf` below). */
export function readStanding(meta: TaskMeta | undefined, allowStale: boolean, restoredOf: (meta: TaskMeta) => number | null): ReadStanding {
  if (!meta) return { answer: "not-owner" };
  if (meta.state === "RUNNING" && meta.role === "active") return { answer: "authoritative" };
  if (allowStale) {
    const restored = restoredOf(meta);
    return restored === null ? { answer: "not-owner" } : { answer: "stale", restored };
  }
  return meta.role === "active" ? { answer: "restoring" } : { answer: "not-owner" };
}

/** How far a standby or active instance holds `store`'s changelog; null when it restored none of it (or is idle). */
export function restoredOf(
  store: string,
  meta: TaskMeta,
  changelogs: readonly (TopicPartition & { store: string })[],
  checkpoints: ReadonlyMap<string, number>,
): number | null {
  if (meta.role === "idle") return null;
  const changelog = changelogs.find((c) => c.store === store);
  return changelog ? (checkpoints.get(topicPartition(changelog)) ?? null) : null;
}

/** Not answered with the store's contents. */
export type NoRead = { readonly status: "not-owner" } | { readonly status: "restoring"; readonly progress: RestoreProgress };

/** The answer to a read: `ok` reads the store (with how far it is restored when stale); a restoring active says how far it is (`progress`). */
export async function answerRead<Ok>(
  standing: ReadStanding,
  ok: (stale?: { restored: number }) => Ok,
  progress: () => Promise<RestoreProgress>,
): Promise<Ok | NoRead> {
  if (standing.answer === "authoritative") return ok();
  if (standing.answer === "stale") return ok({ restored: standing.restored });
  if (standing.answer === "not-owner") return { status: "not-owner" };
  return { status: "restoring", progress: await progress() };
}
