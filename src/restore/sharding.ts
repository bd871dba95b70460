/**
 * Restore workers are sharded: each placement has `shards` of them, and a task's instances at a
 * placement use the shard its id hashes to (FNV-1a, 32 bits), so restoration and standby updates
 * spread over several objects as the application grows. `RESTORE_SHARDS` fixes the count; `auto`
 * (the default) takes one shard per AUTO_TASKS_PER_SHARD tasks, 1 to AUTO_MAX_SHARDS. Pure.
 */

export const AUTO_TASKS_PER_SHARD = 128;
export const AUTO_MAX_SHARDS = 32;
/** The most shards `RESTORE_SHARDS` may ask for. */
export const MAX_RESTORE_SHARDS = 256;

export type RestoreShardsSetting = number | "auto";

/** How many restore workers each placement has, for an application of `tasks` tasks. */
export function restoreShardCount(setting: RestoreShardsSetting, tasks: number): number {
  if (setting !== "auto") return setting;
  return Math.min(AUTO_MAX_SHARDS, Math.max(1, Math.ceil(tasks / AUTO_TASKS_PER_SHARD)));
}

/** The shard (0 … shards − 1) serving a task's instances. */
export function restoreShardOf(taskId: string, shards: number): number {
  if (shards <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) {
    hash ^= taskId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/**
 * The instances registered with shard `shard` whose task hashes to another shard of `shards` now
 * (`RESTORE_SHARDS` changed): their registrations are dropped there, and they register with their
 * new shard.
 */
export function instancesOfOtherShards(
  registrations: Iterable<{ readonly instance: string; readonly taskId: string }>,
  shard: number,
  shards: number,
): Set<string> {
  const foreign = new Set<string>();
  for (const r of registrations) if (restoreShardOf(r.taskId, shards) !== shard) foreign.add(r.instance);
  return foreign;
}
