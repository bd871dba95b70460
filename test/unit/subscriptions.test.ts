/**
 * Subscriptions' pure parts (docs/subscriptions.md): the resume token, the changes a changelog
 * fetch holds and the gaps compaction leaves, the offset a task's committed store reflects, the
 * stream's loop over a fake log (snapshot, changes, resync, back-pressure), the slot limit, and
 * the watch of a computed view (GET /tasks/watch: diffs, cadence).
 */
import { describe, expect, it } from "vitest";
import { OffsetOutOfRange } from "../../src/log/errors";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import type { FetchBounds, FetchResult, LogRecord } from "../../src/log/types";
import { changeOf } from "../../src/subscriptions/change-feed";
import { outsideRange, stepsFrom } from "../../src/subscriptions/follow-log";
import { decodeToken, encodeToken } from "../../src/subscriptions/resume-token";
import { KEEP_ALIVE_MS, MAX_IDLE_MS, runWatch, WATCH_FETCH, type Snapshot, type WatchEvent, type WatchTarget } from "../../src/subscriptions/watch-loop";
import { runTail, type TailEvent } from "../../src/subscriptions/tail-loop";
import { WatchSlots } from "../../src/subscriptions/watch-slots";
import { KeySlots, MAX_WATCHES_PER_KEY } from "../../src/subscriptions/key-slots";
import { diffViews, nextWait, runViewWatch, VIEW_IDLE_MS, VIEW_RETRY_MS, VIEW_TICK_MS, type ViewWatch } from "../../src/subscriptions/view-watch";
import { committedOffset } from "../../src/task/committed-read";

const record = (offset: number, key: string, value: string, deleted = false): LogRecord => ({
  offset,
  key,
  value,
  headers: deleted ? [{ key: TOMBSTONE_HEADER, value: "1" }] : [],
  timestamp: 0,
});

describe("the resume token", () => {
  it("names the changelog topic and each partition's offset, and decodes to exactly that", () => {
    const token = encodeToken({
      topic: "app-totals-changelog",
      positions: new Map([
        [3, 17],
        [0, 4],
      ]),
    });
    expect(token).toMatch(/^w1\.[A-Za-z0-9_-]+$/);
    expect(decodeToken(token)).toEqual({
      topic: "app-totals-changelog",
      positions: new Map([
        [0, 4],
        [3, 17],
      ]),
    });
  });

  it("refuses what encoding did not make", () => {
    const token = encodeToken({ topic: "t", positions: new Map([[0, 1]]) });
    for (const bad of ["", "w1.", "x" + token, token.slice(0, -2), "w1.e30", encodeToken({ topic: "t", positions: new Map() }).replace("w1.", "w2.")])
      expect(decodeToken(bad), bad).toBeUndefined();
    const negative = `w1.${btoa(JSON.stringify({ t: "t", o: [[0, -1]] }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_")}`;
    expect(decodeToken(negative)).toBeUndefined();
  });
});

describe("what a read of a log finds", () => {
  it("gives each record in order, and a gap before any record not at the offset expected", () => {
    expect(stepsFrom([record(5, "a", "1"), record(6, "b", "2")], 5, 7)).toEqual([{ record: record(5, "a", "1") }, { record: record(6, "b", "2") }]);
    expect(stepsFrom([record(7, "a", "1"), record(9, "b", "2")], 5, 10)).toEqual([
      { gap: { from: 5, to: 7 } },
      { record: record(7, "a", "1") },
      { gap: { from: 8, to: 9 } },
      { record: record(9, "b", "2") },
    ]);
  });

  it("nothing new at the end is nothing; nothing read before the end is a gap up to it", () => {
    expect(stepsFrom([], 8, 8)).toEqual([]);
    expect(stepsFrom([], 5, 8)).toEqual([{ gap: { from: 5, to: 8 } }]);
  });

  it("a position outside what a partition keeps goes on at its earliest offset below it, at its end beyond it", () => {
    expect(outsideRange(2, { earliest: 5, latest: 9 })).toBe(5);
    expect(outsideRange(12, { earliest: 5, latest: 9 })).toBe(9);
    expect(outsideRange(9, { earliest: 5, latest: 9 })).toBeUndefined();
  });

  it("a changelog record is a change when its key is watched; a tombstone is a delete", () => {
    const watched = (key: string) => key.startsWith("a");
    expect(changeOf(record(5, "a1", "1"), watched)).toEqual({ key: "a1", value: "1" });
    expect(changeOf(record(6, "b", "2"), watched)).toBeUndefined();
    expect(changeOf(record(7, "a2", "", true), watched)).toEqual({ key: "a2", value: null });
  });
});

