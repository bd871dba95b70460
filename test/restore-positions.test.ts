/**
 * The input position a restore derives (I5) from the header every changelog record carries, in
 * both forms it has had: `<topic>/<partition>/<offset>`, and the JSON object changelogs written
 * before it hold. A changelog with records of both forms restores to the position of its newest
 * record, whichever form names it. A restore window (src/restore/compacted-window.ts) that
 * compacted away the only record naming a partition still restores to its position.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { CompactedWindow } from "../src/restore/compacted-window";
import { POSITION_HEADER, positionHeader } from "../src/streams/runtime/position-header";
import { StreamTask } from "../src/task/stream-task";
import { totalsApp } from "./support/totals-app";
import { topicPartition } from "../src/names";

describe("restoring input positions", () => {
  it("reads the position from changelog records of either header form", async () => {
    const id = "mixed-positions";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-orders`, partition: 0 };
    const changelog = app.changelogPartitions("0_0")[0]!;
    const jsonForm = (offset: number) => ({ key: POSITION_HEADER, value: JSON.stringify({ topic: input.topic, partition: 0, offset }) });
    // Written before the short form (offsets 3 and 7), then after it (8), and a key last written before it.
    await log.append(changelog, [
      { key: "a", value: JSON.stringify({ count: 1, sum: 5 }), timestamp: 1, headers: [jsonForm(3)] },
      { key: "b", value: JSON.stringify({ count: 1, sum: 2 }), timestamp: 2, headers: [jsonForm(7)] },
      { key: "a", value: JSON.stringify({ count: 2, sum: 9 }), timestamp: 3, headers: [positionHeader({ ...input, offset: 8 })] },
    ]);
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const task = new StreamTask({ application: app, log, storage: state.storage });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      // Two restore batches: the records of the old form alone, then the newer one.
      for (const [from, count, position] of [
        [0, 2, 8],
        [2, 1, 9],
      ] as const) {
        const fetched = await log.fetch(changelog, from, { maxRecords: count, maxBytes: 1 << 20 });
        const reply = task.applyRestoreBatch({
          ...changelog,
          incarnation: task.meta()!.incarnation,
          fromOffset: from,
          nextOffset: fetched.nextOffset,
          earliest: 0,
          end: fetched.latest,
          records: fetched.records,
        });
        expect(reply.applied).toBe(true);
        expect(task.positions()[topicPartition(input)]).toBe(position);
      }
      expect(await task.tryCompleteRestoration()).toBe(true);
      expect(JSON.parse(task.queries.get(`${id}-totals`, "a")!)).toEqual({ count: 2, sum: 9 });
      expect(JSON.parse(task.queries.get(`${id}-totals`, "b")!)).toEqual({ count: 1, sum: 2 });
    });
  });

  it("restores the positions a window's compacted away records named", async () => {
    const id = "window-positions";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const p0 = { topic: `${id}-orders`, partition: 0 };
    const p1 = { topic: `${id}-orders`, partition: 1 };
    const changelog = app.changelogPartitions("0_0")[0]!;
    // Key "a" is written from partition 1, then again from partition 0: a window keeps the second only.
    await log.append(changelog, [
      { key: "a", value: JSON.stringify({ count: 1, sum: 5 }), timestamp: 1, headers: [positionHeader({ ...p1, offset: 4 })] },
      { key: "b", value: JSON.stringify({ count: 1, sum: 2 }), timestamp: 2, headers: [positionHeader({ ...p0, offset: 6 })] },
      { key: "a", value: JSON.stringify({ count: 2, sum: 9 }), timestamp: 3, headers: [positionHeader({ ...p0, offset: 7 })] },
    ]);
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const task = new StreamTask({ application: app, log, storage: state.storage });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      const fetched = await log.fetch(changelog, 0, { maxRecords: 10, maxBytes: 1 << 20 });
      const window = new CompactedWindow(0, 1 << 20);
      window.add(fetched);
      expect(window.records().map((r) => r.offset)).toEqual([1, 2]);
      const reply = task.applyRestoreBatch({
        ...changelog,
        incarnation: task.meta()!.incarnation,
        fromOffset: 0,
        nextOffset: window.nextOffset,
        earliest: 0,
        end: fetched.latest,
        records: window.records(),
        recordsRead: window.recordsRead,
        positions: window.positions(),
      });
      expect(reply).toMatchObject({ applied: true, checkpoint: 3, caughtUp: true });
      expect(task.positions()).toMatchObject({ [topicPartition(p0)]: 8, [topicPartition(p1)]: 5 });
      expect(task.replayed().get(topicPartition(changelog))).toBe(3);
      expect(JSON.parse(task.queries.get(`${id}-totals`, "a")!)).toEqual({ count: 2, sum: 9 });
      expect(JSON.parse(task.queries.get(`${id}-totals`, "b")!)).toEqual({ count: 1, sum: 2 });
    });
  });
});
