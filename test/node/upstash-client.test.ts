/**
 * The unmodified `@upstash/kafka` client against a real `wrangler dev`: everything it can call on
 * the `/kafka` endpoint works, and wrong credentials are refused.
 */
import { Kafka, UpstashError } from "@upstash/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev";

let dev: WranglerDev;
let kafka: Kafka;

beforeAll(async () => {
  dev = await startWranglerDev({ topics: { "client-a": 3, "client-b": 2, "client-c": 1 } });
  kafka = new Kafka({ url: `${dev.url}/kafka`, username: "edge", password: dev.token });
});

afterAll(async () => {
  await dev?.stop();
});

describe("@upstash/kafka against Edge Streams", () => {
  it("lists topics with their partition counts", async () => {
    expect(await kafka.admin().topics()).toMatchObject({ "client-a": 3, "client-b": 2, "client-c": 1, orders: 4 });
  });

  it("produces one message and many, and fetches them back", async () => {
    const producer = kafka.producer();
    const one = await producer.produce(
      "client-a",
      { hello: "world" },
      { key: "alice", headers: [{ key: "trace", value: "t1" }], timestamp: 1_700_000_000_000 },
    );
    expect(one).toEqual({ topic: "client-a", partition: partitionForKey("alice", 3), offset: 0, timestamp: 1_700_000_000_000, duplicate: false });
    const many = await producer.produceMany([
      { topic: "client-a", value: "first", partition: 0 },
      { topic: "client-c", value: "elsewhere" },
      { topic: "client-a", value: "second", partition: 0 },
    ]);
    expect(many.map((m) => [m.topic, m.partition])).toEqual([
      ["client-a", 0],
      ["client-c", 0],
      ["client-a", 0],
    ]);
    expect(many[2]!.offset).toBe(many[0]!.offset + 1);

    const consumer = kafka.consumer();
    const fetched = await consumer.fetch({ topic: "client-a", partition: one.partition, offset: 0 });
    expect(fetched[0]).toMatchObject({ offset: 0, key: "alice", value: '{"hello":"world"}', headers: [{ key: "trace", value: "t1" }] });
    const both = await consumer.fetch({
      topicPartitionOffsets: [
        { topic: "client-a", partition: 0, offset: many[0]!.offset },
        { topic: "client-c", partition: 0, offset: 0 },
      ],
    });
    expect(both.map((m) => m.value).sort()).toEqual(["elsewhere", "first", "second"]);
  });

  it("answers topic offsets for earliest, latest and a timestamp", async () => {
    const producer = kafka.producer();
    await producer.produce("client-b", "old", { partition: 1, timestamp: 1_000 });
    await producer.produce("client-b", "new", { partition: 1, timestamp: 2_000 });
    const admin = kafka.admin();
    const tp = { topic: "client-b", partition: 1 };
    expect(await admin.topicPartitionOffsets({ timestamp: "earliest", topicPartition: tp })).toEqual([{ ...tp, offset: 0 }]);
    expect(await admin.topicPartitionOffsets({ timestamp: "latest", topicPartitions: [tp] })).toEqual([{ ...tp, offset: 2 }]);
    expect(await admin.topicPartitionOffsets({ timestamp: 1_500, topicPartition: tp })).toEqual([{ ...tp, offset: 1 }]);
  });

  it("consumes with a group, commits, reads committed offsets, lists and removes consumers", async () => {
    const producer = kafka.producer();
    await producer.produceMany([0, 1, 0].map((partition, i) => ({ topic: "client-b", value: `group-${i}`, partition })));
    const consumer = kafka.consumer();
    const member = { consumerGroupId: "node-group", instanceId: "node-1" };
    const messages = await consumer.consume({ ...member, topics: ["client-b"], autoOffsetReset: "earliest", autoCommit: false });
    expect(messages.map((m) => m.value).sort()).toEqual(["group-0", "group-1", "group-2", "new", "old"]);
    const topicPartitions = [0, 1].map((partition) => ({ topic: "client-b", partition }));
    expect(await consumer.committed({ ...member, topicPartitions })).toEqual(topicPartitions.map((tp) => ({ ...tp, offset: -1 })));

    await consumer.commit(member);
    const ends = await kafka.admin().topicPartitionOffsets({ timestamp: "latest", topicPartitions });
    expect(await consumer.committed({ ...member, topicPartitions })).toEqual(ends);
    await consumer.commit({ ...member, offset: { topic: "client-b", partition: 0, offset: 1 } });
    expect(await kafka.admin().committedOffsets({ ...member, topicPartition: { topic: "client-b", partition: 0 } })).toEqual([
      { topic: "client-b", partition: 0, offset: 1 },
    ]);

    expect(await kafka.admin().consumers()).toContainEqual({
      name: "node-group",
      instances: [{ name: "node-1", topics: [{ topic: "client-b", partitions: [0, 1] }] }],
    });
    await kafka.admin().removeConsumerInstance("node-group", "node-1");
    expect((await kafka.admin().consumers()).map((g) => g.name)).not.toContain("node-group");
  });

  it("refuses a wrong password: 401 with the dialect's body", async () => {
    const response = await fetch(`${dev.url}/kafka/topics`, { headers: { authorization: `Basic ${btoa("edge:wrong")}` } });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: expect.stringMatching(/unauthorized/), status: 401 });
  });

  it("makes the client reject a wrong password with UpstashError 401 (after its own ~15 s of retries)", async () => {
    const wrong = new Kafka({ url: `${dev.url}/kafka`, username: "edge", password: "wrong" });
    const error = await wrong
      .admin()
      .topics()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(UpstashError);
    expect((error as UpstashError).status).toBe(401);
  }, 40_000);
});
