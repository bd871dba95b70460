/**
 * A cached table aggregation feeding `KTable.groupBy`: its flushes must carry, as old value, what
 * the store held before the commit (Kafka's TimestampedCacheFlushListener), or the aggregation
 * downstream subtracts the wrong row. Runs on the real runtime (StreamTask in task objects, each
 * commit taking a whole batch, so updates collapse) and is checked against the same topology on
 * TopologyTestDriver (a commit per record, nothing collapsed): the tables must end up equal.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../src/application";
import { DurableLog } from "../src/log/durable-log";
import { Materialized, Serdes, StreamsBuilder, type Topology } from "../src/streams";
import { TopologyTestDriver } from "../src/streams/testing/topology-test-driver";
import { StreamTask } from "../src/task/stream-task";
import { storedEntries } from "./support/store-rows";

const ID = "cached-old-values";
const str = Serdes.string();

/** Events per user counted (cached, Kafka's default), then how many users have each count. */
function histogramTopology(): Topology {
  const builder = new StreamsBuilder();
  builder
    .stream(`${ID}-events`, { key: str, value: str })
    .groupByKey()
    .count(Materialized.as(`${ID}-per-user`, { key: str }))
    .groupBy((user, count) => ({ key: String(count), value: user }), { key: str, value: str })
    .count(Materialized.as(`${ID}-histogram`, { key: str }))
    .toStream()
    .to(`${ID}-out`, { key: str, value: Serdes.number() });
  return builder.build({ applicationId: ID, topics: { [`${ID}-events`]: 1, [`${ID}-out`]: 1 } });
}

describe("a cached table aggregation's flushes", () => {
  it("carry the pre-commit row as old value, so a regrouping aggregation downstream stays exact", async () => {
    const topology = histogramTopology();
    const app = new Application(topology);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const oracle = new TopologyTestDriver(topology);
    const batches = [
      ["u1", "u1", "u2", "u1", "u3"],
      ["u2", "u2", "u3", "u4"],
      ["u1", "u4", "u4", "u4", "u2"],
    ];
    const histogram: Record<string, number> = {};
    for (const batch of batches) {
      await log.append(
        { topic: `${ID}-events`, partition: 0 },
        batch.map((user) => ({ key: user, value: "e" })),
      );
      for (const user of batch) oracle.pipe(`${ID}-events`, user, "e");
      for (const taskId of ["0_0", "1_0"]) {
        await runInDurableObject(env.TASK_OBJECT.getByName(`${ID}-${taskId}@x`), async (_, state) => {
          const task = new StreamTask({ application: app, log, storage: state.storage });
          await task.assign({ taskId, placement: "x", role: "active", epoch: 1 });
          for (let i = 0; i < 100 && (await task.step()) === "more"; i++);
          if (taskId === "1_0") {
            for (const row of storedEntries(state.storage.sql, `${ID}-histogram`)) {
              histogram[row.key] = Number(row.value);
            }
          }
        });
      }
      // After each commit, the same table as the driver's after the same records.
      const expected = Object.fromEntries(Object.keys(histogram).map((count) => [count, oracle.get<string, number>(`${ID}-histogram`, count)]));
      expect(histogram).toEqual(expected);
    }
    // u1: 4, u2: 4, u3: 2, u4: 4 — three users with 4 events, one with 2; the other counts were passed through.
    expect(histogram).toEqual({ "1": 0, "2": 1, "3": 0, "4": 3 });
    // Collapsed: the output holds fewer updates than the driver's.
    const sent = (await log.fetch({ topic: `${ID}-out`, partition: 0 }, 0, { maxRecords: 1000, maxBytes: 1 << 20 })).records;
    expect(sent.length).toBeLessThan(oracle.records(`${ID}-out`).length);
  });
});
