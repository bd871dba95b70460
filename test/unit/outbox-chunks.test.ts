/**
 * How the outbox cuts a commit's batch before encoding it (aboutRowSized, src/task/outbox.ts):
 * a batch that encodes to well under a row stays whole; a bigger one is cut, in order, into
 * stretches that each encode to less than a row, so that nothing is encoded twice.
 */
import { describe, expect, it } from "vitest";
import { encodeBatch } from "../../src/log/record-batch";
import { fitsInOneRow } from "../../src/log/stored-batch";
import { positionHeader } from "../../src/streams/runtime/position-header";
import { aboutRowSized } from "../../src/task/outbox";

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
