/**
 * A task instance's identity as the log's idempotent producer: one producer per task (Kafka
 * Streams' exactly-once producer per task), whose epoch grows with the task's epoch and the
 * instance's incarnation, so a newer instance fences every older one (ProducerFenced).
 */
import type { ProducerId } from "../log/types";
import type { TaskMeta } from "./task-storage";

/** Incarnations per epoch in the producer epoch: epoch * this + incarnation stays monotonic. */
const INCARNATIONS_PER_EPOCH = 1_000_000;

export function taskProducer(applicationId: string, meta: TaskMeta, sequence: number): ProducerId {
  return { producerId: `${applicationId}-${meta.taskId}`, epoch: meta.epoch * INCARNATIONS_PER_EPOCH + meta.incarnation, sequence };
}
