/**
 * A subscription fed by subscription hubs (src/subscriptions/hub-watch.ts), against hubs in memory
 * that plan their pushes with the hub's own rules (src/subscriptions/hub-sockets.ts): the snapshot,
 * then each change with a token merging every partition's position; a hub's `resync` becomes
 * `resync` and a fresh snapshot; a hub reset is followed from the last position with no gap and no
 * repeat; a refusal at the start leaves the stream untouched; acknowledgements every half window.
 */
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/types";
import { acknowledge, type HubSocket, newSocket, planSocket, RESYNC_CLOSE, RESYNC_MESSAGE } from "../../src/subscriptions/hub-sockets";
import { ACK_EVERY, type LinkEvent, parseMessage, REFUSED, runHubWatch } from "../../src/subscriptions/hub-watch";
import { decodeToken, encodeToken } from "../../src/subscriptions/resume-token";
import { RESYNC_DATA, type Snapshot, type WatchEvent, type WatchStart, type WatchTarget } from "../../src/subscriptions/watch-loop";

const TOPIC = "s-changelog";

interface Socket {
  readonly partition: number;
  readonly state: HubSocket;
  readonly deliver: (event: LinkEvent) => void;
  open: boolean;
}

/** Hubs of two partitions in memory: logs, the sockets the stream opened, what they were told. */
class Hubs {
  readonly logs = new Map<number, LogRecord[]>([
    [0, []],
    [1, []],
  ]);
  readonly earliest = new Map<number, number>([
    [0, 0],
    [1, 0],
  ]);
  readonly sockets: Socket[] = [];
  readonly acks: number[] = [];
  /** The store the changelog is the history of (compaction leaves it alone). */
  readonly store = new Map<string, string>();
  refuse = false;

  connect = async (partition: number, position: number, deliver: (event: LinkEvent) => void) => {
    if (this.refuse) return undefined;
    const state = newSocket({ topic: TOPIC, partition, store: "s", view: "prefix", key: "a", position, messages: [] });
    const socket: Socket = { partition, state, deliver, open: true };
    this.sockets.push(socket);
    queueMicrotask(() => this.pump());
    return {
      ack: (count: number) => {
        this.acks.push(count);
        acknowledge(socket.state, count);
        queueMicrotask(() => this.pump());
      },
      close: () => {
        socket.open = false;
      },
    };
  };

  append(partition: number, key: string, value: string): void {
    const log = this.logs.get(partition)!;
    log.push({ offset: (log.at(-1)?.offset ?? this.earliest.get(partition)! - 1) + 1, key, value, headers: [], timestamp: 0 });
    this.store.set(key, value);
    this.pump();
  }

  /** Compaction: offsets below `to` of the partition are gone. */
  compact(partition: number, to: number): void {
    this.logs.set(
      partition,
      this.logs.get(partition)!.filter((r) => r.offset >= to),
    );
    this.earliest.set(partition, to);
  }

  /** The hub of every partition was reset: its sockets broke (`twice`: an error and a close both say so). */
  reset(twice = false): void {
    for (const s of this.open()) {
      s.open = false;
      s.deliver({ closed: 1006 });
      if (twice) s.deliver({ closed: 1006 });
    }
  }

  open(): Socket[] {
    return this.sockets.filter((s) => s.open);
  }

  pump(): void {
    for (const s of this.open()) {
      const log = this.logs.get(s.partition)!;
      const latest = (log.at(-1)?.offset ?? this.earliest.get(s.partition)! - 1) + 1;
      const records = log.filter((r) => r.offset >= s.state.position);
      const plan = planSocket(s.state, { from: s.state.position, records, latest }, 0, (key, value) => ({ key, value }));
      for (const message of plan.messages) s.deliver({ message });
      if (plan.resync || s.state.position < this.earliest.get(s.partition)!) {
        s.open = false;
        s.deliver({ message: RESYNC_MESSAGE });
        s.deliver({ closed: RESYNC_CLOSE });
      }
    }
  }

