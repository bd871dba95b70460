/** The freshly appended rows a compacted partition keeps parsed (src/log/partition/fresh-rows.ts): in memory. */
import { describe, expect, it } from "vitest";
import { FreshRows } from "../../src/log/partition/fresh-rows";
import type { Entry } from "../../src/log/record-batch";

const rowOf = (n: number, tag: string): { text: string; entries: Entry[] } => {
  const entries: Entry[] = Array.from({ length: n }, (_, i) => [`k${i}`, tag, null]);
  return { text: JSON.stringify(entries), entries };
};

describe("FreshRows", () => {
  it("gives back the entries an append parsed, once, while the stored text is the one appended", () => {
    const fresh = new FreshRows();
    const row = rowOf(3, "v");
    fresh.remember(0, row.text, row.entries);
    expect(fresh.take(0, row.text)).toBe(row.entries);
    // Taken: a second read parses the text.
    const again = fresh.take(0, row.text);
    expect(again).not.toBe(row.entries);
    expect(again).toEqual(row.entries);
  });

  it("parses the stored text when the row was rewritten since", () => {
    const fresh = new FreshRows();
    const row = rowOf(2, "old");
    fresh.remember(5, row.text, row.entries);
    const stored = rowOf(1, "new");
    expect(fresh.take(5, stored.text)).toEqual(stored.entries);
  });

  it("keeps at most its bound of entries, dropping the oldest rows first", () => {
    const fresh = new FreshRows(5);
    const rows = [rowOf(2, "a"), rowOf(2, "b"), rowOf(2, "c")];
    for (const [i, row] of rows.entries()) fresh.remember(i * 10, row.text, row.entries);
    expect(fresh.take(0, rows[0]!.text)).not.toBe(rows[0]!.entries);
    expect(fresh.take(10, rows[1]!.text)).toBe(rows[1]!.entries);
    expect(fresh.take(20, rows[2]!.text)).toBe(rows[2]!.entries);
  });

  it("forgets everything when cleared (a failed transaction undid the appends)", () => {
    const fresh = new FreshRows();
    const row = rowOf(1, "v");
    fresh.remember(0, row.text, row.entries);
    fresh.clear();
    expect(fresh.take(0, row.text)).not.toBe(row.entries);
  });
});
