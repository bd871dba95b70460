/**
 * Ported from Kafka Streams' RecordCollectorTest, its production handler cases (Kafka's
 * `ProductionExceptionHandler`, `DefaultProductionExceptionHandler`, KIP-1065's RETRY):
 * - serialization errors, on TopologyTestDriver: a sink whose serializer throws goes to the
 *   production handler, which fails (the default) or drops the record;
 * - errors sending records, on a task of the real runtime (its outbox sent through the real log):
 *   a record the log refuses goes to the handler ("fail": the task stops, no more records are
 *   sent; "continue": dropped, counted, later records go out); an error retrying cannot help (the
 *   log holds other records under the batch's sequence; a newer producer epoch) stops the task
 *   whatever the handler says; a log that does not answer is retried, after a back-off, never
 *   handed to the handler (Kafka's default handler answers RETRY for retriable errors, and its
 *   TaskCorrupted retries from the last commit).
 * Kafka's MockProducer fails sends at will; here the log refuses a record an earlier version left
 * in the outbox (test/support/outbox-rows.ts), a producer id appended under by hand, or a
 * partition made to fail (`injectFailures`). Kafka's "Error encountered sending record to topic
 * … Exception handler choose to FAIL …" is the task's failure naming the topic and the error.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../../src/application";
import { DurableLog } from "../../src/log/durable-log";
import { ProductionError, Serdes, StreamsBuilder, TopologyTestDriver, type ProcessorContext, type ProductionHandler, type Serde } from "../../src/streams";
import { StreamTask } from "../../src/task/stream-task";
import { SendStopped } from "../../src/task/send-errors";
import { oversizedDeadLetter, plantOutboxRow } from "../support/outbox-rows";
import { droppedRecordsTotal } from "../unit/kafka/support";

class SerializationException extends Error {
  override name = "SerializationException";
}

/** Kafka's `ErrorStringSerializer`. */
const errorSerializer: Serde<string> = {
  serialize: () => {
    throw new SerializationException("KABOOM!");
  },
  deserialize: (text) => text,
};

function serializing(options: { key?: Serde<string>; value?: Serde<string> }, handler?: ProductionHandler) {
  const builder = new StreamsBuilder();
  builder
    .stream("in", { key: Serdes.string(), value: Serdes.string() })
    .to("topic", { key: options.key ?? Serdes.string(), value: options.value ?? Serdes.string() });
  return new TopologyTestDriver(
    builder.build({ applicationId: "kafka-test", topics: { in: 1, topic: 3 }, ...(handler ? { onProductionError: handler } : {}) }),
  );
}