describe("the changelog offset a committed store reflects", () => {
  it("is the checkpoint advanced by unrecorded acknowledgements; waiting while a batch is unacknowledged", () => {
    expect(committedOffset({ checkpoint: 10, ackedEnds: [], waiting: 0 })).toBe(10);
    expect(committedOffset({ checkpoint: 10, ackedEnds: [12, 15], waiting: 0 })).toBe(15);
    expect(committedOffset({ checkpoint: null, ackedEnds: [3], waiting: 0 })).toBe(3);
    expect(committedOffset({ checkpoint: null, ackedEnds: [], waiting: 0 })).toBeNull();
    expect(committedOffset({ checkpoint: 10, ackedEnds: [12], waiting: 1 })).toBe("waiting");
  });
});

/** A changelog partition in memory, with compaction (records dropped) and the loop's ports over it. */
class FakeChangelog {
  records: LogRecord[] = [];
  earliest = 0;
  fetches = 0;
  end(): number {
    return this.records.length === 0 ? this.earliest : this.records[this.records.length - 1]!.offset + 1;
  }
  append(key: string, value: string): void {
    this.records.push(record(this.end(), key, value));
  }
  async fetch(_partition: number, offset: number, bounds: FetchBounds): Promise<FetchResult> {
    this.fetches++;
    const latest = this.end();
    if (offset < this.earliest || offset > latest) throw new OffsetOutOfRange(`offset ${offset}`);
    const records = this.records.filter((r) => r.offset >= offset).slice(0, bounds.maxRecords);
    return { records, nextOffset: records.length ? records[records.length - 1]!.offset + 1 : offset, earliest: this.earliest, latest };
  }
  offsets(): { earliest: number; latest: number } {
    return { earliest: this.earliest, latest: this.end() };
  }
  /** The committed value of `key` now, at the end. */
  snapshot(key: string): Snapshot {
    const last = this.records.filter((r) => r.key === key).pop();
    return { entries: last ? [{ key, value: last.value }] : [], positions: new Map([[0, this.end()]]) };
  }
}

const keyTarget: WatchTarget = {
  topic: "c",
  partitions: [0],
  watched: (k) => k === "k",
  kind: "key",
  key: "k",
  present: (key, value) => JSON.stringify({ key, value }),
};

/** Runs a watch until it has sent `count` events (then the subscriber leaves). */
async function watchUntil(log: FakeChangelog, count: number, start: Parameters<typeof runWatch>[2], onEvent?: (e: WatchEvent) => void) {
  const events: WatchEvent[] = [];
  let closed = false;
  await runWatch(
    keyTarget,
    {
      fetch: (p, o, b) => log.fetch(p, o, b),
      offsets: async () => log.offsets(),
      snapshot: async () => log.snapshot("k"),
      send: async (event) => {
        events.push(event);
        onEvent?.(event);
        if (events.length >= count) closed = true;
      },
      closed: () => closed,
      idle: async () => {
        if (log.fetches > 1_000) throw new Error("no event came");
      },
      keepAlive: async () => {},
      now: () => 0,
    },
    start,
  );
  return events;
}