  /** The store now: the latest value of each key. */
  snapshot(): Snapshot {
    const positions = new Map<number, number>();
    for (const [p, log] of this.logs) positions.set(p, (log.at(-1)?.offset ?? this.earliest.get(p)! - 1) + 1);
    const entries = [...this.store].filter(([key]) => target.watched(key)).sort();
    return { entries: entries.map(([key, value]) => ({ key, value })), positions };
  }
}

const target: WatchTarget = {
  topic: TOPIC,
  partitions: [0, 1],
  watched: (k) => k.startsWith("a"),
  kind: "prefix",
  present: (key, value) => JSON.stringify({ key, value }),
  snapshotEnd: (keys) => JSON.stringify({ prefix: "a", keys }),
};

/** Runs the stream until `until` holds of its events (then the subscriber leaves); `during` drives the hubs meanwhile. */
async function run(hubs: Hubs, start: WatchStart, until: (events: WatchEvent[]) => boolean, during: (events: WatchEvent[]) => Promise<void>) {
  const events: WatchEvent[] = [];
  let left = false;
  const running = runHubWatch(
    target,
    {
      connect: hubs.connect,
      snapshot: async () => hubs.snapshot(),
      send: async (e) => {
        events.push(e);
      },
      closed: () => left,
      idle: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 2))),
      keepAlive: async () => {},
      now: () => 0,
      fetch: async () => {
        throw new Error("a hub-fed stream reads no log");
      },
      offsets: async () => {
        throw new Error("a hub-fed stream reads no log");
      },
    },
    start,
  );
  await during(events);
  for (let i = 0; i < 500 && !until(events); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  left = true;
  const result = await running;
  return { events, result };
}

