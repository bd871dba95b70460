/**
 * A task instance as `GET /tasks` shows it (docs/http-api.md): role, placement, state, epoch, incarnation,
 * per changelog its checkpoint, restored position and end, and its lag.
 */
import type { Application } from "../application";
import { NotAssigned } from "./not-assigned";
import type { Log } from "../log/types";
import { droppedRecords } from "../streams/runtime/types";

export { droppedRecords };
import type { InputPositions } from "./record-collector";
import { shownState, type ShownState, type TaskRole } from "./state";
import type { TaskCounters } from "./task-metrics";
import type { TaskMeta } from "./task-storage";
import { topicPartition } from "../names";

/**
 * What a description reads of an instance (`StreamTask` has all of it): named here so that the
 * RPC types, which carry descriptions, do not depend on the task itself.
 */
export interface DescribedInstance {
  meta(): TaskMeta | undefined;
  checkpoints(): ReadonlyMap<string, number>;
  replayed(): ReadonlyMap<string, number>;
  positions(): InputPositions;
  /** Per input partition, how far input is processed, committed and its output sent (see `StreamTask.deliveredPositions`). */
  deliveredPositions(): InputPositions;
  lagMs(): number;
  pendingOutboxBatches(): number;
  readonly counters: Pick<TaskCounters, "snapshot">;
}

export interface ChangelogDescription {
  readonly topic: string;
  readonly partition: number;
  /** What the instance's storage holds now; null when none. */
  readonly checkpoint: number | null;
  /** Offset up to which the store reflects the changelog. */
  readonly restored: number;
  /** The changelog's end offset. */
  readonly end: number;
  /** Records applied by the instance's latest restoration (since its last wipe or assignment; kept once it runs). */
  readonly replayed: number;
}

export interface TaskDescription {
  readonly id: string;
  readonly role: TaskRole;
  readonly placement: string;
  /** The lifecycle state, or `FAILED` for an active instance stopped by a failure (state.ts `shownState`). */
  readonly state: ShownState;
  readonly epoch: number;
  readonly incarnation: number;
  readonly changelogs: ChangelogDescription[];
  /**
   * Active: input records not yet processed and committed (input end offsets minus, for a
   * RUNNING instance, the offsets committed to the application's consumer group; for one still
   * restoring, its restored positions), so RUNNING with lag 0 means the stores reflect every
   * record produced before and the group knows it. Standby and idle: changelog records not yet applied.
   */
  readonly lag: number;
  /** Outgoing records committed locally and not yet acknowledged by the log. */
  readonly pendingBatches: number;
  /** How long the oldest input record not yet processed has waited, in milliseconds (active; 0 when none waits). */
  readonly lagMs: number;
  /** Why processing stopped, when it did. */
  readonly failure: string | null;
  /** The failure with the record it stopped at (null fields when no record caused it); null while processing goes on. */
  readonly error: TaskError | null;
  /**
   * Records dropped by committed work since the instance started (Kafka's dropped-records):
   * undecodable records skipped or dead-lettered, records an error handler let go past
   * (processing and production errors handled by going on), invalid records (a null key where
   * one is needed) and records too late for their windows. Kept in memory, like the /metrics counters.
   */
  readonly droppedRecords: number;
}

/** A failure as `GET /tasks` shows it (docs/http-api.md): its message and the record processing stopped at. */
export interface TaskError {
  readonly message: string;
  readonly topic: string | null;
  readonly partition: number | null;
  readonly offset: number | null;
}

/** The error of an instance's meta row: null without a failure. */
export function taskError(meta: Pick<TaskMeta, "failure" | "failedAt">): TaskError | null {
  if (meta.failure === null) return null;
  const at = meta.failedAt;
  return { message: meta.failure, topic: at?.topic ?? null, partition: at?.partition ?? null, offset: at?.offset ?? null };
}

export async function describeTask(task: DescribedInstance, app: Application, log: Log): Promise<TaskDescription> {
  const meta = task.meta();
  if (!meta) throw new NotAssigned();
  const checkpoints = task.checkpoints();
  const replayed = task.replayed();
  // Processed input counts once committed and its output sent (the group hears of it later: RECORD_OWED_MS).
  const positions = meta.state === "RUNNING" ? task.deliveredPositions() : task.positions();
  const changelogTps = app.changelogPartitions(meta.taskId);
  const inputTps = app.inputPartitions(meta.taskId);
  const [changelogEnds, inputEnds] = await Promise.all([
    Promise.all(changelogTps.map(async (tp) => (await log.offsets(tp)).latest)),
    Promise.all(inputTps.map(async (tp) => (await log.offsets(tp)).latest)),
  ]);
  const changelogs = changelogTps.map((tp, i) => {
    const checkpoint = checkpoints.get(topicPartition(tp)) ?? null;
    return {
      topic: tp.topic,
      partition: tp.partition,
      checkpoint,
      restored: checkpoint ?? 0,
      end: changelogEnds[i]!,
      replayed: replayed.get(topicPartition(tp)) ?? 0,
    };
  });
  const lag =
    meta.role === "active"
      ? inputTps.reduce((sum, tp, i) => sum + Math.max(0, inputEnds[i]! - (positions[topicPartition(tp)] ?? 0)), 0)
      : changelogs.reduce((sum, c) => sum + Math.max(0, c.end - c.restored), 0);
  return {
    id: meta.taskId,
    role: meta.role,
    placement: meta.placement,
    state: shownState(meta),
    epoch: meta.epoch,
    incarnation: meta.incarnation,
    changelogs,
    lag,
    lagMs: meta.role === "active" ? task.lagMs() : 0,
    pendingBatches: task.pendingOutboxBatches(),
    failure: meta.failure,
    error: taskError(meta),
    droppedRecords: droppedRecords(task.counters.snapshot().events),
  };
}

/** A description made without the log (it could not be reached): end offsets and lag unknown. */
export interface PartialTaskDescription extends Omit<TaskDescription, "changelogs" | "lag"> {
  readonly changelogs: (Omit<ChangelogDescription, "end"> & { readonly end: null })[];
  readonly lag: null;
}

/**
 * What the instance knows of itself without the log, for answers about something already done
 * (a wipe) that must not look failed because the log cannot say its end offsets right now.
 */
export function describeWithoutLog(task: DescribedInstance, app: Application): PartialTaskDescription {
  const meta = task.meta();
  if (!meta) throw new NotAssigned();
  const checkpoints = task.checkpoints();
  const replayed = task.replayed();
  const changelogs = app.changelogPartitions(meta.taskId).map((tp) => {
    const checkpoint = checkpoints.get(topicPartition(tp)) ?? null;
    return { topic: tp.topic, partition: tp.partition, checkpoint, restored: checkpoint ?? 0, end: null, replayed: replayed.get(topicPartition(tp)) ?? 0 };
  });
  const { taskId: id, role, placement, epoch, incarnation, failure } = meta;
  return {
    id,
    role,
    placement,
    state: shownState(meta),
    epoch,
    incarnation,
    changelogs,
    lag: null,
    lagMs: role === "active" ? task.lagMs() : 0,
    pendingBatches: task.pendingOutboxBatches(),
    failure,
    error: taskError(meta),
    droppedRecords: droppedRecords(task.counters.snapshot().events),
  };
}

/** How much of its changelogs a restoring instance has restored, of their ends (a read's `restoring` answer). */
export function restoreProgressOf(description: TaskDescription): { restored: number; total: number } {
  const restored = description.changelogs.reduce((n, c) => n + c.restored, 0);
  const total = description.changelogs.reduce((n, c) => n + c.end, 0);
  return { restored, total };
}