function thrownBy(body: () => void): Error {
  try {
    body();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}

describe("RecordCollectorTest: serialization errors", () => {
  it("shouldThrowStreamsExceptionUsingDefaultExceptionHandler", () => {
    const driver = serializing({ value: errorSerializer });
    const error = thrownBy(() => driver.pipe("in", "key", "val"));
    expect(error).toBeInstanceOf(ProductionError);
    expect(error.cause).toBeInstanceOf(SerializationException);
  });

  it("shouldDropRecordExceptionUsingAlwaysContinueExceptionHandler", () => {
    const driver = serializing({ key: errorSerializer }, () => "continue");
    driver.pipe("in", "key", "val");
    expect(driver.records("topic")).toEqual([]);
    expect(droppedRecordsTotal(driver)).toBe(1);
  });

  it("shouldThrowStreamsExceptionWhenValueSerializationFailedAndProductionExceptionHandlerRepliesWithFail", () => {
    const driver = serializing({ value: errorSerializer }, () => "fail");
    const exception = thrownBy(() => driver.pipe("in", "key", "val"));
    expect(exception.cause).toBeInstanceOf(Error);
    expect((exception.cause as Error).message).toBe("KABOOM!");
  });

  it("shouldThrowStreamsExceptionWhenKeySerializationFailedAndProductionExceptionHandlerRepliesWithFail", () => {
    const driver = serializing({ key: errorSerializer }, () => "fail");
    const exception = thrownBy(() => driver.pipe("in", "key", "val"));
    expect(exception.cause).toBeInstanceOf(Error);
    expect((exception.cause as Error).message).toBe("KABOOM!");
  });

  it("shouldNotFailIfContextIsNotAvailableOnSerializationError", () => {
    // No source record: a wall-clock punctuation forwards to the sink.
    const builder = new StreamsBuilder();
    let context: ErrorContextSeen | undefined;
    builder
      .stream("in", { key: Serdes.string(), value: Serdes.string() })
      .process<string, string>(() => ({
        init: (c: ProcessorContext<string, string>) => {
          c.schedule(10, "wall-clock", (now) => c.forward({ key: "key", value: "val", timestamp: now, headers: [] }));
        },
        process: () => {},
      }))
      .to("topic", { key: errorSerializer });
    const driver = new TopologyTestDriver(
      builder.build({
        applicationId: "kafka-test",
        topics: { in: 1, topic: 1 },
        onProductionError: (ctx) => {
          context = { topic: ctx.topic, partition: ctx.partition, offset: ctx.offset };
          return "fail";
        },
      }),
    );
    // should not crash with a TypeError (the NullPointerException of Kafka's test)
    expect(thrownBy(() => driver.advanceWallClockTime(10))).toBeInstanceOf(ProductionError);
    expect(context).toEqual({ topic: null, partition: -1, offset: -1 });
  });
});

interface ErrorContextSeen {
  topic: string | null;
  partition: number;
  offset: number;
}

/** in → out (strings), one partition each, with `handler` for production errors. */
function app(id: string, handler?: ProductionHandler): Application {
  const builder = new StreamsBuilder();
  builder.stream(`${id}-in`, { key: Serdes.string(), value: Serdes.string() }).to(`${id}-topic`, { key: Serdes.string(), value: Serdes.string() });
  return new Application(
    builder.build({ applicationId: id, topics: { [`${id}-in`]: 1, [`${id}-topic`]: 1, [`${id}-dlq`]: 1 }, ...(handler ? { onProductionError: handler } : {}) }),
  );
}

const START = 1_000_000;

/**
 * A task of `application` on the real log; `before` runs first, with the object's storage, and
 * the task is made again after it (as a restart would): what `before` left in its outbox is read.
 */
async function withTask(
  id: string,
  application: Application,
  before: (storage: DurableObjectStorage, log: DurableLog) => Promise<void> | void,
  body: (task: StreamTask, log: DurableLog, clock: { now: number }) => Promise<void>,
): Promise<void> {
  const log = new DurableLog(env.LOG_PARTITION, application.catalog);
  const clock = { now: START };
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_object, state) => {
    const options = { application, log, storage: state.storage, clock: () => clock.now, retryBackoff: { initialMs: 1_000, maxMs: 60_000 } };
    await new StreamTask(options).assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    await before(state.storage, log);
    await body(new StreamTask(options), log, clock);
  });
}

const topicOf = (id: string) => ({ topic: `${id}-topic`, partition: 0 });
const refused = (id: string) => oversizedDeadLetter("3", { topic: `${id}-in`, partition: 0, offset: 7 });

