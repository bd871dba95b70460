/**
 * An input offset reset for the application (Kafka's `kafka-streams-application-reset` with
 * `--to-latest`, `--to-offset`, `--to-datetime`), as the tasks apply it: each task moves its
 * positions in the topics reset to the target, and only forward. Records skipped so are never
 * processed; the stores keep what they reflect, so nothing is applied twice (exactly once). A
 * backward reset would apply records again to stores that already reflect them, so it is refused
 * before it reaches a task (docs/operations.md, "Recover a failed task"). Pure.
 */
import type { OffsetRange, TopicPartition } from "../log/types";

/** Where a reset moves each input partition. */
export type ResetTarget =
  | { readonly to: "latest" }
  | { readonly to: "earliest" }
  /** The first offset whose record's timestamp is at or after `timestamp` (the end when none is). */
  | { readonly to: "timestamp"; readonly timestamp: number }
  /** The given partitions only, each to its offset. */
  | { readonly to: "offsets"; readonly offsets: readonly (TopicPartition & { readonly offset: number })[] };

/** A reset of the application's input, as the coordinator hands it to every task reading one of `topics`. */
export interface InputReset {
  /** Names the reset: a task applies each one once (the coordinator repeats it after a crash). */
  readonly id: string;
  readonly target: ResetTarget;
  readonly topics: readonly string[];
}

/** What a reset did to one input partition: from where to where the position moved (`skipped` records never processed). */
export interface PartitionReset extends TopicPartition {
  readonly from: number;
  readonly to: number;
  readonly skipped: number;
}

/** A reset as a task applied it. */
export interface AppliedReset {
  readonly id: string;
  readonly partitions: readonly PartitionReset[];
}

/** Whether the reset moves `tp` at all (its topic is reset; for offsets, the partition is listed). */
export function resets(reset: Pick<InputReset, "target" | "topics">, tp: TopicPartition): boolean {
  if (!reset.topics.includes(tp.topic)) return false;
  return reset.target.to !== "offsets" || reset.target.offsets.some((o) => o.topic === tp.topic && o.partition === tp.partition);
}

/** The offset a reset aims at in `tp`, given the partition's range and, for a timestamp, the offset the log found for it. */
export function targetOffset(target: ResetTarget, tp: TopicPartition, range: OffsetRange, forTimestamp?: number): number {
  const wanted = (() => {
    switch (target.to) {
      case "latest":
        return range.latest;
      case "earliest":
        return range.earliest;
      case "timestamp":
        return forTimestamp ?? range.latest;
      case "offsets":
        return target.offsets.find((o) => o.topic === tp.topic && o.partition === tp.partition)?.offset ?? range.earliest;
    }
  })();
  return Math.min(Math.max(wanted, range.earliest), range.latest);
}

/** The position after a reset: the target, but never behind where processing is (a reset only skips forward). */
export function positionAfterReset(position: number, target: number): number {
  return Math.max(position, target);
}