describe("a watch's stream", () => {
  it("sends the snapshot, then each change of the key, every event with the token after it", async () => {
    const log = new FakeChangelog();
    log.append("k", "1");
    log.append("x", "9");
    const events = await watchUntil(log, 3, { snapshot: log.snapshot("k") }, (e) => {
      if (e.data.includes('"1"')) log.append("k", "2");
      if (e.data.includes('"2"')) log.append("k", "3");
    });
    expect(events.map((e) => [e.event, JSON.parse(e.data).value])).toEqual([
      [undefined, "1"],
      [undefined, "2"],
      [undefined, "3"],
    ]);
    expect(events.map((e) => decodeToken(e.id!)?.positions.get(0))).toEqual([2, 3, 4]);
  });

  it("resumes from a token's offset: the changes after it, once", async () => {
    const log = new FakeChangelog();
    for (const v of ["1", "2", "3", "4"]) log.append("k", v);
    const events = await watchUntil(log, 2, { resume: new Map([[0, 2]]) });
    expect(events.map((e) => JSON.parse(e.data).value)).toEqual(["3", "4"]);
  });

  it("a token the changelog no longer holds gets a snapshot marked as such, with no resync before it", async () => {
    const log = new FakeChangelog();
    for (const v of ["1", "2", "3"]) log.append("k", v);
    log.records.shift();
    log.earliest = 1;
    const events = await watchUntil(log, 1, { resume: new Map([[0, 0]]) });
    expect(events).toEqual([
      { event: "snapshot", data: JSON.stringify({ key: "k", value: "3" }), id: encodeToken({ topic: "c", positions: new Map([[0, 3]]) }) },
    ]);
  });

  it("records compacted away behind a stream's position: resync, then a fresh snapshot, then the changes after it", async () => {
    const log = new FakeChangelog();
    log.append("k", "1");
    const events = await watchUntil(log, 4, { snapshot: log.snapshot("k") }, (e) => {
      if (e.event === undefined && JSON.parse(e.data).value === "1") {
        // Two writes land, and compaction removes the first before the stream reads it.
        log.append("k", "2");
        log.append("k", "3");
        log.records.splice(1, 1);
      }
      if (e.event === "snapshot") log.append("k", "4");
    });
    expect(events.map((e) => [e.event, e.event === "resync" ? "" : JSON.parse(e.data).value])).toEqual([
      [undefined, "1"],
      ["resync", ""],
      ["snapshot", "3"],
      [undefined, "4"],
    ]);
  });

  it("reads no further while the subscriber does not take an event: memory holds one fetch at most", async () => {
    const log = new FakeChangelog();
    for (let i = 0; i < 2_000; i++) log.append("k", String(i));
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let sent = 0;
    let closed = false;
    const running = runWatch(
      keyTarget,
      {
        fetch: (p, o, b) => log.fetch(p, o, b),
        offsets: async () => log.offsets(),
        snapshot: async () => log.snapshot("k"),
        send: async () => {
          if (++sent === 10) await stalled;
          if (sent === 600) closed = true;
        },
        closed: () => closed,
        idle: async () => {},
        keepAlive: async () => {},
        now: () => 0,
      },
      { resume: new Map([[0, 0]]) },
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(log.fetches).toBe(1);
    expect(sent).toBe(10);
    release();
    await running;
    expect(log.fetches).toBe(2);
    expect(WATCH_FETCH.maxRecords).toBe(500);
  });
});

/** Runs a tail of partition 0 of `log` from `from` until it has sent `count` events. */
async function tailUntil(log: FakeChangelog, from: number, count: number, onEvent?: (e: TailEvent) => void) {
  const events: TailEvent[] = [];
  let closed = false;
  await runTail({ topic: "t", partition: 0 }, from, {
    fetch: (p, o, b) => log.fetch(p, o, b),
    offsets: async () => log.offsets(),
    send: async (event) => {
      events.push(event);
      onEvent?.(event);
      if (events.length >= count) closed = true;
    },
    closed: () => closed,
    idle: async () => {
      if (log.fetches > 1_000) throw new Error("no event came");
    },
    keepAlive: async () => {},
    now: () => 0,
  });
  return events;
}

describe("a topic tail's stream", () => {
  it("starts with the offset it starts at, then each record as the /kafka dialect renders it, its offset as the id", async () => {
    const log = new FakeChangelog();
    for (const v of ["a", "b", "c"]) log.append("k", v);
    const events = await tailUntil(log, 1, 3);
    expect(events).toEqual([
      { event: "start", data: JSON.stringify({ topic: "t", partition: 0, from: 1 }) },
      { data: JSON.stringify({ topic: "t", partition: 0, offset: 1, timestamp: 0, key: "k", value: "b", headers: [] }), id: "1" },
      { data: JSON.stringify({ topic: "t", partition: 0, offset: 2, timestamp: 0, key: "k", value: "c", headers: [] }), id: "2" },
    ]);
  });

  it("names offsets compacted away or below the log's start with a gap event, then goes on from the next record", async () => {
    const log = new FakeChangelog();
    for (const v of ["0", "1", "2", "3", "4", "5"]) log.append("k", v);
    // Retention took 0 and 1; compaction took 3 and 4.
    log.records = log.records.filter((r) => ![0, 1, 3, 4].includes(r.offset));
    log.earliest = 2;
    const events = await tailUntil(log, 0, 5);
    expect(events.slice(1).map((e) => [e.event, e.event === "gap" ? JSON.parse(e.data) : e.id])).toEqual([
      ["gap", { from: 0, to: 2 }],
      [undefined, "2"],
      ["gap", { from: 3, to: 5 }],
      [undefined, "5"],
    ]);
  });

  it("a start beyond the partition's end (a log that started over) is a gap down to the end, then the records appended there", async () => {
    const log = new FakeChangelog();
    log.append("k", "0");
    const events = await tailUntil(log, 7, 3, (e) => {
      if (e.event === "gap") log.append("k", "1");
    });
    expect(events.slice(1).map((e) => [e.event, e.event === "gap" ? JSON.parse(e.data) : e.id])).toEqual([
      ["gap", { from: 7, to: 1 }],
      [undefined, "1"],
    ]);
  });

  it("reads no further while the subscriber does not take an event", async () => {
    const log = new FakeChangelog();
    for (let i = 0; i < 2_000; i++) log.append("k", String(i));
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let sent = 0;
    const running = runTail({ topic: "t", partition: 0 }, 0, {
      fetch: (p, o, b) => log.fetch(p, o, b),
      offsets: async () => log.offsets(),
      send: async () => {
        if (++sent === 10) await stalled;
      },
      closed: () => sent >= 700,
      idle: async () => {},
      keepAlive: async () => {},
      now: () => 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect([log.fetches, sent]).toEqual([1, 10]);
    release();
    await running;
    expect(log.fetches).toBe(2);
  });
});

describe("a quiet stream", () => {
  it("sends a keep-alive comment once KEEP_ALIVE_MS passed without an event, then again only as long after it", async () => {
    const log = new FakeChangelog();
    let clock = 0;
    const alive: number[] = [];
    let closed = false;
    await runWatch(
      keyTarget,
      {
        fetch: (p, o, b) => log.fetch(p, o, b),
        offsets: async () => log.offsets(),
        snapshot: async () => log.snapshot("k"),
        send: async () => {},
        closed: () => closed,
        // Each idle wait advances the clock by what it was asked to wait.
        idle: async (ms) => {
          clock += ms;
          if (clock > 2.5 * KEEP_ALIVE_MS) closed = true;
        },
        keepAlive: async () => {
          alive.push(clock);
        },
        now: () => clock,
      },
      { snapshot: log.snapshot("k") },
    );
    expect(alive.length).toBe(2);
    expect(alive[0]).toBeGreaterThanOrEqual(KEEP_ALIVE_MS);
    expect(alive[0]).toBeLessThan(KEEP_ALIVE_MS + MAX_IDLE_MS + 1);
    expect(alive[1]! - alive[0]!).toBeGreaterThanOrEqual(KEEP_ALIVE_MS);
  });
});

describe("subscription slots", () => {
  it("takes up to the limit, gives back once per slot", () => {
    const slots = new WatchSlots(2);
    const a = slots.take()!;
    const b = slots.take()!;
    expect(slots.take()).toBeUndefined();
    a();
    a();
    expect(slots.taken).toBe(1);
    expect(slots.take()).toBeDefined();
    b();
    expect(slots.taken).toBe(1);
  });
});

describe("a watch of a computed view (GET /tasks/watch)", () => {
  const parts = (entries: Record<string, string>) => new Map(Object.entries(entries));

  it("diffs two views: parts new or different in the new view's order, and the names gone; `same` decides equality", () => {
    const before = parts({ a: "1", b: "2", c: "3" });
    const after = parts({ d: "4", b: "2*", a: "1" });
    expect(diffViews(before, after)).toEqual({ changed: ["d", "b"], removed: ["c"] });
    expect(diffViews(after, after)).toEqual({ changed: [], removed: [] });
    expect(diffViews(before, after, (name, x, y) => name === "b" || x === y)).toEqual({ changed: ["d"], removed: ["c"] });
  });

  it("reads every VIEW_TICK_MS while the view changes, backing off to VIEW_IDLE_MS while it does not", () => {
    expect([0, 1, 2, 3, 4, 10].map(nextWait)).toEqual([VIEW_TICK_MS, 2 * VIEW_TICK_MS, 4 * VIEW_TICK_MS, VIEW_IDLE_MS, VIEW_IDLE_MS, VIEW_IDLE_MS]);
  });

  it("sends the whole view, then one change event per read that found a difference, with its parts alone; a quiet view costs keep-alives only", async () => {
    // The view at each read: a task goes RESTORING, stays, restores, then nothing changes for long.
    const reads: Record<string, string>[] = [
      { "task:0_0": "RUNNING", summary: "s0" },
      { "task:0_0": "RESTORING 0", summary: "s1" },
      { "task:0_0": "RESTORING 0", summary: "s1" },
      { "task:0_0": "RESTORING 5", summary: "s1" },
      { "task:0_0": "RUNNING", summary: "s0", "task:0_1": "RUNNING" },
      { "task:0_1": "RUNNING", summary: "s0" },
    ];
    let clock = 0;
    let read = 0;
    const waits: number[] = [];
    const events: { event?: string; data: string }[] = [];
    let alive = 0;
    const watch: ViewWatch = {
      read: async () => ({ parts: parts(reads[Math.min(read++, reads.length - 1)]!), calls: 1 }),
      whole: (view, at) => JSON.stringify({ at, whole: [...view] }),
      change: (view, diff) => JSON.stringify({ changed: diff.changed.map((n) => [n, view.get(n)]), removed: diff.removed }),
    };
    await runViewWatch(watch, {
      send: async (event) => {
        events.push(event);
      },
      closed: () => clock > 2 * KEEP_ALIVE_MS,
      idle: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
      keepAlive: async () => {
        alive++;
      },
      now: () => clock,
    });
    expect(events[0]).toEqual({ event: "view", data: JSON.stringify({ at: 0, whole: [...parts(reads[0]!)] }), retry: VIEW_RETRY_MS });
    expect(events.slice(1).map((e) => [e.event, JSON.parse(e.data)])).toEqual([
      [
        "change",
        {
          changed: [
            ["task:0_0", "RESTORING 0"],
            ["summary", "s1"],
          ],
          removed: [],
        },
      ],
      ["change", { changed: [["task:0_0", "RESTORING 5"]], removed: [] }],
      [
        "change",
        {
          changed: [
            ["task:0_0", "RUNNING"],
            ["summary", "s0"],
            ["task:0_1", "RUNNING"],
          ],
          removed: [],
        },
      ],
      ["change", { changed: [], removed: ["task:0_0"] }],
    ]);
    expect(events.every((e) => !("id" in e))).toBe(true);
    // 1 s after each change, 2 s after the one unchanged read, then 5 s apart while nothing changes.
    expect(waits.slice(0, 6)).toEqual([1_000, 1_000, 2_000, 1_000, 1_000, 1_000]);
    expect(waits.slice(6, 8)).toEqual([2_000, 4_000]);
    expect(new Set(waits.slice(8))).toEqual(new Set([VIEW_IDLE_MS]));
    expect(alive).toBe(1);
  });

  it("ends before a read that would pass its budget of calls (the client reconnects to a new request)", async () => {
    let reads = 0;
    let open = true;
    await runViewWatch(
      {
        read: async () => ({ parts: new Map([["n", String(reads++)]]), calls: 10 }),
        whole: () => "{}",
        change: () => "{}",
      },
      { send: async () => {}, closed: () => !open, idle: async () => {}, keepAlive: async () => {}, now: () => 0 },
      35,
    );
    open = false;
    expect(reads).toBe(3);
  });
});

describe("subscription slots per key", () => {
  it("takes up to the limit of one key, others unaffected; gives back once per slot, forgetting a key with its last", () => {
    const slots = new KeySlots(2);
    const a1 = slots.take("a")!;
    const a2 = slots.take("a")!;
    expect(slots.take("a")).toBeUndefined();
    const b = slots.take("b")!;
    expect([slots.taken("a"), slots.taken("b"), slots.keys]).toEqual([2, 1, 2]);
    a1();
    a1();
    expect(slots.taken("a")).toBe(1);
    expect(slots.take("a")).toBeDefined();
    a2();
    b();
    expect(slots.keys).toBe(1);
    expect(MAX_WATCHES_PER_KEY).toBe(32);
  });
});
