/**
 * The topology's error handlers, Kafka Streams' three (KIP-210, KIP-1033, KIP-1034): what to do
 * with an input record that cannot be deserialized, with an error thrown by user code while
 * processing, and with an output record that cannot be produced. A handler is one of Kafka's
 * built-in ones, named by its answer (`"fail"`, `"continue"`, `{ deadLetterTopic }`), or a function
 * deciding per error from an `ErrorHandlerContext`, as Kafka's handler classes do. `decide` turns
 * either into what happens, the same way for every stage.
 */
import type { Header, StreamRecord } from "./record";
import type { InputRecord } from "./runtime/types";

/**
 * A handler's answer (Kafka's `Response.fail()` / `Response.resume(...)`):
 * - `"fail"`: processing stops at the record; the commit is rolled back, so nothing of it, a dead
 *   letter neither, is written (Kafka's exactly-once aborts the transaction alike).
 * - `"continue"`: the record goes no further from where it failed, and processing goes on.
 * - `{ deadLetterTopic }`: the record is written to that topic with Kafka's error headers (see
 *   `DEAD_LETTER_HEADERS`), in the same commit as the rest, and processing goes on.
 */
export type ErrorHandlerResponse = "fail" | "continue" | { readonly deadLetterTopic: string };

/**
 * What a handler function is told of the error's place (Kafka's `ErrorHandlerContext`, same
 * names): the source record being processed — topic, partition, offset, headers, timestamp and
 * its raw key and value — the node that failed and the task. Without a source record (a
 * wall-clock punctuation, a record refused by the log whose origin is unknown) `topic` and the
 * raw key and value are null and `partition`, `offset` and `timestamp` are -1, as in Kafka.
 */
export interface ErrorHandlerContext {
  readonly topic: string | null;
  readonly partition: number;
  readonly offset: number;
  readonly headers: readonly Header[];
  /** The node whose code failed: the source node for a deserialization error, the sink for a production error; null when the log refused a record. */
  readonly processorNodeId: string | null;
  readonly taskId: string;
  readonly timestamp: number;
  readonly sourceRawKey: string | null;
  readonly sourceRawValue: string | null;
}

/**
 * A handler deciding per error (Kafka's handler classes): given where it happened, what was
 * thrown (exactly what the serde, operator or serializer threw; a `RecordTooLarge` or
 * `InvalidRecord` for a record the log refuses) and the record that failed. Unlike the built-in
 * `"continue"`, a function's `"continue"` writes no dead letter (Kafka's `Response.resume()`
 * without records): it names the topic when it wants one. A function that throws, or answers
 * anything else, fails the task ("Fatal user code error in … error callback").
 */
export type ErrorHandlerFunction<R> = (context: ErrorHandlerContext, error: Error, record: R) => ErrorHandlerResponse;

/**
 * A handler: Kafka's built-in ones by their answer, or a function.
 * - `"fail"`: LogAndFailExceptionHandler, LogAndFailProcessingExceptionHandler,
 *   DefaultProductionExceptionHandler (the default of each stage).
 * - `"continue"`: LogAndContinueExceptionHandler, LogAndContinueProcessingExceptionHandler: with
 *   the topology's `deadLetterQueueTopic` (Kafka's `errors.dead.letter.queue.topic.name`) the
 *   record is dead-lettered there first, as Kafka's built-in handlers do.
 * - `{ deadLetterTopic }`: continue after dead-lettering to that topic.
 */
export type ErrorHandler<R = unknown> = ErrorHandlerResponse | ErrorHandlerFunction<R>;

/** The record a production handler is given: what a sink was producing (typed), or a serialized record the log refused. */
export interface ProductionRecord {
  readonly topic: string;
  readonly partition?: number;
  readonly key: unknown;
  readonly value: unknown;
  readonly timestamp: number;
  readonly headers: readonly Header[];
}

/** For input records that cannot be deserialized; `"skip"` is `"continue"` by its former name. Given the raw input record. */
export type DeserializationHandler = ErrorHandler<InputRecord> | "skip";
/** For errors of user code while processing (KIP-1033); given the record at the failing node (null in a punctuation). */
export type ProcessingHandler = ErrorHandler<StreamRecord<unknown, unknown> | null>;
/** For output records that cannot be serialized, partitioned or written to the log. */
export type ProductionHandler = ErrorHandler<ProductionRecord>;

export type ErrorStage = "deserialization" | "processing" | "production";

/** What a handler's answer comes to: stop, or go on (after writing a dead letter to `deadLetterTopic`, when there is one). */
export type HandlerDecision =
  | { readonly fail: true /** Set when the handler itself failed: the error to stop with. */; readonly handlerError?: Error }
  | { readonly fail: false; readonly deadLetterTopic?: string };

/** Thrown by `decide` callers when a handler function threw or answered nonsense: Kafka's message, the handler's error as the cause. */
export function fatalHandlerError(stage: ErrorStage, cause: unknown): Error {
  return new Error(`Fatal user code error in ${stage} error callback`, { cause });
}

const RESPONSE_NAMES: Record<ErrorStage, string> = {
  deserialization: "DeserializationExceptionResponse",
  processing: "ProcessingExceptionResponse",
  production: "ProductionExceptionResponse",
};

/** Anything thrown, as an Error (what handlers are given). */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown));
}

/**
 * Applies `handler` to an error: a function is asked (with `context`, the error and the record),
 * a built-in handler answers for itself; `deadLetterQueueTopic` is the topology's, used by the
 * built-in `"continue"`.
 */
export function decide<R>(
  stage: ErrorStage,
  handler: ErrorHandler<R> | "skip",
  context: ErrorHandlerContext,
  error: Error,
  record: R,
  deadLetterQueueTopic: string | undefined,
): HandlerDecision {
  if (typeof handler !== "function") {
    if (handler === "fail") return { fail: true };
    if (handler === "continue" || handler === "skip")
      return deadLetterQueueTopic === undefined ? { fail: false } : { fail: false, deadLetterTopic: deadLetterQueueTopic };
    return { fail: false, deadLetterTopic: handler.deadLetterTopic };
  }
  let answer: unknown;
  try {
    answer = handler(context, error, record);
  } catch (thrown) {
    return { fail: true, handlerError: fatalHandlerError(stage, thrown) };
  }
  if (answer === "fail") return { fail: true };
  if (answer === "continue") return { fail: false };
  const topic = typeof answer === "object" && answer !== null ? (answer as { deadLetterTopic?: unknown }).deadLetterTopic : undefined;
  if (typeof topic === "string") return { fail: false, deadLetterTopic: topic };
  return { fail: true, handlerError: fatalHandlerError(stage, new TypeError(`Invalid ${RESPONSE_NAMES[stage]} response.`)) };
}

/** The context of an error while processing a source record (`input`), or, without one, of a wall-clock punctuation at `timestamp`. */
export function contextOf(taskId: string, processorNodeId: string | null, input: InputRecord | undefined, timestamp = -1): ErrorHandlerContext {
  if (!input) {
    return { topic: null, partition: -1, offset: -1, headers: [], processorNodeId, taskId, timestamp, sourceRawKey: null, sourceRawValue: null };
  }
  return {
    topic: input.topic,
    partition: input.partition,
    offset: input.offset,
    headers: input.headers,
    processorNodeId,
    taskId,
    timestamp: input.timestamp,
    sourceRawKey: input.key,
    sourceRawValue: input.value,
  };
}
