/**
 * What an error met sending the outbox means (Kafka's `RecordCollectorImpl.recordSendError`):
 * - `fenced`: a newer instance owns the task (Kafka's TaskMigrated): this one stops.
 * - `refused`: the log refuses records of the batch, and would refuse them on every attempt
 *   (RecordTooLarge, InvalidRecord): the production handler decides (refused-records.ts).
 * - `fatal`: the log holds other records under the batch's sequence (DuplicateSequenceMismatch):
 *   sending again cannot help, the task stops.
 * - `transient`: the log did not answer, or not yet in order (LogUnavailable — a network failure
 *   comes as one —, an unknown partition, OutOfOrderSequence behind a batch that failed first): the
 *   same batches are sent again after a back-off. Kafka's default handler answers RETRY for these,
 *   and the durable outbox makes a retry always right.
 * - `other`: anything else (not the log's answer): thrown to the caller, as any error.
 */
import {
  DuplicateSequenceMismatch,
  InvalidRecord,
  isLogUnavailable,
  OutOfOrderSequence,
  ProducerFenced,
  RecordTooLarge,
  UnknownTopicOrPartition,
} from "../log/errors";

export type SendErrorKind = "fenced" | "refused" | "fatal" | "transient" | "other";

export function sendErrorKind(error: unknown): SendErrorKind {
  if (error instanceof ProducerFenced) return "fenced";
  if (error instanceof RecordTooLarge || error instanceof InvalidRecord) return "refused";
  if (error instanceof DuplicateSequenceMismatch) return "fatal";
  if (isLogUnavailable(error) || error instanceof OutOfOrderSequence || error instanceof UnknownTopicOrPartition) return "transient";
  return "other";
}

/** A send the task will not retry by itself: it stopped (its meta says why). */
export class SendStopped extends Error {
  override name = "SendStopped";
}
