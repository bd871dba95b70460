/**
 * Turning an input record into a typed record with its source's serdes, and what happens when
 * that fails: the topology's `DeserializationHandler` decides between failing, skipping and
 * sending the raw record to a dead letter topic.
 */
import { DeserializationError, messageOf, type RecordOrigin } from "../errors";
import type { StreamRecord } from "../record";
import type { Serde } from "../serdes";
import type { DeserializationHandler, TopologySource } from "../topology/topology";
import type { ProcessorState } from "./processor-state";
import type { InputRecord, RecordSink } from "./types";

/** Headers a dead-lettered record carries, after the original record's own. */
export const DEAD_LETTER_HEADERS = {
  error: "edge-streams.dlq.error",
  topic: "edge-streams.dlq.topic",
  partition: "edge-streams.dlq.partition",
  offset: "edge-streams.dlq.offset",
  /** The processor or sink that failed (processing and production errors only). */
  node: "edge-streams.dlq.node",
} as const;

function decode(serde: Serde<unknown>, text: string, what: "key" | "value", origin: RecordOrigin): unknown {
  try {
    return serde.deserialize(text);
  } catch (error) {
    const where = `${origin.topic}/${origin.partition} offset ${origin.offset}`;
    throw new DeserializationError(`cannot deserialize the ${what} of ${where}: ${messageOf(error)}`, origin, { cause: error });
  }
}

/** The typed record; throws `DeserializationError` naming the record. Null keys and values stay null. */
export function deserializeInput(source: TopologySource, input: InputRecord): StreamRecord<unknown, unknown> {
  const origin = { topic: input.topic, partition: input.partition, offset: input.offset };
  return {
    key: input.key === null ? null : decode(source.keySerde, input.key, "key", origin),
    value: input.value === null ? null : decode(source.valueSerde, input.value, "value", origin),
    timestamp: input.timestamp,
    headers: input.headers,
  };
}

/** Applies the handler: rethrows for `"fail"`, otherwise counts (and dead-letters) the record. */
export function handleDeserializationError(
  handler: DeserializationHandler,
  error: DeserializationError,
  input: InputRecord,
  collector: RecordSink,
  task: ProcessorState,
): void {
  if (handler === "fail") throw error;
  if (handler === "skip") {
    task.metrics.skippedRecords++;
    task.eventMetrics.skippedRecords++;
    return;
  }
  collector.send({
    topic: handler.deadLetterTopic,
    key: input.key,
    value: input.value,
    timestamp: input.timestamp,
    headers: [
      ...input.headers,
      { key: DEAD_LETTER_HEADERS.error, value: error.message },
      { key: DEAD_LETTER_HEADERS.topic, value: input.topic },
      { key: DEAD_LETTER_HEADERS.partition, value: String(input.partition) },
      { key: DEAD_LETTER_HEADERS.offset, value: String(input.offset) },
    ],
  });
  task.metrics.deadLetteredRecords++;
}
