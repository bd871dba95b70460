/**
 * Turning an input record into a typed record with its source's serdes, and what happens when
 * that fails: the topology's deserialization handler (Kafka's `DeserializationExceptionHandler`,
 * applied as its `RecordDeserializer` does) decides between failing, going on, and going on after
 * sending the raw record to a dead letter topic.
 */
import { asError, contextOf, decide } from "../error-handlers";
import { DeserializationError, messageOf, type RecordOrigin } from "../errors";
import type { StreamRecord } from "../record";
import type { Serde } from "../serdes";
import type { TopologySource } from "../topology/topology";
import { sendDeadLetter } from "./dead-letter";
import type { ErrorHandling } from "./error-handling";
import type { ProcessorState } from "./processor-state";
import type { InputRecord, RecordSink } from "./types";
import { topicPartition } from "../../names";

function decode(serde: Serde<unknown>, text: string, what: "key" | "value", input: InputRecord): unknown {
  try {
    return serde.deserialize(text);
  } catch (error) {
    // The origin is made only for a record that fails: not an object per record read.
    const origin: RecordOrigin = { topic: input.topic, partition: input.partition, offset: input.offset };
    const where = `${topicPartition(origin)} offset ${origin.offset}`;
    throw new DeserializationError(`cannot deserialize the ${what} of ${where}: ${messageOf(error)}`, origin, { cause: error });
  }
}

/** The typed record; throws `DeserializationError` naming the record. Null keys and values stay null. */
export function deserializeInput(source: TopologySource, input: InputRecord): StreamRecord<unknown, unknown> {
  return {
    key: input.key === null ? null : decode(source.keySerde, input.key, "key", input),
    value: input.value === null ? null : decode(source.valueSerde, input.value, "value", input),
    timestamp: input.timestamp,
    headers: input.headers,
  };
}

/** What the handler is applied with: the topology's handler and dead letter topic, and the topics it declares. */
export type DeserializationHandling = Pick<ErrorHandling, "deserialization" | "deadLetterQueueTopic" | "declared">;

/**
 * Applies the handler to `error`, met reading `input` at the source node `sourceNode`: throws for
 * "fail" (the handler function's own error when it failed), otherwise counts the record as skipped
 * or dead-lettered. The handler is given what the serde threw, as Kafka's is; a dead letter that
 * cannot be written fails the record.
 */
export function handleDeserializationError(
  handling: DeserializationHandling,
  error: DeserializationError,
  input: InputRecord,
  sourceNode: string,
  collector: RecordSink,
  task: ProcessorState,
): void {
  const thrown = asError(error.cause ?? error);
  const context = contextOf(task.taskId, sourceNode, input);
  const decision = decide("deserialization", handling.deserialization, context, thrown, input, handling.deadLetterQueueTopic);
  if (decision.fail) {
    if (!decision.handlerError) throw error;
    const { message, cause } = decision.handlerError;
    throw new DeserializationError(`${message}: ${messageOf(cause)}`, error.origin, { cause });
  }
  if (decision.deadLetterTopic === undefined) {
    task.metrics.skippedRecords++;
    task.eventMetrics.skippedRecords++;
    return;
  }
  try {
    sendDeadLetter(collector, handling.declared, decision.deadLetterTopic, context, input.key, input.value, thrown);
  } catch (failure) {
    throw new DeserializationError(`${error.message}; its dead letter cannot be written: ${messageOf(failure)}`, error.origin, { cause: failure });
  }
  task.metrics.deadLetteredRecords++;
  task.eventMetrics.deserializationErrorsDeadLettered++;
}
