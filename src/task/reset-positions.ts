/**
 * An application's input reset as one task instance applies it (input-reset.ts has the rules):
 * each target is read from the log first; then one storage transaction moves the positions (only
 * forward), clears a failure and the skips the move passes, and notes the reset in the meta row,
 * so that a repeat of the same reset (the coordinator's, after a crash) changes nothing.
 */
import type { Application } from "../application";
import type { Log, TopicPartition } from "../log/types";
import { positionAfterReset, resets, targetOffset, type AppliedReset, type InputReset, type PartitionReset } from "./input-reset";
import { remainingSkips } from "./skips";
import type { TaskStorage } from "./task-storage";
import { topicPartition } from "../names";

/** The input partitions a reset moves, each with its target offset (same order). */
export interface ResetPlan {
  readonly partitions: readonly TopicPartition[];
  readonly targets: readonly number[];
}

/** The partitions of task `taskId` that `reset` moves (not global tables' topics), with their targets as the log says now. */
export async function resetPlan(app: Application, log: Log, taskId: string, reset: InputReset): Promise<ResetPlan> {
  const partitions = app.inputPartitions(taskId).filter((tp) => !app.isGlobalInput(taskId, tp.topic) && resets(reset, tp));
  const targets = await Promise.all(
    partitions.map(async (tp) => {
      const range = await log.offsets(tp);
      const found = reset.target.to === "timestamp" ? await log.offsetForTimestamp(tp, reset.target.timestamp) : undefined;
      return targetOffset(reset.target, tp, range, found);
    }),
  );
  return { partitions, targets };
}

/**
 * Moves the positions as `plan` says, in one transaction with the meta row's note of the reset.
 * A failure whose record the move passes is cleared (while the application is shut down, `halted`
 * stands in for it). Undefined when the instance is no longer active.
 */
export function moveInputPositions(storage: TaskStorage, reset: InputReset, plan: ResetPlan, halted?: string): AppliedReset | undefined {
  return storage.transaction(() => {
    const now = storage.meta();
    if (now?.role !== "active") return undefined;
    if (now.lastReset?.id === reset.id) return now.lastReset;
    const positions = storage.positions();
    const moved: PartitionReset[] = plan.partitions.map((tp, i) => {
      const from = positions[topicPartition(tp)] ?? 0;
      const to = positionAfterReset(from, plan.targets[i]!);
      return { topic: tp.topic, partition: tp.partition, from, to, skipped: to - from };
    });
    storage.writePositions(Object.fromEntries(moved.filter((p) => p.to > p.from).map((p) => [topicPartition(p), p.to])));
    const after = storage.positions();
    const passed = now.failedAt && (after[topicPartition(now.failedAt)] ?? 0) > now.failedAt.offset;
    const done: AppliedReset = { id: reset.id, partitions: moved };
    storage.writeMeta({ ...now, lastReset: done, skips: remainingSkips(now.skips ?? [], after), failure: passed ? (halted ?? null) : now.failure });
    return done;
  });
}
