/** Where time and size retention put a partition's log start (src/log/partition/log-retention.ts): pure. */
import { describe, expect, it } from "vitest";
import { sizeRetentionStart, timeRetentionStart } from "../../src/log/partition/log-retention";

/** Rows of `span` offsets and `bytes` each, from offset `from`. */
const rows = (from: number, ...sizes: [span: number, bytes: number][]) => {
  let base = from;
  return sizes.map(([span, bytes]) => {
    const row = { base_offset: base, span, bytes };
    base += span;
    return row;
  });
};

describe("timeRetentionStart", () => {
  it("moves the start to the first young row, to the end when none is, never past the newest row kept", () => {
    expect(timeRetentionStart(0, 100, 40, 100)).toBe(40);
    expect(timeRetentionStart(0, 100, undefined, 100)).toBe(100);
    expect(timeRetentionStart(0, 100, undefined, 90)).toBe(90);
    expect(timeRetentionStart(0, 100, 95, 90)).toBe(90);
  });

  it("never moves the start down", () => {
    expect(timeRetentionStart(50, 100, 40, 100)).toBe(50);
  });
});

describe("sizeRetentionStart", () => {
  it("drops the oldest whole rows while the partition keeps more than retention.bytes", () => {
    const stored = rows(0, [10, 100], [10, 100], [10, 100], [10, 100]);
    expect(sizeRetentionStart(0, 150, 40, stored)).toBe(20);
    expect(sizeRetentionStart(0, 100, 40, stored)).toBe(10);
    expect(sizeRetentionStart(0, 0, 40, stored)).toBe(0);
  });

  it("keeps the newest row a compacted topic keeps, however much is over", () => {
    const stored = rows(0, [10, 100], [10, 100], [10, 100]);
    expect(sizeRetentionStart(0, 1_000, 20, stored)).toBe(20);
  });

  it("stops reading rows once the size is under the bound", () => {
    let read = 0;
    function* lazy() {
      for (const row of rows(0, [1, 10], [1, 10], [1, 10], [1, 10])) {
        read++;
        yield row;
      }
    }
    expect(sizeRetentionStart(0, 15, 10, lazy())).toBe(2);
    expect(read).toBe(3);
  });
});
