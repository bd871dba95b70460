/**
 * The restore worker's flush policy (src/restore/progress-flusher.ts), on a fake clock: what is held
 * in memory is written within PROGRESS_FLUSH_MS of the first thing held, all parts in one
 * transaction; a failed flush writes nothing, puts back what it took and looks again; nothing stays
 * armed once all is written.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type HeldWrites, ProgressFlusher, type Taken } from "../../src/restore/progress-flusher";
import { PROGRESS_FLUSH_MS } from "../../src/restore/standby-progress";
import { EarliestTimer } from "../../src/util/timer";

/** A storage of rows with transactions that write all or nothing, counting rows written and commits. */
class FakeStorage {
  rows = new Map<string, number>();
  commits = 0;
  rowsWritten = 0;
  transaction(fn: () => void): void {
    const before = new Map(this.rows);
    const written = this.rowsWritten;
    try {
      fn();
      this.commits++;
    } catch (error) {
      this.rows = before;
      this.rowsWritten = written;
      throw error;
    }
  }
  /** The row write that fails (counted from 1 over the storage's life), if any. */
  failAt = 0;
  private puts = 0;
  put(key: string, value: number): void {
    if (++this.puts === this.failAt) throw new Error("SQLITE_FULL");
    this.rows.set(key, value);
    this.rowsWritten++;
  }
}

/** A part holding the latest value per key in memory, as the registry's progress and the reports do. */
class Held implements HeldWrites {
  private readonly latest = new Map<string, number>();
  private readonly dirty = new Set<string>();
  constructor(
    private readonly storage: FakeStorage,
    private readonly prefix: string,
  ) {}
  set(key: string, value: number): void {
    this.latest.set(key, value);
    this.dirty.add(key);
  }
  get pending(): boolean {
    return this.dirty.size > 0;
  }
  take(): Taken {
    const keys = [...this.dirty];
    this.dirty.clear();
    return {
      write: () => {
        for (const key of keys) this.storage.put(`${this.prefix}:${key}`, this.latest.get(key)!);
      },
      putBack: () => {
        for (const key of keys) this.dirty.add(key);
      },
    };
  }
}

function setUp() {
  const storage = new FakeStorage();
  const progress = new Held(storage, "progress");
  const reports = new Held(storage, "report");
  const failures: unknown[] = [];
  const timer: EarliestTimer = new EarliestTimer(() => flusher.flush());
  const flusher: ProgressFlusher = new ProgressFlusher({
    parts: [progress, reports],
    transaction: (fn) => storage.transaction(fn),
    armBy: (at) => timer.armBy(at),
    now: Date.now,
    failed: (error) => failures.push(error),
  });
  return { storage, progress, reports, failures, timer, flusher };
}

describe("ProgressFlusher", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("arms nothing and writes nothing while nothing is held", () => {
    const { storage, timer, flusher } = setUp();
    flusher.later();
    expect(timer.armedAt).toBeUndefined();
    expect(flusher.flush()).toBe(true);
    expect(storage.commits).toBe(0);
  });

  it("writes what is held within PROGRESS_FLUSH_MS of the first thing held: progress and reports in one transaction, a row per key", () => {
    const { storage, progress, reports, timer, flusher } = setUp();
    const start = Date.now();
    for (let batch = 1; batch <= 20; batch++) {
      progress.set("0_0@a c/0", batch * 10);
      progress.set("0_1@a c/1", batch * 5);
      flusher.later();
      vi.advanceTimersByTime(100);
    }
    reports.set("0_0@a", 7);
    flusher.later();
    // Asked again and again: the first time asked for stands.
    expect(timer.armedAt).toBe(start + PROGRESS_FLUSH_MS);
    vi.advanceTimersByTime(start + PROGRESS_FLUSH_MS - 1 - Date.now());
    expect(storage.commits).toBe(0);
    vi.advanceTimersByTime(1);
    // One commit: the last of each changelog's 20 updates and the one report, 3 rows.
    expect(storage.commits).toBe(1);
    expect(storage.rowsWritten).toBe(3);
    expect(Object.fromEntries(storage.rows)).toEqual({ "progress:0_0@a c/0": 200, "progress:0_1@a c/1": 100, "report:0_0@a": 7 });
    expect(timer.armedAt).toBeUndefined();
    flusher.later();
    expect(timer.armedAt).toBeUndefined();
  });

  it("a flush that fails writes none of it, puts it back and writes it within PROGRESS_FLUSH_MS", () => {
    const { storage, progress, reports, failures, timer, flusher } = setUp();
    progress.set("0_0@a c/0", 10);
    reports.set("0_0@a", 1);
    // The progress is written, then the report's row fails: the transaction takes back both.
    storage.failAt = 2;
    expect(flusher.flush()).toBe(false);
    expect(failures).toHaveLength(1);
    expect(storage.rows.has("progress:0_0@a c/0")).toBe(false);
    expect(storage.commits).toBe(0);
    expect(progress.pending && reports.pending).toBe(true);
    expect(timer.armedAt).toBe(Date.now() + PROGRESS_FLUSH_MS);
    // Held meanwhile: the newest value is the one written.
    progress.set("0_0@a c/0", 20);
    vi.advanceTimersByTime(PROGRESS_FLUSH_MS);
    expect(storage.commits).toBe(1);
    expect(storage.rows.get("progress:0_0@a c/0")).toBe(20);
    expect(storage.rows.get("report:0_0@a")).toBe(1);
    expect(progress.pending || reports.pending).toBe(false);
  });

  it("flushes at once when told (shutdown), and the timer then finds nothing to write", () => {
    const { storage, progress, timer, flusher } = setUp();
    progress.set("0_0@a c/0", 10);
    flusher.later();
    expect(flusher.flush()).toBe(true);
    expect(storage.commits).toBe(1);
    vi.advanceTimersByTime(PROGRESS_FLUSH_MS);
    expect(storage.commits).toBe(1);
    expect(timer.armedAt).toBeUndefined();
  });
});