const positionsOf = (id: string | undefined) => Object.fromEntries(decodeToken(id!)!.positions);
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("a stream fed by hubs", () => {
  it("sends the snapshot, then each change of the watched keys with a token holding every partition's position", async () => {
    const hubs = new Hubs();
    hubs.append(0, "a1", "1");
    hubs.append(1, "b1", "x");
    const { events } = await run(
      hubs,
      { snapshot: hubs.snapshot() },
      (e) => e.length >= 4,
      async () => {
        await tick();
        hubs.append(1, "a2", "2");
        hubs.append(0, "b2", "y");
        hubs.append(0, "a1", "3");
      },
    );
    expect(events.map((e) => [e.event, e.data])).toEqual([
      [undefined, JSON.stringify({ key: "a1", value: "1" })],
      ["snapshot-end", JSON.stringify({ prefix: "a", keys: 1 })],
      [undefined, JSON.stringify({ key: "a2", value: "2" })],
      [undefined, JSON.stringify({ key: "a1", value: "3" })],
    ]);
    expect(positionsOf(events[1]!.id)).toEqual({ 0: 1, 1: 1 });
    expect(positionsOf(events[2]!.id)).toEqual({ 0: 1, 1: 2 });
    expect(positionsOf(events[3]!.id)).toEqual({ 0: 3, 1: 2 });
    expect(hubs.sockets.map((s) => s.partition).sort()).toEqual([0, 1]);
  });

  it("resumes from a token: every change after it once, and goes on from where a reset hub's socket stood", async () => {
    const hubs = new Hubs();
    for (let i = 0; i < 3; i++) hubs.append(0, `a${i}`, String(i));
    hubs.append(1, "a9", "9");
    const resume = new Map([
      [0, 1],
      [1, 1],
    ]);
    const { events } = await run(
      hubs,
      { resume },
      (e) => e.length >= 4,
      async (events) => {
        for (let i = 0; i < 200 && events.length < 2; i++) await tick();
        hubs.reset(true);
        hubs.append(0, "a3", "3");
        hubs.append(1, "a8", "8");
      },
    );
    expect(events.map((e) => JSON.parse(e.data).key)).toEqual(["a1", "a2", "a3", "a8"]);
    expect(positionsOf(events.at(-1)!.id)).toEqual({ 0: 4, 1: 2 });
    // Two sockets at the start, two more after the reset (one each, though each said twice it closed).
    expect(hubs.sockets.length).toBe(4);
  });

  it("turns a hub's resync into resync and a fresh snapshot, and follows the hubs from the snapshot's positions", async () => {
    const hubs = new Hubs();
    hubs.append(0, "a1", "1");
    const { events } = await run(
      hubs,
      { snapshot: hubs.snapshot() },
      (e) => e.some((x) => x.data.includes('"a5"')),
      async (events) => {
        for (let i = 0; i < 200 && events.length < 2; i++) await tick();
        // The partition's socket stands at 1; compaction removes offsets up to 3 before the hub reads.
        const socket = hubs.open().find((s) => s.partition === 0)!;
        socket.open = false;
        hubs.append(0, "a2", "2");
        hubs.append(0, "a3", "3");
        hubs.compact(0, 2);
        socket.open = true;
        hubs.pump();
        for (let i = 0; i < 200 && !events.some((e) => e.event === "snapshot-end" && events.indexOf(e) > 1); i++) await tick();
        hubs.append(0, "a5", "5");
      },
    );
    expect(events.map((e) => [e.event, e.data])).toEqual([
      [undefined, JSON.stringify({ key: "a1", value: "1" })],
      ["snapshot-end", JSON.stringify({ prefix: "a", keys: 1 })],
      ["resync", RESYNC_DATA],
      ["snapshot", JSON.stringify({ key: "a1", value: "1" })],
      ["snapshot", JSON.stringify({ key: "a2", value: "2" })],
      ["snapshot", JSON.stringify({ key: "a3", value: "3" })],
      ["snapshot-end", JSON.stringify({ prefix: "a", keys: 3 })],
      [undefined, JSON.stringify({ key: "a5", value: "5" })],
    ]);
    expect(positionsOf(events[6]!.id)).toEqual({ 0: 3, 1: 0 });
    expect(positionsOf(events[7]!.id)).toEqual({ 0: 4, 1: 0 });
  });

  it("sends a fresh snapshot marked as such, without resync, for a token the changelog no longer holds", async () => {
    const hubs = new Hubs();
    hubs.append(0, "a1", "1");
    hubs.append(0, "a1", "2");
    hubs.compact(0, 1);
    const { events } = await run(
      hubs,
      {
        resume: new Map([
          [0, 0],
          [1, 0],
        ]),
      },
      (e) => e.length >= 2,
      async () => {},
    );
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ["snapshot", JSON.stringify({ key: "a1", value: "2" })],
      ["snapshot-end", JSON.stringify({ prefix: "a", keys: 1 })],
    ]);
  });

  it("answers REFUSED, having sent nothing and kept no socket, when a hub refuses at the start", async () => {
    const hubs = new Hubs();
    hubs.refuse = true;
    const { events, result } = await run(
      hubs,
      { snapshot: hubs.snapshot() },
      () => true,
      async () => {},
    );
    expect(result).toBe(REFUSED);
    expect(events).toEqual([]);
    expect(hubs.open()).toEqual([]);
  });

  it(`acknowledges every ${ACK_EVERY} messages taken, so a hub never waits on a window`, async () => {
    const hubs = new Hubs();
    const { events } = await run(
      hubs,
      { snapshot: hubs.snapshot() },
      (e) => e.length >= 1 + 2.5 * ACK_EVERY,
      async () => {
        await tick();
        for (let i = 0; i < 2.5 * ACK_EVERY; i++) hubs.append(1, `a${i}`, String(i));
      },
    );
    expect(events.length).toBe(1 + 2.5 * ACK_EVERY);
    expect(hubs.acks).toEqual([ACK_EVERY, 2 * ACK_EVERY]);
  });
});

describe("a hub's message as the stream sends it", () => {
  it("is its data as JSON text and the offset its token reads up to", () => {
    const id = encodeToken({ topic: TOPIC, positions: new Map([[3, 42]]) });
    expect(parseMessage(JSON.stringify({ event: "message", data: { key: "k", value: { n: 1 } }, id }))).toEqual({
      event: "message",
      data: '{"key":"k","value":{"n":1}}',
      at: 42,
    });
    expect(parseMessage(RESYNC_MESSAGE)).toMatchObject({ event: "resync", at: undefined });
    expect(parseMessage("not json")).toBeUndefined();
  });
});
