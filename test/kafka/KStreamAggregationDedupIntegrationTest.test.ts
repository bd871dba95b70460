/**
 * Ported from Kafka Streams' KStreamAggregationDedupIntegrationTest (caching on, 10 MiB, a long
 * commit interval): `groupBy(value).reduce` over a three-partition input, its results deduplicated
 * by the record cache. Five records are produced before the application starts and five after, all
 * before its first commit; Kafka's test waits for the final record of each key
 * (`waitUntilFinalKeyValueTimestampRecordsReceived`). On the real runtime (StreamTask in task
 * objects, each task's first commit taking all of its input) the output holds exactly those final
 * records, once each: nothing before them, nothing after.
 *
 * Not ported yet: `shouldReduceWindowed` and `shouldGroupByKey` (windowed stores are not cached yet).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../../src/application";
import { DurableLog } from "../../src/log/durable-log";
import { partitionForKey } from "../../src/log/partitioner";
import { Materialized, StreamsBuilder } from "../../src/streams";
import { StreamTask } from "../../src/task/stream-task";
import { INTEGER, STRING } from "../unit/kafka/support";

const ID = "dedup-reduce";
const INPUT = `${ID}-stream-one`;
const OUTPUT = `${ID}-output`;

function reduceTopology(): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(INPUT, { key: INTEGER, value: STRING })
    .groupBy((_key, value) => value, { key: STRING, value: STRING })
    .reduce((value1, value2) => `${value1}:${value2}`, Materialized.as("reduce-by-key"))
    .toStream()
    .to(OUTPUT, { key: STRING, value: STRING });
  return new Application(builder.build({ applicationId: ID, topics: { [INPUT]: 3, [OUTPUT]: 1 } }));
}

/** Runs one task in its own object until it has nothing left to do. */
async function runTask(app: Application, log: DurableLog, taskId: string): Promise<void> {
  await runInDurableObject(env.TASK_OBJECT.getByName(`${ID}-${taskId}@x`), async (_, state) => {
    const task = new StreamTask({ application: app, log, storage: state.storage });
    await task.assign({ taskId, placement: "x", role: "active", epoch: 1 });
    for (let i = 0; i < 100 && (await task.step()) === "more"; i++);
  });
}

describe("KStreamAggregationDedupIntegrationTest", () => {
  it("shouldReduce", async () => {
    const app = reduceTopology();
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const produceMessages = async (timestamp: number) => {
      for (const [key, value] of [
        [1, "A"],
        [2, "B"],
        [3, "C"],
        [4, "D"],
        [5, "E"],
      ] as const) {
        await log.append({ topic: INPUT, partition: partitionForKey(String(key), 3) }, [{ key: String(key), value, timestamp }]);
      }
    };
    await produceMessages(Date.now() - 1000);
    // The application starts (its tasks are created), then the second batch arrives before its first commit.
    const timestamp = Date.now();
    await produceMessages(timestamp);
    for (const subtopology of [0, 1]) for (const partition of [0, 1, 2]) await runTask(app, log, `${subtopology}_${partition}`);

    const output = (await log.fetch({ topic: OUTPUT, partition: 0 }, 0, { maxRecords: 100, maxBytes: 1 << 20 })).records;
    const received = output.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp }));
    expect(received.sort((a, b) => (a.key! < b.key! ? -1 : 1))).toEqual([
      { key: "A", value: "A:A", timestamp },
      { key: "B", value: "B:B", timestamp },
      { key: "C", value: "C:C", timestamp },
      { key: "D", value: "D:D", timestamp },
      { key: "E", value: "E:E", timestamp },
    ]);
  });
});
