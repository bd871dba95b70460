/** The pure parts of the Kafka REST dialect: produce planning, the producer header, error mapping, assignment. */
import { describe, expect, it } from "vitest";
import { assignPartitions } from "../../../src/consumer-group/assignment";
import { logErrorFromDialect } from "../../../src/kafka-rest/errors";
import { metadataInRequestOrder, planProduce } from "../../../src/kafka-rest/produce";
import { formatProducerHeader, parseProducerHeader } from "../../../src/kafka-rest/producer-header";
import { InvalidRecord, LogUnavailable, OffsetOutOfRange, ProducerFenced, RecordTooLarge, UnknownTopicOrPartition } from "../../../src/log/errors";
import { partitionForKey } from "../../../src/log/partitioner";

const counts = new Map([
  ["a", 4],
  ["b", 2],
]);
const partitions = (topic: string) => {
  const n = counts.get(topic);
  if (n === undefined) throw new UnknownTopicOrPartition(topic);
  return n;
};

describe("planProduce", () => {
  it("routes explicit partitions, keys by murmur2, and keyless messages to one partition per topic", () => {
    const batches = planProduce(
      [
        { topic: "a", value: "1", partition: 3 },
        { topic: "a", value: "2", key: "alice" },
        { topic: "a", value: "3" },
        { topic: "b", value: "4" },
        { topic: "a", value: "5" },
      ],
      { partitions, now: 42, pickPartition: (n) => n - 1 },
    );
    // "alice" hashes to partition 1 of 4; keyless messages all go to the one picked (3).
    expect(partitionForKey("alice", 4)).toBe(1);
    expect(batches.map((b) => [b.topic, b.partition, b.positions])).toEqual([
      ["a", 3, [0, 2, 4]],
      ["a", 1, [1]],
      ["b", 1, [3]],
    ]);
    expect(batches[0]!.records.map((r) => r.timestamp)).toEqual([42, 42, 42]);
  });

  it("makes a batch per producer header value, strips the header and leaves its timestamps unset", () => {
    const header = (value: string) => [
      { key: "edge-producer", value },
      { key: "h", value: "x" },
    ];
    const batches = planProduce(
      [
        { topic: "a", value: "1", partition: 0, headers: header("p;0;0") },
        { topic: "a", value: "2", partition: 0 },
        { topic: "a", value: "3", partition: 0, headers: header("p;0;0") },
        { topic: "a", value: "4", partition: 0, headers: header("q;1;5") },
      ],
      { partitions, now: 42 },
    );
    expect(batches.map((b) => [b.producer, b.positions])).toEqual([
      [{ producerId: "p", epoch: 0, sequence: 0 }, [0, 2]],
      [undefined, [1]],
      [{ producerId: "q", epoch: 1, sequence: 5 }, [3]],
    ]);
    expect(batches[0]!.records).toEqual([
      { key: null, value: "1", headers: [{ key: "h", value: "x" }] },
      { key: null, value: "3", headers: [{ key: "h", value: "x" }] },
    ]);
    const metadata = metadataInRequestOrder(
      batches,
      [
        { baseOffset: 10, count: 2, duplicate: true },
        { baseOffset: 12, count: 1, duplicate: false },
        { baseOffset: 13, count: 1, duplicate: false },
      ],
      4,
      99,
    );
    expect(metadata.map((m) => [m.offset, m.timestamp, m.duplicate])).toEqual([
      [10, 99, true],
      [12, 42, false],
      [11, 99, true],
      [13, 99, false],
    ]);
  });

  it("rejects unknown topics, partitions and malformed producer headers", () => {
    expect(() => planProduce([{ topic: "zz", value: "v" }], { partitions, now: 0 })).toThrow(UnknownTopicOrPartition);
    expect(() => planProduce([{ topic: "b", value: "v", partition: 2 }], { partitions, now: 0 })).toThrow(UnknownTopicOrPartition);
    const bad = [{ key: "edge-producer", value: "p;zero;0" }];
    expect(() => planProduce([{ topic: "a", value: "v", headers: bad }], { partitions, now: 0 })).toThrow(InvalidRecord);
  });
});

describe("the edge-producer header", () => {
  it("round-trips, including ids with semicolons", () => {
    const producer = { producerId: "task;0_1", epoch: 7, sequence: 12 };
    expect(parseProducerHeader(formatProducerHeader(producer).value)).toEqual(producer);
  });

  it("refuses malformed values", () => {
    for (const value of ["", "p", "p;1", ";1;2", "p;01;2", "p;1;-2", "p;1.5;2", `${"x".repeat(513)};0;0`, "p;99999999999999999;0"]) {
      expect(parseProducerHeader(value), value).toBeNull();
    }
  });
});

describe("logErrorFromDialect", () => {
  it("restores the log error class from the code prefix", () => {
    const error = logErrorFromDialect(409, "PRODUCER_FENCED: producer p epoch 1 is fenced");
    expect(error).toBeInstanceOf(ProducerFenced);
    expect(error.message).toBe("producer p epoch 1 is fenced");
  });

  it("judges a plain endpoint's errors by status", () => {
    expect(logErrorFromDialect(401, "nope")).toBeInstanceOf(LogUnavailable);
    expect(logErrorFromDialect(404, "nope")).toBeInstanceOf(UnknownTopicOrPartition);
    expect(logErrorFromDialect(413, "nope")).toBeInstanceOf(RecordTooLarge);
    expect(logErrorFromDialect(416, "nope")).toBeInstanceOf(OffsetOutOfRange);
    expect(logErrorFromDialect(400, "NOT_A_CODE: nope")).toBeInstanceOf(InvalidRecord);
    expect(logErrorFromDialect(429, "slow down")).toBeInstanceOf(LogUnavailable);
    expect(logErrorFromDialect(502, "bad gateway")).toBeInstanceOf(LogUnavailable);
  });
});

describe("assignPartitions", () => {
  it("deals each topic's partitions round robin over its sorted subscribers", () => {
    const assignment = assignPartitions(
      [
        { instance: "c", topics: ["a"] },
        { instance: "a", topics: ["a", "b"] },
        { instance: "b", topics: ["b", "unknown"] },
      ],
      counts,
    );
    expect(Object.fromEntries(assignment)).toEqual({
      a: [
        { topic: "a", partition: 0 },
        { topic: "a", partition: 2 },
        { topic: "b", partition: 0 },
      ],
      b: [{ topic: "b", partition: 1 }],
      c: [
        { topic: "a", partition: 1 },
        { topic: "a", partition: 3 },
      ],
    });
  });
});
