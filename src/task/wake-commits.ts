/**
 * The group's offset rides the answer to a wake-up (issue #33). At 256 partitions a task's input
 * arrives every few seconds, one commit each, and the group's offset for it was owed for
 * RECORD_OWED_MS and then committed by a request of its own to the input partition. Now the task
 * answers a partition's wake-up with the offset it owes there (`answeredCommit`) and the partition
 * commits it as it reads the answer; every wake-up tells what the groups hold there, and only that
 * counts as taken (`heldAsTold`): the partition may not have written it (a crash, a fence), and
 * until told otherwise the offset stays owed — committed by the task once due, or when the
 * partition echoes (its group's offset behind its end). Pure; OutboxSender applies it, and the
 * helpers it shares with it live here too.
 */
import type { Application } from "../application";
import type { CommittedOffset, TopicPartition } from "../log/types";
import { topicPartition } from "../names";
import type { InputPositions } from "./record-collector";
import type { TaskMeta } from "./task-storage";

/** Input offsets the group took from the instance (incarnation and epoch) that committed them. */
export interface GroupCommit {
  readonly positions: InputPositions;
  readonly incarnation: number;
  readonly epoch: number;
}

/** A group's offset in a wake-up's answer (`WakeAnswer.commit`). */
export interface AnsweredCommit {
  readonly group: string;
  readonly committed: CommittedOffset;
}

/** Whether what was acknowledged to `owner` belongs to the instance as it is now. */
export function sameInstance(now: TaskMeta, owner: { readonly incarnation: number; readonly epoch: number }): boolean {
  return now.incarnation === owner.incarnation && now.epoch === owner.epoch;
}

/**
 * Whether uncommitted positions hold any processed input: positions still at 0 are nothing
 * processed, so they wait for a commit that is asked for (not worth a timer).
 */
export function processedAny(positions: InputPositions): boolean {
  return Object.values(positions).some((offset) => offset > 0);
}

/** Whether `meta` commits input offsets to the group at `tp`: a running active, not for a global table's input (its changelog keeps it). */
function commitsAt(meta: TaskMeta, tp: TopicPartition, application: Application): boolean {
  return meta.role === "active" && meta.state === "RUNNING" && !application.isGlobalInput(meta.taskId, tp.topic);
}

/**
 * The group's offset at `tp` to answer a wake-up from it with: the instance's position there when
 * the group is not known to hold it (`uncommitted`) — what `OutboxSender.commitInputOffsets` would
 * commit there once everything it implies is sent (the caller's to check), with the same epoch.
 */
export function answeredCommit(
  meta: TaskMeta,
  tp: TopicPartition,
  application: Application,
  uncommitted: InputPositions,
  epoch: number,
): AnsweredCommit | undefined {
  if (!commitsAt(meta, tp, application)) return undefined;
  const offset = uncommitted[topicPartition(tp)];
  if (offset === undefined || offset <= 0) return undefined;
  return { group: application.groupId, committed: { offset, metadata: `epoch=${meta.epoch}`, epoch } };
}

/**
 * A wake-up told that the group holds `offset` at `tp`: what the group took of the instance's own
 * progress (up to its position there), when that is more than it is known to hold; else undefined.
 */
export function heldAsTold(
  meta: TaskMeta,
  tp: TopicPartition,
  offset: number | undefined,
  facts: { readonly application: Application; readonly positions: InputPositions; readonly committed: InputPositions },
): InputPositions | undefined {
  if (offset === undefined || !commitsAt(meta, tp, facts.application)) return undefined;
  const key = topicPartition(tp);
  const taken = Math.min(offset, facts.positions[key] ?? 0);
  return taken > (facts.committed[key] ?? -1) ? { [key]: taken } : undefined;
}
