/**
 * Ported from Kafka Streams' ResetPartitionTimeIntegrationTest: the timestamp extractor receives
 * the partition time, and it survives a restart — Kafka commits it in the offset's metadata; a
 * task object commits it with its input positions, in the commit's transaction. Run on the real
 * runtime (a StreamTask on a task object's SQLite storage, the embedded log) and restarted as an
 * object restart does: a new StreamTask on the same storage. Also run through TopologyTestDriver.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Application } from "../../src/application";
import { DurableLog } from "../../src/log/durable-log";
import { Serdes, StreamsBuilder, TopologyTestDriver } from "../../src/streams";
import { StreamTask } from "../../src/task/stream-task";
import { STRING, TestInputTopic } from "../unit/kafka/support";

const NOW = 1_700_000_000_000;
let lastRecordedTimestamp = -2;

/** Kafka's MaxTimestampExtractor: remembers the partition time it was given, keeps the record's time. */
function topology(id: string) {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-input`, {
      key: Serdes.string(),
      value: Serdes.string(),
      timestampExtractor: (record, partitionTime) => {
        lastRecordedTimestamp = partitionTime;
        return record.timestamp;
      },
    })
    .to(`${id}-output-raw`, { key: Serdes.string(), value: Serdes.string() });
  return builder.build({ applicationId: id, topics: { [`${id}-input`]: 1, [`${id}-output-raw`]: 1 } });
}

describe("ResetPartitionTimeIntegrationTest", () => {
  it("shouldPreservePartitionTimeOnKafkaStreamRestart", async () => {
    const id = "reset-partition-time";
    const app = new Application(topology(id));
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-input`, partition: 0 };
    const outputRaw = { topic: `${id}-output-raw`, partition: 0 };
    const output = async () =>
      (await log.fetch(outputRaw, 0, { maxRecords: 100, maxBytes: 1 << 20 })).records.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp }));
    await runInDurableObject(env.TASK_OBJECT.getByName(`${id}@x`), async (_, state) => {
      const start = () => new StreamTask({ application: app, log, storage: state.storage });
      let kafkaStreams = start();
      await kafkaStreams.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      // start sending some records to have partition time committed
      await log.append(input, [{ key: "k3", value: "v3", timestamp: NOW + 5000 }]);
      expect(await kafkaStreams.step()).toBe("more");
      expect(await output()).toEqual([{ key: "k3", value: "v3", timestamp: NOW + 5000 }]);
      expect(lastRecordedTimestamp).toBe(-1);
      lastRecordedTimestamp = -2;

      // The object restarts: a new StreamTask on the same storage, with new processors.
      kafkaStreams = start();
      // resend some records and retrieve the last committed timestamp
      await log.append(input, [{ key: "k5", value: "v5", timestamp: NOW + 4999 }]);
      expect(await kafkaStreams.step()).toBe("more");
      expect((await output()).slice(1)).toEqual([{ key: "k5", value: "v5", timestamp: NOW + 4999 }]);
      expect(lastRecordedTimestamp).toBe(NOW + 5000);
    });
  });

  it("shouldPreservePartitionTimeOnKafkaStreamRestart, through TopologyTestDriver", () => {
    const id = "reset-partition-time-driver";
    const driver = new TopologyTestDriver(topology(id));
    const input = new TestInputTopic(driver, `${id}-input`, STRING, STRING);
    input.pipeInput("k3", "v3", NOW + 5000);
    expect(lastRecordedTimestamp).toBe(-1);
    lastRecordedTimestamp = -2;
    driver.restoreTask("0_0");
    input.pipeInput("k5", "v5", NOW + 4999);
    expect(lastRecordedTimestamp).toBe(NOW + 5000);
    expect(driver.records(`${id}-output-raw`).map((r) => [r.key, r.timestamp])).toEqual([
      ["k3", NOW + 5000],
      ["k5", NOW + 4999],
    ]);
  });
});

describe("RecordQueueTest", () => {
  it("shouldPassPartitionTimeToTimestampExtractor / shouldTrackPartitionTimeAsMaxProcessedTimestamp", () => {
    // Kafka's queue extracts one record ahead of processing; here each record is extracted as it is
    // processed, so the extractor sees the partition time of the records before it.
    const seen: number[] = [];
    const builder = new StreamsBuilder();
    builder.stream("topic", { timestampExtractor: (record, partitionTime) => (seen.push(partitionTime), record.timestamp) }).to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "record-queue", topics: { topic: 1, out: 1 } }));
    // add three 3 out-of-order records with timestamp 2, 1, 3, 4
    for (const timestamp of [2, 1, 3, 4]) driver.pipe("topic", '"k"', '"v"', { timestamp });
    expect(seen).toEqual([-1, 2, 2, 3]);
    expect(driver.tasks.get("0_0")!.partitionTimes()).toEqual({ topic: 4 });
  });
});
