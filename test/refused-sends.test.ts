/**
 * Records the log refuses when the outbox sends them (issue #31: a dead letter too large for the
 * log was sent again about ten times a second, for ever, while its task looked RUNNING): the
 * production handler decides, the outbox is repaired in one transaction, and producer sequences
 * stay whole. On a task of the real runtime, its outbox sent through the real log; the refused
 * rows are planted as an earlier version committed them (test/support/outbox-rows.ts).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import { Serdes, StreamsBuilder, type BuildOptions } from "../src/streams";
import type { CommitStep } from "../src/task/protocol";
import { StreamTask } from "../src/task/stream-task";
import { oversizedDeadLetter, plantOutboxRow } from "./support/outbox-rows";

/** in → out, and a store "seen" counting keys (so the task has a changelog). */
function app(id: string, options: Partial<BuildOptions> = {}): Application {
  const builder = new StreamsBuilder();
  const stream = builder.stream(`${id}-in`, { key: Serdes.string(), value: Serdes.string() });
  stream.to(`${id}-out`, { key: Serdes.string(), value: Serdes.string() });
  stream.groupByKey().count();
  return new Application(builder.build({ applicationId: id, topics: { [`${id}-in`]: 1, [`${id}-out`]: 1, [`${id}-dlq`]: 1 }, ...options }));
}

const records = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, value: `v${from + i}`, timestamp: 1 }));

async function withTask(
  id: string,
  application: Application,
  before: (storage: DurableObjectStorage) => void,
  body: (t: { task: StreamTask; log: DurableLog; restart: (onCommitStep?: (step: CommitStep) => void) => StreamTask }) => Promise<void>,
): Promise<void> {
  const log = new DurableLog(env.LOG_PARTITION, application.catalog);
  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_object, state) => {
    const restart = (onCommitStep?: (step: CommitStep) => void) => new StreamTask({ application, log, storage: state.storage, onCommitStep });
    await restart().assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    before(state.storage);
    await body({ task: restart(), log, restart });
  });
}

const values = async (log: DurableLog, topic: string) => (await log.fetch({ topic, partition: 0 }, 0, { maxRecords: 100, maxBytes: 4 << 20 })).records;

describe("a batch the log refuses at send time", () => {
  it("with nothing left to send, goes, and the partition's later batches move down a sequence: the log takes them in order", async () => {
    const id = "refused-renumber";
    const out = { topic: `${id}-out`, partition: 0 };
    await withTask(
      id,
      app(id, { onProductionError: "continue" }),
      (storage) => {
        plantOutboxRow(storage, out, [oversizedDeadLetter("a", { topic: `${id}-in`, partition: 0, offset: 0 })]);
        plantOutboxRow(storage, out, records(2));
        plantOutboxRow(storage, out, records(1, 2));
      },
      async ({ task, log }) => {
        expect(await task.step()).toBe("idle");
        expect((await values(log, out.topic)).map((r) => r.value)).toEqual(["v0", "v1", "v2"]);
        expect(task.pendingOutboxBatches()).toBe(0);
        expect(task.counters.snapshot().events.productionErrorsContinued).toBe(1);
        // Sequences went on from where the log had them: the next commit's batch is taken too.
        await log.append({ topic: `${id}-in`, partition: 0 }, [{ key: "k3", value: "v3" }]);
        expect(await task.step()).toBe("more");
        expect((await values(log, out.topic)).map((r) => r.value)).toEqual(["v0", "v1", "v2", "v3"]);
      },
    );
  });

  it("converges after a crash before the repair (decided again) and after it (what is left goes to the log once)", async () => {
    const id = "refused-crash";
    const out = { topic: `${id}-out`, partition: 0 };
    await withTask(
      id,
      app(id, { onProductionError: "continue" }),
      (storage) => plantOutboxRow(storage, out, [...records(1), oversizedDeadLetter("a", { topic: `${id}-in`, partition: 0, offset: 0 }), ...records(1, 1)]),
      async ({ restart, log }) => {
        // Dies once the log has answered, before anything is decided.
        const dying = restart((step) => {
          if (step === "mid-send") throw new Error("process died");
        });
        await expect(dying.step()).rejects.toThrow("process died");
        // The row was split in three batches (the refused record is nearly a row by itself), sent
        // together: the first was taken, the refused one not, the one behind it out of sequence.
        expect((await values(log, out.topic)).map((r) => r.value)).toEqual(["v0"]);
        // Decided and repaired; dies as what is left is sent, before its acknowledgement is written down.
        let sends = 0;
        const again = restart((step) => {
          if (step === "mid-send" && ++sends === 2) throw new Error("process died");
        });
        await expect(again.step()).rejects.toThrow("process died");
        const revived = restart();
        expect(await revived.step()).toBe("idle");
        expect((await values(log, out.topic)).map((r) => r.value)).toEqual(["v0", "v1"]);
        expect(revived.pendingOutboxBatches()).toBe(0);
      },
    );
  });

  it("dead-lettered: the record itself, whose dead letter a log that refused it takes no more: the task stops, naming the source record", async () => {
    const id = "refused-dlq";
    const out = { topic: `${id}-out`, partition: 0 };
    // A record refused for its timestamp fits in a dead letter; the oversized one cannot.
    const badlyStamped = { key: "t", value: "late", timestamp: -5, headers: [{ key: "edge-streams.position", value: `${id}-in/0/3` }] };
    await withTask(
      id,
      app(id, { onProductionError: { deadLetterTopic: `${id}-dlq` } }),
      (storage) => {
        plantOutboxRow(storage, out, [badlyStamped]);
        plantOutboxRow(storage, out, [oversizedDeadLetter("a", { topic: `${id}-in`, partition: 0, offset: 9 })]);
      },
      async ({ task, log }) => {
        expect(await task.step()).toBe("blocked");
        // The first could not be dead-lettered either: its timestamp is what the log refuses.
        expect(task.meta()?.failure).toMatch(/its dead letter cannot be written: the dead letter of refused-dlq-in\/0 offset 3 would have timestamp -5/);
        expect(await values(log, `${id}-dlq`)).toEqual([]);
      },
    );
  });

  it("of a changelog always stops the task: its store already holds the write", async () => {
    const id = "refused-changelog";
    const application = app(id, { onProductionError: "continue" });
    const changelog = application.changelogPartitions("0_0")[0]!;
    await withTask(
      id,
      application,
      (storage) =>
        plantOutboxRow(
          storage,
          changelog,
          [{ ...oversizedDeadLetter("a", { topic: "x", partition: 0, offset: 0 }), headers: [{ key: "edge-streams.position", value: `${id}-in/0/4` }] }],
          "changelog",
        ),
      async ({ task }) => {
        expect(await task.step()).toBe("blocked");
        expect(task.meta()?.failure).toMatch(/a changelog must hold every write of its store/);
      },
    );
  });
});
