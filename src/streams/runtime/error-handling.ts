/**
 * Running user code under the topology's error handlers (Kafka's processing handler, KIP-1033,
 * and the production handler's serialization errors). Each processor node, timestamp extractor
 * and punctuator runs in `processing(...)` (`processRecord`), and a failure of a sink's serialization or
 * partitioner goes to `productionFailed`. The innermost guard that sees an error decides: `"fail"` turns it into a
 * `ProcessingError`/`ProductionError`, which every outer guard lets through, so it leaves
 * `process()` as it is (and the task's `UncaughtErrorPolicy` applies); `"continue"` and a dead
 * letter topic handle it where it happened, so the rest of the record's processing goes on, as
 * with Kafka Streams' handlers. A dead letter is the source record being processed, raw, with
 * Kafka's error headers describing what was thrown.
 *
 * A `DeserializationError` of a store (no origin) is never handled: it means the store holds
 * corrupt state, and skipping records would build on it.
 */
import {
  asError,
  contextOf,
  decide,
  type DeserializationHandler,
  type ErrorHandler,
  type ProcessingHandler,
  type ProductionHandler,
  type ProductionRecord,
} from "../error-handlers";
import { DeserializationError, messageOf, ProcessingError, ProductionError } from "../errors";
import type { StreamRecord } from "../record";
import { sendDeadLetter } from "./dead-letter";
import type { ProcessorState } from "./processor-state";
import type { RecordSink } from "./types";
import { topicPartition } from "../../names";

/** The handlers of a topology, its dead letter topic, and the topics it declares (a dead letter topic must be one). */
export interface ErrorHandling {
  readonly deserialization: DeserializationHandler;
  readonly processing: ProcessingHandler;
  readonly production: ProductionHandler;
  readonly deadLetterQueueTopic: string | undefined;
  readonly declared: (topic: string) => boolean;
}

export class ErrorGuards {
  constructor(
    private readonly task: ProcessorState,
    private readonly collector: RecordSink,
    private readonly handling: ErrorHandling,
  ) {}

  /** Runs user code of `node`, given `record` (null in a punctuation); undefined when it failed and the error was handled. */
  processing<T>(node: string, body: () => T, record: StreamRecord<unknown, unknown> | null = null): T | undefined {
    try {
      return body();
    } catch (thrown) {
      return this.handle("processing", this.handling.processing, node, thrown, record);
    }
  }

  /** `processing` of a processor's `process(record)`: the same, without a closure per record. */
  processRecord(node: string, processor: { process(record: StreamRecord<unknown, unknown>): void }, record: StreamRecord<unknown, unknown>): void {
    try {
      processor.process(record);
    } catch (thrown) {
      this.handle("processing", this.handling.processing, node, thrown, record);
    }
  }

  /**
   * What `thrown` while the sink `node` writing to `topic` turned `record` into outgoing ones
   * comes to: thrown, or handled (undefined). The handler's record (`record` with its topic) is
   * made only here, on a failure.
   */
  productionFailed(node: string, thrown: unknown, topic: string, record: StreamRecord<unknown, unknown>): undefined {
    const failed: ProductionRecord = { topic, ...record };
    return this.handle("production", this.handling.production, node, thrown, failed);
  }

  /** What `thrown` by user code of `node` comes to: the stage's error, thrown, or handled (undefined). */
  private handle<R>(stage: "processing" | "production", handler: ErrorHandler<R>, node: string, thrown: unknown, record: R): undefined {
    if (thrown instanceof ProcessingError || thrown instanceof ProductionError || thrown instanceof DeserializationError) throw thrown;
    const current = this.task.current;
    const position = current?.position;
    const where = position ? ` on ${topicPartition(position)} offset ${position.offset}` : " in a wall-clock punctuation";
    const fail = (message: string, cause: unknown) =>
      stage === "processing" ? new ProcessingError(message, node, position, { cause }) : new ProductionError(message, node, position, { cause });
    const failed = `${node} failed${where}: ${messageOf(thrown)}`;
    const error = asError(thrown);
    const context = contextOf(this.task.taskId, node, current?.input, current?.timestamp ?? -1);
    const decision = decide(stage, handler, context, error, record, this.handling.deadLetterQueueTopic);
    if (decision.fail) {
      if (!decision.handlerError) throw fail(failed, thrown);
      const { message, cause } = decision.handlerError;
      throw fail(`${message}: ${messageOf(cause)} (${failed})`, cause);
    }
    const metrics = this.task.eventMetrics;
    if (decision.deadLetterTopic === undefined) {
      if (stage === "processing") metrics.processingErrorsContinued++;
      else metrics.productionErrorsContinued++;
      return undefined;
    }
    const input = current?.input;
    try {
      sendDeadLetter(this.collector, this.handling.declared, decision.deadLetterTopic, context, input?.key ?? null, input?.value ?? null, error);
    } catch (failure) {
      throw fail(`${failed}; its dead letter cannot be written: ${messageOf(failure)}`, failure);
    }
    if (stage === "processing") metrics.processingErrorsDeadLettered++;
    else metrics.productionErrorsDeadLettered++;
    return undefined;
  }
}
