/**
 * The mutable state of one task processor that its nodes share: the input record being processed
 * (or the punctuation running), stream time, punctuation schedules and the metrics.
 */
import type { RecordMetadata } from "../record";
import { PunctuationSchedules } from "./punctuation";
import { noEvents, type InputRecord, type TaskEventMetrics, type TaskMetrics } from "./types";

type Mutable<T> = { -readonly [P in keyof T]: T[P] };

/**
 * What the task is doing: processing an input record (its position, the raw record and its
 * timestamp, maybe extracted) or running a wall-clock punctuation (a timestamp only).
 */
export interface CurrentInput {
  readonly position?: RecordMetadata;
  readonly input?: InputRecord;
  readonly timestamp: number;
}

export class ProcessorState {
  current: CurrentInput | undefined = undefined;
  /** Per source topic: the largest timestamp extracted from the task's partition of it. */
  readonly partitionTimes = new Map<string, number>();
  readonly metrics: Mutable<TaskMetrics> = { processedRecords: 0, skippedRecords: 0, deadLetteredRecords: 0, droppedRecords: 0 };
  readonly eventMetrics: Mutable<TaskEventMetrics> = noEvents();
  readonly punctuation = new PunctuationSchedules();

  constructor(
    readonly applicationId: string,
    readonly taskId: string,
    readonly partition: number,
    public streamTimeMs: number,
  ) {}

  /** Stream time only moves forward: a late record does not take it back. */
  advanceStreamTime(timestamp: number): void {
    if (timestamp > this.streamTimeMs) this.streamTimeMs = timestamp;
  }

  /** -1 before the partition's first record. */
  partitionTime(topic: string): number {
    return this.partitionTimes.get(topic) ?? -1;
  }

  /** Partition time, like stream time, only moves forward. */
  advancePartitionTime(topic: string, timestamp: number): void {
    if (timestamp > this.partitionTime(topic)) this.partitionTimes.set(topic, timestamp);
  }
}
