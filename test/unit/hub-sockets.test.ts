/** The pure part of a subscription hub (src/subscriptions/hub-sockets.ts): selection, positions, credit, limits. */
import { describe, expect, it } from "vitest";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import type { LogRecord } from "../../src/log/types";
import { HubCounters } from "../../src/subscriptions/hub-counters";
import {
  acknowledge,
  behind,
  type HubSocket,
  type HubStart,
  keyTag,
  newSocket,
  outside,
  parseHubStart,
  planSocket,
  planTail,
  planTailOutside,
  readFrom,
  refusal,
  stalled,
  startTag,
} from "../../src/subscriptions/hub-sockets";
import { decodeToken } from "../../src/subscriptions/resume-token";
import { windowRowsPrefix } from "../../src/subscriptions/window-keys";

const start = (over: Partial<HubStart> = {}): HubStart => ({
  topic: "c",
  partition: 1,
  store: "totals",
  view: "key",
  key: '"a"',
  position: 0,
  messages: [],
  ...over,
});
const rec = (offset: number, key: string, value = `v${offset}`, deleted = false): LogRecord => ({
  offset,
  key,
  value,
  headers: deleted ? [{ key: TOMBSTONE_HEADER, value: "" }] : [],
  timestamp: 0,
});
const data = (key: string, value: string | null) => ({ key, value });
const parsed = (messages: string[]) => messages.map((m) => JSON.parse(m) as { event: string; data: { key: string; value: string | null }; id: string });

describe("planSocket", () => {
  it("sends each record of the watched key from the socket's position, with the token of the position after it, and advances past the rest", () => {
    const s = newSocket(start({ position: 2 }));
    const plan = planSocket(s, { from: 0, records: [rec(1, '"a"'), rec(2, '"a"'), rec(3, '"b"'), rec(4, '"a"', "", true)], latest: 5 }, 0, data);
    expect(plan.resync).toBe(false);
    const sent = parsed(plan.messages);
    expect(sent.map((m) => [m.event, m.data.value])).toEqual([
      ["message", "v2"],
      ["message", null],
    ]);
    expect(sent.map((m) => [...decodeToken(m.id)!.positions])).toEqual([[[1, 3]], [[1, 5]]]);
    expect(s).toMatchObject({ position: 5, sent: 2 });
    expect(behind(s, 5)).toBe(false);
  });

  it("renders a record once for the sockets that share `rendered`: the same message for each", () => {
    const rendered = new Map<number, string>();
    let renders = 0;
    const counting = (key: string, value: string | null) => {
      renders++;
      return data(key, value);
    };
    const batch = { from: 0, records: [rec(1, '"a"'), rec(2, '"a"')], latest: 3 };
    const first = planSocket(newSocket(start({ position: 1 })), batch, 0, counting, undefined, rendered);
    const second = planSocket(newSocket(start({ position: 2 })), batch, 0, counting, undefined, rendered);
    expect(renders).toBe(2);
    expect(second.messages).toEqual(first.messages.slice(1));
  });

  it("a windows socket takes every row of its key's windows, nothing of another key", () => {
    const s = newSocket(start({ view: "windows" }));
    const prefix = windowRowsPrefix('"a"');
    const plan = planSocket(s, { from: 0, records: [rec(0, `${prefix}x`), rec(1, `${windowRowsPrefix('"ab"')}x`), rec(2, `${prefix}y`)], latest: 3 }, 0, data);
    expect(parsed(plan.messages).map((m) => m.data.key)).toEqual([`${prefix}x`, `${prefix}y`]);
  });

  it("stops at a full window (the position stays on the record not sent), marks since when, and goes on once acknowledged", () => {
    const s = newSocket(start({ messages: ["snapshot"] }));
    const records = [rec(0, '"a"'), rec(1, '"b"'), rec(2, '"a"'), rec(3, '"a"')];
    const plan = planSocket(s, { from: 0, records: records, latest: 4 }, 100, data, 2);
    expect(plan.messages.length).toBe(1);
    expect(s).toMatchObject({ position: 2, sent: 2, fullSince: 100 });
    expect(readFrom([s], 2)).toBeUndefined();
    expect(stalled(s, 100 + 29_999)).toBe(false);
    expect(stalled(s, 100 + 30_000)).toBe(true);
    expect(acknowledge(s, 3, 2)).toBe(false);
    expect(acknowledge(s, "x", 2)).toBe(false);
    expect(acknowledge(s, 2, 2)).toBe(true);
    expect(s.fullSince).toBeNull();
    expect(readFrom([s], 2)).toBe(2);
    const rest = planSocket(s, { from: 0, records: records.slice(2), latest: 4 }, 200, data, 2);
    expect(rest.messages.length).toBe(2);
    expect(s).toMatchObject({ position: 4, sent: 4, fullSince: 200 });
  });

  it("resyncs on an offset missing from its position on (compaction), or a position beyond the log's end; not on one below it", () => {
    expect(planSocket(newSocket(start({ position: 1 })), { from: 0, records: [rec(0, '"a"'), rec(2, '"a"')], latest: 3 }, 0, data).resync).toBe(true);
    expect(planSocket(newSocket(start({ position: 2 })), { from: 0, records: [rec(0, '"a"'), rec(2, '"a"')], latest: 3 }, 0, data).resync).toBe(false);
    expect(planSocket(newSocket(start({ position: 9 })), { from: 0, records: [], latest: 3 }, 0, data).resync).toBe(true);
    expect(planSocket(newSocket(start({ position: 1 })), { from: 0, records: [], latest: 3 }, 0, data).resync).toBe(true);
    expect(planSocket(newSocket(start({ position: 3 })), { from: 0, records: [], latest: 3 }, 0, data).resync).toBe(false);
    // Below the batch (acknowledged while it was read): nothing now, read next time.
    const low = newSocket(start({ position: 1 }));
    expect(planSocket(low, { from: 2, records: [rec(2, '"a"')], latest: 3 }, 0, data)).toEqual({ messages: [], resync: false });
    expect(low.position).toBe(1);
    expect(behind(low, 3)).toBe(true);
    expect(outside(1, { earliest: 2, latest: 5 })).toBe(true);
    expect(outside(5, { earliest: 2, latest: 5 })).toBe(false);
  });
});

