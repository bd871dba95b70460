/**
 * Running user code under the topology's error handlers. Each processor node, timestamp
 * extractor and punctuator runs in `processing(...)`, each sink's serialization and partitioner
 * in `production(...)`. The innermost guard that sees an error decides: `"fail"` turns it into a
 * `ProcessingError`/`ProductionError`, which every outer guard lets through, so it leaves
 * `process()` as it is (and the task's `UncaughtErrorPolicy` applies); `"continue"` and a dead
 * letter topic handle it where it happened, so the rest of the record's processing goes on, as
 * with Kafka Streams' handlers.
 *
 * A `DeserializationError` of a store (no origin) is never handled: it means the store holds
 * corrupt state, and skipping records would build on it.
 */
import { DeserializationError, messageOf, ProcessingError, ProductionError } from "../errors";
import type { ErrorHandler } from "../topology/topology";
import { DEAD_LETTER_HEADERS } from "./deserialization";
import type { ProcessorState } from "./processor-state";
import type { RecordSink } from "./types";

export class ErrorHandling {
  constructor(
    private readonly task: ProcessorState,
    private readonly collector: RecordSink,
    private readonly onProcessing: ErrorHandler,
    private readonly onProduction: ErrorHandler,
  ) {}

  /** Runs user code of `node`; undefined when it failed and the error was handled. */
  processing<T>(node: string, body: () => T): T | undefined {
    return this.guard("processing", node, body);
  }

  /** Turns a record into an outgoing one for the sink `node`; undefined when that failed and was handled. */
  production<T>(node: string, body: () => T): T | undefined {
    return this.guard("production", node, body);
  }

  private guard<T>(stage: "processing" | "production", node: string, body: () => T): T | undefined {
    try {
      return body();
    } catch (error) {
      if (error instanceof ProcessingError || error instanceof ProductionError || error instanceof DeserializationError) throw error;
      const position = this.task.current?.position;
      const where = position ? ` on ${position.topic}/${position.partition} offset ${position.offset}` : " in a wall-clock punctuation";
      const message = `${node} failed${where}: ${messageOf(error)}`;
      const wrapped =
        stage === "processing"
          ? new ProcessingError(message, node, position, { cause: error })
          : new ProductionError(message, node, position, { cause: error });
      const handler = stage === "processing" ? this.onProcessing : this.onProduction;
      if (handler === "fail") throw wrapped;
      const metrics = this.task.eventMetrics;
      if (handler === "continue") {
        if (stage === "processing") metrics.processingErrorsContinued++;
        else metrics.productionErrorsContinued++;
        return undefined;
      }
      this.deadLetter(handler.deadLetterTopic, wrapped.message, node);
      if (stage === "processing") metrics.processingErrorsDeadLettered++;
      else metrics.productionErrorsDeadLettered++;
      return undefined;
    }
  }

  /** The raw input record with headers naming the error; in a wall-clock punctuation, only the headers. */
  private deadLetter(topic: string, message: string, node: string): void {
    const current = this.task.current;
    const input = current?.input;
    const origin = input
      ? [
          { key: DEAD_LETTER_HEADERS.topic, value: input.topic },
          { key: DEAD_LETTER_HEADERS.partition, value: String(input.partition) },
          { key: DEAD_LETTER_HEADERS.offset, value: String(input.offset) },
        ]
      : [];
    this.collector.send({
      topic,
      key: input?.key ?? null,
      value: input?.value ?? null,
      timestamp: input?.timestamp ?? current?.timestamp ?? 0,
      headers: [...(input?.headers ?? []), { key: DEAD_LETTER_HEADERS.error, value: message }, { key: DEAD_LETTER_HEADERS.node, value: node }, ...origin],
    });
  }
}
