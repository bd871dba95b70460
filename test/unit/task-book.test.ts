/**
 * The task's book (src/task/task-book.ts): everything a task keeps about itself in one row — its
 * encoding, the layout that keeps the row within the cap (spilling batches to rows of their own),
 * and the rules of its entries (positions and committed offsets only grow, sequences are taken).
 */
import { describe, expect, it } from "vitest";
import { utf8Length } from "../../src/log/records";
import { MAX_ROW_BYTES } from "../../src/log/stored-batch";
import {
  advancePartitionTimes,
  advancePositions,
  decodeBook,
  emptyBook,
  inlineBatch,
  noteCommitted,
  planRow,
  setCheckpoint,
  takeSequence,
  type TaskBook,
  type TaskMeta,
} from "../../src/task/task-book";

const meta: TaskMeta = {
  taskId: "0_1",
  placement: "a",
  role: "active",
  state: "RUNNING",
  epoch: 3,
  incarnation: 2,
  nextCommit: 7,
  failure: null,
  failedAt: null,
  skips: [{ topic: "orders", partition: 1, offset: 9 }],
  lastReset: null,
  processedBefore: 4,
  shutdownRequested: false,
};

const out = { topic: "totals", partition: 1 };

function addBatch(book: TaskBook, text: string, commitId = 1, tp = out, phase = 1): void {
  const sequence = takeSequence(book, tp);
  book.batches.push(inlineBatch({ id: book.nextBatchId++, commitId, phase, ...tp, sequence, text }));
}

/** The row's size as SQLite stores it: UTF-8 bytes of both columns. */
const rowBytes = (book: TaskBook) => {
  const { row } = planRow(book);
  return utf8Length(row.header) + utf8Length(row.batches);
};

describe("the task's book", () => {
  it("reads back what it wrote: meta, checkpoints, positions, sequences and batches (UTF-8 and JSON text included)", () => {
    const book = emptyBook();
    book.meta = meta;
    setCheckpoint(book, { topic: "app-store-changelog", partition: 1 }, 42);
    advancePositions(book, { "orders/1": 10 }, { "orders/1": 3 });
    noteCommitted(book, { "orders/1": 8 });
    advancePartitionTimes(book, 1, { orders: 1_234 });
    addBatch(book, '[["k","é ✓ 😀",1]]', 1, { topic: "app-store-changelog", partition: 1 }, 0);
    addBatch(book, '[["k2","{\\"n\\":1}",2]]');
    const read = decodeBook(planRow(book).row);
    expect(read.meta).toEqual(meta);
    expect([...read.checkpoints.values()]).toEqual([{ topic: "app-store-changelog", partition: 1, offset: 42, replayed: 0 }]);
    expect([...read.inputs.values()]).toEqual([{ topic: "orders", partition: 1, offset: 10, committed: 8, processed: 3, partitionTime: 1_234 }]);
    expect([...read.sequences.values()].map((s) => [s.tp.topic, s.next])).toEqual([
      ["app-store-changelog", 1],
      ["totals", 1],
    ]);
    expect(read.batches).toEqual(book.batches);
    expect(read.nextBatchId).toBe(3);
  });

  it("keeps every batch inline while the row fits, and spills the ones that would take it over the cap (oldest stay inline)", () => {
    const book = emptyBook();
    book.meta = meta;
    const big = (c: string) => `[["k","${c.repeat(400_000)}",1]]`;
    addBatch(book, big("a"));
    addBatch(book, big("b"));
    expect(planRow(book).spill).toEqual([]);
    addBatch(book, big("c"));
    const { row, spill } = planRow(book);
    expect(spill.map((b) => b.id)).toEqual([3]);
    expect(utf8Length(row.header) + utf8Length(row.batches)).toBeLessThanOrEqual(MAX_ROW_BYTES);
    // A spilled batch is in the header without its records.
    const read = decodeBook(row);
    expect(read.batches.map((b) => [b.id, b.spilled, b.text?.length ?? -1])).toEqual([
      [1, false, big("a").length],
      [2, false, big("b").length],
      [3, true, -1],
    ]);
  });

  it("counts UTF-8 bytes, not characters, against the cap", () => {
    const book = emptyBook();
    // 3 bytes per character: 350,000 characters are 1,050,000 bytes.
    addBatch(book, `[["k","${"✓".repeat(350_000)}",1]]`);
    expect(planRow(book).spill.map((b) => b.id)).toEqual([1]);
    const ascii = emptyBook();
    addBatch(ascii, `[["k","${"x".repeat(350_000)}",1]]`);
    expect(planRow(ascii).spill).toEqual([]);
    expect(rowBytes(ascii)).toBeLessThanOrEqual(MAX_ROW_BYTES);
  });

  it("leaves a batch spilled once it is (room freed later takes only new batches)", () => {
    const book = emptyBook();
    addBatch(book, `[["k","${"a".repeat(700_000)}",1]]`);
    addBatch(book, `[["k","${"b".repeat(700_000)}",1]]`);
    const { spill } = planRow(book);
    expect(spill.map((b) => b.id)).toEqual([2]);
    // As writing the book marks them (task-book-row.ts), then the first is acknowledged.
    book.batches = book.batches.filter((b) => b.id !== 1).map((b) => ({ ...b, spilled: true, bytes: 0 }));
    addBatch(book, '[["k","c",1]]');
    const plan = planRow(book);
    expect(plan.spill).toEqual([]);
    expect(decodeBook(plan.row).batches.map((b) => [b.id, b.spilled])).toEqual([
      [2, true],
      [3, false],
    ]);
  });

  it("refuses a row whose batches do not add up to what its header says", () => {
    const book = emptyBook();
    addBatch(book, '[["k","v",1]]');
    const { row } = planRow(book);
    expect(() => decodeBook({ header: row.header, batches: `${row.batches}x` })).toThrow(/inconsistent/);
  });

  it("moves positions and committed offsets only forward, and adds the records processed", () => {
    const book = emptyBook();
    advancePositions(book, { "orders/0": 5 }, { "orders/0": 5 });
    advancePositions(book, { "orders/0": 3 }, { "orders/0": 1 });
    expect(book.inputs.get("orders/0")).toMatchObject({ offset: 5, processed: 6, committed: null, partitionTime: -1 });
    noteCommitted(book, { "orders/0": 4 });
    noteCommitted(book, { "orders/0": 2 });
    expect(book.inputs.get("orders/0")?.committed).toBe(4);
    // An offset the group holds for a partition not processed yet positions it there.
    noteCommitted(book, { "orders/1": 7 });
    expect(book.inputs.get("orders/1")).toMatchObject({ topic: "orders", partition: 1, offset: 7, committed: 7, processed: 0 });
  });

  it("moves partition times forward, only for partitions positioned", () => {
    const book = emptyBook();
    advancePositions(book, { "orders/2": 1 });
    advancePartitionTimes(book, 2, { orders: 100, other: 50 });
    advancePartitionTimes(book, 2, { orders: 90 });
    expect(book.inputs.get("orders/2")?.partitionTime).toBe(100);
    expect(book.inputs.has("other/2")).toBe(false);
  });

  it("takes producer sequences in order per partition", () => {
    const book = emptyBook();
    expect([takeSequence(book, out), takeSequence(book, out), takeSequence(book, { topic: "x", partition: 0 })]).toEqual([0, 1, 0]);
  });
});
