/**
 * The mutable state of one task processor that its nodes share: the input record being processed,
 * stream time and the metrics.
 */
import type { RecordMetadata } from "../record";
import type { TaskMetrics } from "./types";

type Mutable<T> = { -readonly [P in keyof T]: T[P] };

/** The input record being processed: its position and timestamp. */
export interface CurrentInput {
  readonly position: RecordMetadata;
  readonly timestamp: number;
}

export class TaskState {
  current: CurrentInput | undefined = undefined;
  readonly metrics: Mutable<TaskMetrics> = { processedRecords: 0, skippedRecords: 0, deadLetteredRecords: 0, droppedRecords: 0 };

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
}
