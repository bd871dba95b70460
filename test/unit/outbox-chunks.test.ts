/**
 * How the outbox cuts a commit's batch before encoding it (aboutRowSized, src/task/outbox.ts):
 * a batch that encodes to well under a row stays whole; a bigger one is cut, in order, into
 * stretches that each encode to less than a row, so that nothing is encoded twice.
 */
import { describe, expect, it } from "vitest";
import { encodeBatch } from "../../src/log/record-batch";
import { fitsInOneRow } from "../../src/log/stored-batch";
import { positionHeader } from "../../src/streams/runtime/position-header";
import type { ProducerRecord, TopicPartition } from "../../src/log/types";
import { aboutRowSized, estimatedChars, type Outbox } from "../../src/task/outbox";
import { RecordCollector } from "../../src/task/record-collector";

const record = (i: number, valueChars: number) => ({
  key: `customer-${i}`,
  value: JSON.stringify({ count: i, pad: "x".repeat(valueChars) }),
  headers: [positionHeader({ topic: "orders", partition: 0, offset: i })],
});

describe("aboutRowSized", () => {
  it("keeps a batch that encodes to well under a row whole", () => {
    const records = Array.from({ length: 1000 }, (_, i) => record(i, 20));
    const chunks = aboutRowSized(records);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toBe(records);
  });

  it("cuts a bigger batch, in order, into stretches that each fit in a row", () => {
    const records = Array.from({ length: 12_000 }, (_, i) => record(i, 120));
    const whole = encodeBatch(records)!.text;
    expect(fitsInOneRow(whole, records.length)).toBe(false);
    const chunks = aboutRowSized(records);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flat()).toEqual(records);
    for (const chunk of chunks) expect(fitsInOneRow(encodeBatch(chunk)!.text, chunk.length)).toBe(true);
  });

  it("gives a record bigger than a chunk a stretch of its own", () => {
    const records = [record(0, 10), record(1, 800_000), record(2, 10)];
    expect(aboutRowSized(records).map((c) => c.length)).toEqual([1, 1, 1]);
  });
});

describe("the record collector", () => {
  it("hands the outbox each batch with its records' estimate, as aboutRowSized counts them (a batch within a chunk is not gone over again)", () => {
    const added: { tp: TopicPartition; records: readonly ProducerRecord[]; estimated: number | undefined }[] = [];
    const outbox = {
      joinableCommit: (commitId: number) => commitId,
      add: (_commit: number, _phase: number, tp: TopicPartition, records: readonly ProducerRecord[], estimated?: number) => {
        added.push({ tp, records, estimated });
      },
    } as unknown as Outbox;
    const collector = new RecordCollector(() => 2, new Set(["store-changelog"]));
    for (let i = 0; i < 50; i++) {
      const headers = [positionHeader({ topic: "orders", partition: 0, offset: i })];
      collector.send({ topic: "store-changelog", partition: 0, key: `customer-${i}`, value: i % 7 === 0 ? null : `{"n":${i},"é":"ü"}`, timestamp: i, headers });
      collector.send({ topic: "totals", key: i % 5 === 0 ? null : `customer-${i}`, value: `{"n":${i}}`, timestamp: i, headers: i % 3 === 0 ? [] : headers });
    }
    collector.writeTo(outbox, 1);
    expect(added.length).toBeGreaterThan(1);
    for (const { records, estimated } of added) expect(estimated).toBe(records.reduce((sum, r) => sum + estimatedChars(r), 0));
  });
});
