/**
 * A test application for wall-clock punctuation and the uncaught-error policies, with the
 * Processor API. Events (key: a name; value: `PolicyEvent`) are counted per key in store
 * `<id>-pending`; every `punctuateEveryMs` of wall-clock time a punctuator sends each pending
 * count to topic `<id>-flushed`, adds it to store `<id>-flushed` and clears it: the classic
 * "emit periodically" processor. Some events fail on purpose. The topology's processing handler
 * (a function, as Kafka's handler classes decide per error) sends an `InvalidEvent` to the dead
 * letter topic `<id>-dead-letters` and goes on, and fails on anything else; then its uncaught-error
 * handler chooses by the error: a `TransientFailure` is retried, a `PoisonPill` shuts the
 * application down, anything else stops the task.
 */
import { Application } from "../../src/application";
import { ProcessingError, Serdes, StreamsBuilder, type ProcessorContext } from "../../src/streams";

export interface PolicyEvent {
  /**
   * How the event fails: with a `TransientFailure` (retried), a plain error (the task stops) or a
   * `PoisonPill` (the application shuts down) — on its first `times` attempts (default: always).
   */
  readonly fail?: "transient" | "fatal" | "shutdown" | "invalid";
  readonly times?: number;
}

export class TransientFailure extends Error {
  override name = "TransientFailure";
}

export class PoisonPill extends Error {
  override name = "PoisonPill";
}

/** An event that can never be processed: the processing handler dead-letters it. */
export class InvalidEvent extends Error {
  override name = "InvalidEvent";
}

/** Attempts per input record, outside any task processor: they survive the processor's rebuild after a failure. */
const attempts = new Map<string, number>();

export function policiesApp(id: string, punctuateEveryMs: number, partitions = 1): Application {
  const pending = `${id}-pending`;
  const flushed = `${id}-flushed`;
  const builder = new StreamsBuilder()
    .addStateStore(pending, { key: Serdes.string(), value: Serdes.number() })
    .addStateStore(flushed, { key: Serdes.string(), value: Serdes.number() });
  builder
    .stream(`${id}-events`, { key: Serdes.string(), value: Serdes.json<PolicyEvent>() })
    .process<string, number>(
      () => {
        let context: ProcessorContext<string, number>;
        return {
          init: (c) => {
            context = c;
            c.schedule(punctuateEveryMs, "wall-clock", (now) => {
              const counts = c.getStateStore<string, number>(pending);
              const totals = c.getStateStore<string, number>(flushed);
              for (const { key, value } of counts.all()) {
                c.forward({ key, value, timestamp: now, headers: [] });
                totals.put(key, (totals.get(key) ?? 0) + value);
                counts.delete(key);
              }
            });
          },
          process: (record) => {
            const event = record.value;
            if (event.fail) {
              const at = context.recordMetadata()!;
              const name = `${id}:${at.topic}/${at.partition}/${at.offset}`;
              const attempt = (attempts.get(name) ?? 0) + 1;
              attempts.set(name, attempt);
              if (attempt <= (event.times ?? Infinity)) {
                if (event.fail === "transient") throw new TransientFailure(`attempt ${attempt} of ${record.key} failed`);
                if (event.fail === "fatal") throw new Error(`${record.key} cannot be processed`);
                if (event.fail === "invalid") throw new InvalidEvent(`${record.key} is not a valid event`);
                throw new PoisonPill(`${record.key} is a poison pill`);
              }
            }
            const counts = context.getStateStore<string, number>(pending);
            counts.put(record.key!, (counts.get(record.key!) ?? 0) + 1);
          },
        };
      },
      pending,
      flushed,
    )
    .to(`${id}-flushed`, { key: Serdes.string(), value: Serdes.number() });
  return new Application(
    builder.build({
      applicationId: id,
      topics: { [`${id}-events`]: partitions, [`${id}-flushed`]: partitions, [`${id}-dead-letters`]: 1 },
      onProcessingError: (_context, error) => (error instanceof InvalidEvent ? { deadLetterTopic: `${id}-dead-letters` } : "fail"),
      onUncaughtError: (error) => {
        const cause = error instanceof ProcessingError ? error.cause : error;
        if (cause instanceof TransientFailure) return "retry";
        if (cause instanceof PoisonPill) return "shutdown-application";
        return "fail";
      },
    }),
  );
}
