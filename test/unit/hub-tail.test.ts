/**
 * A topic tail fed by its partition's subscription hub (src/subscriptions/hub-tail.ts), against a
 * hub in memory that plans its pushes with the hub's own rule (planTail, src/subscriptions/hub-sockets.ts):
 * `start`, every record with its offset as id, gaps passed on; a hub reset followed from the last
 * position with no gap and no repeat; a refusal at the start leaves the stream untouched.
 */
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/log/types";
import type { StreamEvent } from "../../src/subscriptions/follow-log";
import { acknowledge, type HubSocket, newSocket, planTail } from "../../src/subscriptions/hub-sockets";
import { parseTailMessage, runHubTail } from "../../src/subscriptions/hub-tail";
import { ACK_EVERY, type LinkEvent, REFUSED } from "../../src/subscriptions/hub-watch";

const TP = { topic: "t", partition: 0 };

/** The hub of one partition in memory: its log, the sockets the tail opened, the acknowledgements it got. */
class Hub {
  log: LogRecord[] = [];
  readonly sockets: { state: HubSocket; deliver: (event: LinkEvent) => void; open: boolean }[] = [];
  readonly acks: number[] = [];
  refuse = false;

  connect = async (position: number, deliver: (event: LinkEvent) => void) => {
    if (this.refuse) return undefined;
    const socket = { state: newSocket({ ...TP, store: "", view: "tail", key: "", position, messages: [] }), deliver, open: true };
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

  append(count: number): void {
    for (let i = 0; i < count; i++) this.log.push({ offset: this.latest(), key: `k${this.latest()}`, value: "v", headers: [], timestamp: 0 });
    this.pump();
  }

  latest(): number {
    return (this.log.at(-1)?.offset ?? -1) + 1;
  }

  pump(): void {
    for (const s of this.sockets.filter((x) => x.open)) {
      const messages = planTail(
        s.state,
        { from: s.state.position, records: this.log.filter((r) => r.offset >= s.state.position), latest: this.latest() },
        0,
        (r) => JSON.stringify({ event: "message", data: { offset: r.offset, key: r.key }, id: String(r.offset) }),
      );
      for (const message of messages) s.deliver({ message });
    }
  }

  /** The hub was reset: its sockets broke. */
  reset(): void {
    for (const s of this.sockets.filter((x) => x.open)) {
      s.open = false;
      s.deliver({ closed: 1006 });
    }
  }
}

/** Runs the tail from `from` until `until` holds of its events (then the subscriber leaves); `during` drives the hub meanwhile. */
async function run(hub: Hub, from: number, until: (events: StreamEvent[]) => boolean, during: (events: StreamEvent[]) => Promise<void>) {
  const events: StreamEvent[] = [];
  let left = false;
  const running = runHubTail(TP, from, {
    connect: hub.connect,
    send: async (e) => {
      events.push(e);
    },
    closed: () => left,
    idle: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(ms, 2))),
    keepAlive: async () => {},
    now: () => 0,
  });
  await during(events);
  for (let i = 0; i < 500 && !until(events); i++) await tick();
  left = true;
  return { events, result: await running };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
const ids = (events: StreamEvent[]) => events.filter((e) => e.event === undefined).map((e) => Number(e.id));

describe("a tail fed by its hub", () => {
  it("sends start, then every record from the offset on with its offset as id, and a gap for offsets gone", async () => {
    const hub = new Hub();
    hub.append(3);
    hub.log = hub.log.filter((r) => r.offset !== 1);
    const { events } = await run(
      hub,
      0,
      (e) => e.length >= 5,
      async () => hub.append(1),
    );
    expect(events).toEqual([
      { event: "start", data: JSON.stringify({ ...TP, from: 0 }) },
      { data: JSON.stringify({ offset: 0, key: "k0" }), id: "0" },
      { event: "gap", data: JSON.stringify({ from: 1, to: 2 }) },
      { data: JSON.stringify({ offset: 2, key: "k2" }), id: "2" },
      { data: JSON.stringify({ offset: 3, key: "k3" }), id: "3" },
    ]);
  });

  it("opens the hub's socket again after a reset at the offset after the last record passed on: each record once", async () => {
    const hub = new Hub();
    const { events } = await run(
      hub,
      0,
      (e) => ids(e).length >= 6,
      async (events) => {
        hub.append(3);
        for (let i = 0; i < 200 && ids(events).length < 3; i++) await tick();
        hub.reset();
        hub.append(3);
      },
    );
    expect(ids(events)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(hub.sockets.map((s) => s.state.position)).toEqual([3, 6]);
  });

  it("acknowledges every half window, so a hub never stalls on it", async () => {
    const hub = new Hub();
    const { events } = await run(
      hub,
      0,
      (e) => ids(e).length >= 3 * ACK_EVERY,
      async () => hub.append(3 * ACK_EVERY),
    );
    expect(ids(events)).toEqual(Array.from({ length: 3 * ACK_EVERY }, (_, i) => i));
    expect(hub.acks.slice(0, 2)).toEqual([ACK_EVERY, 2 * ACK_EVERY]);
  });

  it("is REFUSED, sending nothing, when the hub refuses its socket at the start", async () => {
    const hub = new Hub();
    hub.refuse = true;
    const { events, result } = await run(
      hub,
      0,
      () => true,
      async () => {},
    );
    expect([result, events]).toEqual([REFUSED, []]);
  });

  it("parses a hub's record and gap messages, nothing else", () => {
    expect(parseTailMessage('{"event":"message","data":{"offset":4},"id":"4"}')).toEqual({ record: '{"offset":4}', offset: 4 });
    expect(parseTailMessage('{"event":"gap","data":{"from":1,"to":3}}')).toEqual({ gap: { from: 1, to: 3 } });
    for (const bad of ["x", '{"event":"message","data":{}}', '{"event":"message","id":"-1"}', '{"event":"gap","data":{"from":1}}', '{"event":"resync"}'])
      expect(parseTailMessage(bad), bad).toBeUndefined();
  });
});