describe("planTail", () => {
  const tail = (position: number) => newSocket(start({ store: "", view: "tail", key: "", position, messages: ['{"event":"start"}'] }));
  const render = (r: LogRecord) => `m${r.offset}`;

  it("sends every record from its position on (any key), each rendered once per record, and advances past it", () => {
    const s = tail(1);
    expect(planTail(s, { from: 0, records: [rec(0, "a"), rec(1, "a"), rec(2, "b")], latest: 3 }, 0, render)).toEqual(["m1", "m2"]);
    expect([s.position, s.sent]).toEqual([3, 3]);
    // Below the batch (its window opened while the batch was read): the next read starts from it.
    expect(planTail(tail(0), { from: 1, records: [rec(1, "a")], latest: 2 }, 0, render)).toEqual([]);
  });

  it("outside what the partition holds: a gap to its start (below it) or its end (past it), while the window has room", () => {
    const below = tail(1);
    expect(planTailOutside(below, { earliest: 4, latest: 9 })).toEqual(['{"event":"gap","data":{"from":1,"to":4}}']);
    expect([below.position, below.sent]).toEqual([4, 2]);
    const past = tail(12);
    expect(planTailOutside(past, { earliest: 0, latest: 3 })).toEqual(['{"event":"gap","data":{"from":12,"to":3}}']);
    expect(past.position).toBe(3);
    const full = tail(1);
    expect(planTailOutside(full, { earliest: 4, latest: 9 }, 1)).toEqual([]);
    expect([full.position, full.sent]).toEqual([1, 1]);
  });

  it("names offsets gone with a gap and goes on (compaction, retention, a log that started over), never a resync", () => {
    const s = tail(0);
    expect(planTail(s, { from: 0, records: [rec(2, "a"), rec(5, "b")], latest: 6 }, 0, render)).toEqual([
      '{"event":"gap","data":{"from":0,"to":2}}',
      "m2",
      '{"event":"gap","data":{"from":3,"to":5}}',
      "m5",
    ]);
    expect(s.position).toBe(6);
    const atEnd = tail(3);
    expect(planTail(atEnd, { from: 3, records: [], latest: 5 }, 0, render)).toEqual(['{"event":"gap","data":{"from":3,"to":5}}']);
    expect(atEnd.position).toBe(5);
    const beyond = tail(9);
    expect(planTail(beyond, { from: 9, records: [], latest: 4 }, 0, render)).toEqual(['{"event":"gap","data":{"from":9,"to":4}}']);
    expect(beyond.position).toBe(4);
  });

  it("stops at a full window where it stands (a gap takes a place too), marks since when, and goes on once acknowledged", () => {
    const s = tail(0);
    const batch = { from: 0, records: [rec(1, "a"), rec(2, "a"), rec(3, "a")], latest: 4 };
    // The start took one place of three: a gap and a record fit.
    expect(planTail(s, batch, 7, render, 3)).toEqual(['{"event":"gap","data":{"from":0,"to":1}}', "m1"]);
    expect([s.position, s.fullSince]).toEqual([2, 7]);
    expect(planTail(s, batch, 8, render, 3)).toEqual([]);
    acknowledge(s, 3, 3);
    expect(planTail(s, batch, 9, render, 3)).toEqual(["m2", "m3"]);
    expect([s.position, s.fullSince]).toEqual([4, null]);
  });

  it("counts a partition's tails together (one tag), refused as tails", () => {
    expect(startTag({ view: "tail", key: "" })).toBe(startTag({ view: "tail", key: "x" }));
    expect(startTag({ view: "tail", key: "" })).not.toBe(startTag({ view: "key", key: "" }));
    expect(refusal({ hub: 0, key: 2 }, { perHub: 10, perKey: 2 }, "tail")).toMatch(/tail this partition/);
    expect(parseHubStart(start({ view: "tail", store: "", key: "" }))).toBeDefined();
  });
});