describe("RecordCollectorTest: errors sending records", () => {
  it("shouldThrowStreamsExceptionOnSubsequentFlushIfASendFailsWithDefaultExceptionHandler", async () => {
    const id = "rc-default";
    await withTask(
      id,
      app(id),
      (storage) => plantOutboxRow(storage, topicOf(id), [refused(id)]),
      async (task, log) => {
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "3", value: "0" }]);
        expect(await task.step()).toBe("blocked");
        expect(task.meta()?.failure).toMatch(
          new RegExp(`^production failed: the log refused a record for ${id}-topic/0: record 0 is 10001\\d\\d bytes; the limit is 1000000$`),
        );
        // No more records would be sent: the task takes no input, and flushing again stops again.
        expect(await task.step()).toBe("blocked");
        await expect(task.flush()).rejects.toThrow(SendStopped);
        expect((await log.offsets(topicOf(id))).latest).toBe(0);
        expect(task.positions()[`${id}-in/0`] ?? 0).toBe(0);
      },
    );
  });

  it("shouldNotThrowStreamsExceptionOnSubsequentCallIfASendFailsWithContinueExceptionHandler", async () => {
    const id = "rc-continue";
    await withTask(
      id,
      app(id, () => "continue"),
      (storage) =>
        plantOutboxRow(storage, topicOf(id), [{ key: "1", value: "kept", timestamp: 1 }, refused(id), { key: "2", value: "kept too", timestamp: 2 }]),
      async (task, log) => {
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "3", value: "0" }]);
        expect(await task.step()).toBe("more");
        expect(task.meta()?.failure).toBeNull();
        expect(task.counters.snapshot().events.productionErrorsContinued).toBe(1);
        // The refused record is dropped; the records around it, and what follows, go out in order.
        const out = await log.fetch(topicOf(id), 0, { maxRecords: 10, maxBytes: 1 << 20 });
        expect(out.records.map((r) => r.value)).toEqual(["kept", "kept too", "0"]);
        expect(task.pendingOutboxBatches()).toBe(0);
      },
    );
  });

  it("shouldThrowStreamsExceptionOnSubsequentFlushIfFatalEvenWithContinueExceptionHandler", async () => {
    const id = "rc-fatal";
    const application = app(id, () => "continue");
    await withTask(
      id,
      application,
      async (storage, log) => {
        plantOutboxRow(storage, topicOf(id), [{ key: "3", value: "ours", timestamp: 1 }]);
        // Other records under the task's producer id, epoch and the row's sequence.
        await log.append(topicOf(id), [{ key: "3", value: "theirs" }], { producerId: `${id}-0_0`, epoch: 1_000_000, sequence: 0 });
      },
      async (task) => {
        expect(await task.step()).toBe("blocked");
        expect(task.meta()?.failure).toMatch(/^the log cannot take the outbox: /);
      },
    );
  });

  it("shouldThrowTaskMigratedExceptionOnSubsequentFlushWhenProducerFencedInCallback", async () => {
    const id = "rc-fenced";
    await withTask(
      id,
      app(id, () => "continue"),
      async (storage, log) => {
        plantOutboxRow(storage, topicOf(id), [{ key: "3", value: "0", timestamp: 1 }]);
        await log.append(topicOf(id), [{ key: "3", value: "newer" }], { producerId: `${id}-0_0`, epoch: 2_000_000, sequence: 0 });
      },
      async (task) => {
        expect(await task.step()).toBe("blocked");
        expect(task.meta()?.failure).toMatch(/^fenced: /);
      },
    );
  });

  it("shouldThrowStreamsExceptionOnUnknownTopicOrPartitionExceptionWithDefaultExceptionHandler (retried after a back-off)", async () => {
    const id = "rc-retry";
    const handled: unknown[] = [];
    await withTask(
      id,
      app(id, (_ctx, error) => {
        handled.push(error);
        return "fail";
      }),
      () => {},
      async (task, log, clock) => {
        const partition = env.LOG_PARTITION.getByName(`${id}-topic/0`);
        const attemptsLeft = () => runInDurableObject(partition, (object) => (object as unknown as { failuresToInject: number }).failuresToInject);
        await partition.injectFailures(1_000);
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "3", value: "0" }]);
        expect(await task.step()).toBe("more");
        expect(await attemptsLeft()).toBe(999);
        // Waiting: however often it is woken, it sends nothing until the back-off ends (1 s, then 2 s, …).
        for (let i = 0; i < 10; i++) expect(await task.step()).toBe("waiting");
        expect(await attemptsLeft()).toBe(999);
        expect(task.wakeAt()).toBe(START + 1_000);
        clock.now = START + 1_000;
        expect(await task.step()).toBe("waiting");
        expect(await attemptsLeft()).toBe(998);
        expect(task.wakeAt()).toBe(START + 3_000);
        await partition.injectFailures(0);
        clock.now = START + 3_000;
        expect(await task.step()).toBe("idle");
        expect((await log.fetch(topicOf(id), 0, { maxRecords: 10, maxBytes: 1 << 20 })).records.map((r) => r.value)).toEqual(["0"]);
        // Never handed to the production handler, and the task never stopped.
        expect(handled).toEqual([]);
        expect(task.meta()?.failure).toBeNull();
      },
    );
  });
});
