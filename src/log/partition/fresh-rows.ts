/**
 * The entries of rows appended to a compacted partition since compaction's index last read them,
 * as the append parsed them, so that compaction does not parse them again. In memory only, and
 * bounded (FRESH_ROWS_MAX_ENTRIES); a row is used only while its stored text is the one appended.
 * Cleared when a transaction fails (the rows it appended are undone).
 */
import type { Entry } from "../record-batch";

/** Most entries kept parsed (a pass's worth and more). */
export const FRESH_ROWS_MAX_ENTRIES = 50_000;

export class FreshRows {
  private readonly rows = new Map<number, { readonly text: string; readonly entries: Entry[] }>();
  private entries = 0;

  constructor(private readonly maxEntries = FRESH_ROWS_MAX_ENTRIES) {}

  remember(base: number, text: string, entries: Entry[]): void {
    this.rows.set(base, { text, entries });
    this.entries += entries.length;
    // Oldest first: a partition whose compaction lags keeps only its newest rows parsed.
    for (const [oldest, row] of this.rows) {
      if (this.entries <= this.maxEntries) break;
      this.rows.delete(oldest);
      this.entries -= row.entries.length;
    }
  }

  /** A stored row's entries: as its append parsed them when that is the row stored, else parsed from its text. */
  take(base: number, text: string): Entry[] {
    const fresh = this.rows.get(base);
    if (fresh) {
      this.rows.delete(base);
      this.entries -= fresh.entries.length;
      if (fresh.text === text) return fresh.entries;
    }
    return JSON.parse(text) as Entry[];
  }

  clear(): void {
    this.rows.clear();
    this.entries = 0;
  }
}
