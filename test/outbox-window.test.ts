/**
 * A commit of more than five 1 MiB rows to one partition (big values, a fan-out) is resent after
 * its acknowledgements were lost: the log answers retries only for the last five batches of a
 * producer (as Kafka does), so the sender never has more than that unrecorded in one partition.
 * Without that window, every resend of the first rows was refused as out of order, for ever: the
 * task could neither process, be revoked nor be wiped.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LogUnavailable, unwrap } from "../src/log/errors";
import { topicConfig } from "../src/log/topic-config";
import type { AppendResult, BatchMeasure, Log, ProducerId, TopicPartition } from "../src/log/types";
import type { Application } from "../src/application";
import { Outbox } from "../src/task/outbox";
import { OutboxSender } from "../src/task/outbox-sender";
import { sendable } from "../src/task/send-window";
import { TaskStorage } from "../src/task/task-storage";

const tp: TopicPartition = { topic: "outbox-window-out", partition: 0 };
const partition = () => env.LOG_PARTITION.getByName("outbox-window-out-p0");

describe("the sender's window of unrecorded batches", () => {
  it("takes the longest prefix that keeps each partition within the log's memory", () => {
    const a = { topic: "t", partition: 0 };
    const b = { topic: "t", partition: 1 };
    expect(sendable([a, a, b, a, a, a, a], new Map())).toHaveLength(6);
    expect(sendable([a, b, b], new Map([["t/0", 5]]))).toHaveLength(0);
    expect(sendable([b, a, a], new Map([["t/0", 4]]))).toHaveLength(2);
  });

  it("a commit of seven 900 KB records whose acknowledgements were lost is delivered once on retry", async () => {
    let loseAcks = true;
    const appendEncoded = async (at: TopicPartition, encoded: string, producer?: ProducerId, measure?: BatchMeasure): Promise<AppendResult> => {
      const result = unwrap(await partition().appendEncoded(at, encoded, producer, topicConfig("user"), undefined, measure));
      if (loseAcks) throw new LogUnavailable("the acknowledgement was lost (the sender died after the append)");
      return result;
    };
    const log = {
      appendEncoded,
      append: () => Promise.reject(new Error("the outbox sends encoded batches")),
      commitOffset: () => Promise.resolve(),
    } as unknown as Log;
    const application = {
      applicationId: "outbox-window",
      groupId: "outbox-window",
      inputPartitions: () => [],
      isGlobalInput: () => false,
    } as unknown as Application;

    const outcome = await runInDurableObject(env.TASK_OBJECT.getByName("outbox-window@a"), async (_object, state) => {
      const storage = new TaskStorage(state.storage);
      const outbox = new Outbox(storage);
      const sender = new OutboxSender({ application, log, storage, outbox, fail: () => {} });
      storage.transaction(() => {
        storage.writeMeta({
          taskId: "0_0",
          placement: "a",
          role: "active",
          state: "RUNNING",
          epoch: 1,
          incarnation: 0,
          nextCommit: 2,
          failure: null,
          shutdownRequested: false,
        });
        outbox.add(
          1,
          1,
          tp,
          Array.from({ length: 7 }, (_, i) => ({ key: `k${i}`, value: "x".repeat(900_000) })),
        );
      });
      const rows = outbox.pendingBatches();
      const first = await sender.flush().then(
        () => "flushed",
        (error: unknown) => String(error),
      );
      loseAcks = false;
      await sender.flush();
      return { rows, first, left: outbox.pendingBatches() };
    });

    expect(outcome.rows).toBeGreaterThan(5);
    expect(outcome.first).toMatch(/acknowledgement was lost/);
    expect(outcome.left).toBe(0);
    // Every record once: the retries were answered as retries, not appended again.
    expect(unwrap(await partition().offsets(tp)).latest).toBe(7);
  });
});
