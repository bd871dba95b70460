/**
 * Restored stores keep their values' timestamps (Kafka's timestamped stores restore them from the
 * changelog records' timestamps). One task instance aggregates out-of-order records; another, at a
 * new placement, restores its store from the changelog through `applyRestoreBatch` and goes on:
 * its next result must still carry the largest timestamp of the aggregate's records, which only
 * the restored value timestamp knows.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import { Materialized, Serdes, StreamsBuilder } from "../src/streams";
import { StreamTask } from "../src/task/stream-task";
import { storedEntries } from "./support/store-rows";

const id = "restore-ts";

function application(): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-events`, { key: Serdes.string(), value: Serdes.string() })
    .groupByKey()
    .count(Materialized.as(`${id}-counts`, { key: Serdes.string() }))
    .toStream()
    .to(`${id}-out`, { key: Serdes.string(), value: Serdes.number() });
  return new Application(builder.build({ applicationId: id, topics: { [`${id}-events`]: 1, [`${id}-out`]: 1 } }));
}

it("restores each value's timestamp from its changelog record, so results keep Kafka's timestamps", async () => {
  const app = application();
  const log = new DurableLog(env.LOG_PARTITION, app.catalog);
  const events = { topic: `${id}-events`, partition: 0 };
  const out = { topic: `${id}-out`, partition: 0 };
  const [changelog] = app.changelogPartitions("0_0");
  const fetchAll = async (tp: typeof out) => (await log.fetch(tp, 0, { maxRecords: 100, maxBytes: 1 << 20 })).records;

  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
    const task = new StreamTask({ application: app, log, storage: state.storage });
    await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
    await log.append(events, [
      { key: "k", value: "a", timestamp: 10 },
      { key: "k", value: "b", timestamp: 5 },
    ]);
    expect(await task.step()).toBe("more");
  });
  const records = await fetchAll(changelog!);
  // The changelog record carries the value's timestamp: the largest of the aggregate's records.
  // (The store is cached, Kafka's default: the two updates of one commit are one record.)
  expect(records.map((r) => [r.value, r.timestamp])).toEqual([["2", 10]]);

  await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@y`), async (_, state) => {
    const task = new StreamTask({ application: app, log, storage: state.storage });
    await task.assign({ taskId: "0_0", placement: "y", role: "active", epoch: 2 });
    expect(task.meta()!.state).toBe("RESTORING");
    const reply = task.applyRestoreBatch({
      ...changelog!,
      incarnation: 0,
      fromOffset: 0,
      nextOffset: records.length,
      earliest: 0,
      records,
      end: records.length,
      epoch: 2,
    });
    expect(reply.applied).toBe(true);
    const stored = () => storedEntries(state.storage.sql, `${id}-counts`).map(({ value, timestamp }) => ({ value, timestamp }));
    expect(stored()).toEqual([{ value: "2", timestamp: 10 }]);
    expect(await task.tryCompleteRestoration()).toBe(true);

    await log.append(events, [{ key: "k", value: "c", timestamp: 3 }]);
    expect(await task.step()).toBe("more");
    expect(stored()).toEqual([{ value: "3", timestamp: 10 }]);
  });
  expect((await fetchAll(out)).map((r) => [r.value, r.timestamp])).toEqual([
    ["2", 10],
    ["3", 10],
  ]);
});