describe("the hub's bookkeeping", () => {
  it("reads from the lowest position among sockets with room", () => {
    const a: HubSocket = { ...newSocket(start({ position: 7 })) };
    const b: HubSocket = { ...newSocket(start({ position: 3 })), sent: 100 };
    expect(readFrom([a, b])).toBe(7);
    b.acked = 1;
    expect(readFrom([a, b])).toBe(3);
    expect(readFrom([])).toBeUndefined();
  });

  it("refuses past the limits per hub, then per key", () => {
    const limits = { perHub: 3, perKey: 2 };
    expect(refusal({ hub: 2, key: 1 }, limits)).toBeUndefined();
    expect(refusal({ hub: 2, key: 2 }, limits)).toMatch(/watch this key/);
    expect(refusal({ hub: 3, key: 0 }, limits)).toMatch(/holds 3 sockets/);
  });

  it("tags a key within the runtime's 256 characters", () => {
    expect(keyTag('"a"')).toBe('k:"a"');
    const long = "x".repeat(10_000);
    expect(keyTag(long).length).toBeLessThan(256);
    expect(keyTag(long)).not.toBe(keyTag(`${long}y`));
  });

  it("a prefix socket (the Worker's, feeding a stream) takes every key with its prefix, and counts apart from a key of the same text", () => {
    const s = newSocket(start({ view: "prefix", key: '"a' }));
    const plan = planSocket(s, { from: 0, records: [rec(0, '"ab"'), rec(1, '"b"'), rec(2, '"a"')], latest: 3 }, 0, data);
    expect(parsed(plan.messages).map((m) => m.data.key)).toEqual(['"ab"', '"a"']);
    expect(s.position).toBe(3);
    expect(startTag({ view: "prefix", key: "a" })).not.toBe(startTag({ view: "key", key: "a" }));
    expect(startTag({ view: "windows", key: "a" })).toBe(startTag({ view: "key", key: "a" }));
    expect(startTag({ view: "prefix", key: "x".repeat(1_000) }).length).toBeLessThanOrEqual(256);
  });

  it("takes only a well-formed start", () => {
    expect(parseHubStart(start())).toEqual(start());
    expect(parseHubStart({ ...start(), position: -1 })).toBeUndefined();
    expect(parseHubStart({ ...start(), view: "prefix" })).toEqual(start({ view: "prefix" }));
    expect(parseHubStart({ ...start(), view: "range" })).toBeUndefined();
    expect(parseHubStart({ ...start(), messages: [1] })).toBeUndefined();
    expect(parseHubStart(null)).toBeUndefined();
  });
});

describe("HubCounters", () => {
  it("counts a refusal by the limit it hit, and answers copies of its counts", () => {
    const counters = new HubCounters(1_000);
    const limits = { perHub: 10, perKey: 2 };
    counters.refuse({ hub: 10, key: 0 }, limits);
    counters.refuse({ hub: 4, key: 2 }, limits);
    counters.refuse({ hub: 10, key: 2 }, limits);
    counters.pushed += 3;
    counters.drops.resync++;
    const metrics = counters.metrics(7);
    expect(metrics).toEqual({ sockets: 7, pushed: 3, reads: 0, drops: { slow: 0, resync: 1 }, refused: { hub: 2, key: 1 }, since: 1_000 });
    counters.drops.slow++;
    expect(metrics.drops.slow).toBe(0);
  });
});
