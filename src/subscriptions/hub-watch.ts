/**
 * A store subscription fed by subscription hubs (docs/subscriptions.md, "Server-sent events and
 * prefixes through the hubs"): the Worker holds the subscriber's connection (a server-sent event
 * stream, or a prefix's WebSocket) and is itself a WebSocket client of the hub of each watched
 * changelog partition. Each hub socket hibernates with the hub, so an idle subscriber costs no
 * request and no duration of any object; the Worker only awaits (a Worker is billed for CPU, not
 * for the time it waits).
 *
 * The stream is the one `runWatch` (watch-loop.ts) sends: the same snapshot, the same events with
 * the same data, and the same resume tokens — the changelog offsets read up to, one per watched
 * partition, merged here from what each hub pushed. A hub that can no longer follow (its `resync`:
 * compaction or retention overtook the position) makes the stream send `resync` and a fresh
 * snapshot, as `runWatch` does, and reconnect every hub at the snapshot's positions. A hub socket
 * closed otherwise (the hub was reset or evicted with its sockets, or it closed a stalled window)
 * is opened again at the partition's position: every change after it comes once.
 *
 * Back-pressure: the Worker acknowledges a hub's messages only once it passed them on (a
 * response's write resolved, a socket's window had room), every `ACK_EVERY` messages, so a hub
 * sends at most its window ahead and the Worker's inbox holds at most that per partition.
 *
 * Platform-free: the Worker gives it the hubs (workers/api/hub-socket.ts) and the stream.
 */
import { KEEP_ALIVE_MS, Subscriber } from "./follow-log";
import { decodeToken, encodeToken, type Positions } from "./resume-token";
import { SOCKET_WINDOW } from "./socket-credit";
import { RESYNC_DATA, snapshotEvents, type Snapshot, type WatchPorts, type WatchStart, type WatchTarget } from "./watch-loop";

/** Acknowledge a hub every this many messages (half its window: it never waits on the Worker's acknowledgement alone). */
export const ACK_EVERY = SOCKET_WINDOW / 2;
/** Tries to open a partition's hub socket again, in a row, before the stream fails (the subscriber then resumes with its last id). */
export const MAX_RECONNECTS = 5;
/** The first wait before opening a hub socket again (doubling). */
export const RECONNECT_MS = 50;

/** What a hub socket gave the Worker: a text message, or its close (code 1006 when it broke). */
export type LinkEvent = { readonly message: string } | { readonly closed: number };

/** The Worker's end of one hub socket. */
export interface HubLink {
  /** Tells the hub the first `count` messages were taken. */
  ack(count: number): void;
  /** Closes the socket (the hub forgets it). */
  close(): void;
}

export interface HubPorts extends WatchPorts {
  /**
   * Opens the hub socket of `partition` from changelog offset `position`; `deliver` gets its
   * messages and its close, in order. Undefined when the hub refuses it (its limits).
   */
  connect(partition: number, position: number, deliver: (event: LinkEvent) => void): Promise<HubLink | undefined>;
}

/** The hub refused a socket when the stream opened: the caller follows the log itself instead. */
export const REFUSED = "refused";

/** Events from every link, in arrival order; `wait` resolves once one is there. */
export class Inbox<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.waiter?.();
    this.waiter = undefined;
  }

  shift(): T | undefined {
    return this.items.shift();
  }

  get size(): number {
    return this.items.length;
  }

  wait(): Promise<void> {
    if (this.items.length > 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

interface Link {
  readonly partition: number;
  /** Which socket of the stream this is (each open makes a new one): events of an older socket are ignored. */
  serial: number;
  link: HubLink | undefined;
  received: number;
  acked: number;
  /** Failed opens in a row. */
  failures: number;
}

interface Arrival {
  readonly serial: number;
  readonly partition: number;
  readonly event: LinkEvent;
}

/**
 * Runs the subscription until the subscriber goes away; `REFUSED` (nothing sent) when a hub
 * refused a socket at the start, or could not be reached. A hub socket that cannot be opened
 * again ends it with an error (the subscriber resumes with its last id).
 */
export async function runHubWatch(target: WatchTarget, ports: HubPorts, start: WatchStart): Promise<typeof REFUSED | undefined> {
  const subscriber = new Subscriber(ports);
  const token = (positions: Positions) => encodeToken({ topic: target.topic, positions });
  const positions = new Map("snapshot" in start ? start.snapshot.positions : start.resume);
  const inbox = new Inbox<Arrival>();
  let serials = 0;
  let links: Link[] = [];

  const closeAll = () => {
    for (const l of links) l.link?.close();
    links = [];
  };
  const open = async (l: Link) => {
    const serial = ++serials;
    l.serial = serial;
    l.received = l.acked = 0;
    l.link = await ports.connect(l.partition, positions.get(l.partition) ?? 0, (event) => inbox.push({ serial, partition: l.partition, event }));
    return l.link !== undefined;
  };
  /** Opens every partition's socket; false when a hub refused one or could not be reached (then none is left open). */
  const openAll = async () => {
    closeAll();
    links = target.partitions.map((partition) => ({ partition, serial: 0, link: undefined, received: 0, acked: 0, failures: 0 }));
    const opened = await Promise.all(links.map((l) => open(l).catch(() => false)));
    if (opened.every(Boolean)) return true;
    closeAll();
    return false;
  };
  const sendSnapshot = async (snapshot: Snapshot, marked: boolean) => {
    for (const e of snapshotEvents(target, snapshot, token(snapshot.positions), marked)) await subscriber.send(e);
  };

  try {
    if (!(await openAll())) return REFUSED;
    if ("snapshot" in start) await sendSnapshot(start.snapshot, false);
    const waiting = new Waiting(inbox, subscriber);
    while (!subscriber.closed()) {
      const arrival = await waiting.next();
      if (arrival === undefined) continue;
      // Only the partition's current socket counts: one closed (a close and an error both said so) or replaced is done with.
      const l = links.find((x) => x.partition === arrival.partition && x.serial === arrival.serial);
      if (l === undefined) continue;
      if ("closed" in arrival.event) {
        await reopen(l, open);
        continue;
      }
      l.received++;
      const message = parseMessage(arrival.event.message);
      if (message?.event === "resync") {
        // The hub cannot follow this partition from where the stream stands: a fresh snapshot, as runWatch.
        if (subscriber.sentAny) {
          ports.recovered?.("resync");
          await subscriber.send({ event: "resync", data: RESYNC_DATA });
        } else ports.recovered?.("snapshot");
        closeAll();
        const fresh = await ports.snapshot();
        positions.clear();
        for (const [partition, offset] of fresh.positions) positions.set(partition, offset);
        if (!(await openAll())) throw new Error("a subscription hub refused the stream's socket after a fresh snapshot");
        await sendSnapshot(fresh, true);
        continue;
      }
      if (message?.event !== "message" || message.at === undefined)
        throw new Error(`unexpected message from a subscription hub: ${arrival.event.message.slice(0, 200)}`);
      positions.set(l.partition, message.at);
      await subscriber.send({ data: message.data, id: token(positions) });
      l.failures = 0;
      if (l.received - l.acked >= ACK_EVERY && l.link) {
        l.link.ack(l.received);
        l.acked = l.received;
      }
    }
  } finally {
    closeAll();
  }
  return undefined;
}

/** Waits for the next arrival in an inbox, sending the subscriber a keep-alive when it was sent nothing for `KEEP_ALIVE_MS`. */
export class Waiting<T> {
  // One wait for the keep-alive (or the subscriber leaving) at a time: not a timer per message.
  private tick: Promise<void> | undefined;

  constructor(
    private readonly inbox: Inbox<T>,
    private readonly subscriber: Subscriber,
  ) {}

  /** The next arrival; undefined after a keep-alive or a wait (ask again while the subscriber is there). */
  async next(): Promise<T | undefined> {
    const arrival = this.inbox.shift();
    if (arrival !== undefined) return arrival;
    const { ports } = this.subscriber;
    const quiet = this.subscriber.lastSentAt + KEEP_ALIVE_MS - ports.now();
    if (quiet <= 0) {
      await ports.keepAlive();
      this.subscriber.lastSentAt = ports.now();
      return undefined;
    }
    this.tick ??= ports.idle(quiet).then(() => {
      this.tick = undefined;
    });
    await Promise.race([this.inbox.wait(), this.tick]);
    return undefined;
  }
}

/** What `reopen` needs of a hub socket's state. */
export interface Reopened {
  readonly partition: number;
  link: HubLink | undefined;
  /** Failed opens in a row. */
  failures: number;
}

/** Opens a partition's socket again after its close, waiting longer after each failure; throws past `MAX_RECONNECTS`. */
export async function reopen<L extends Reopened>(l: L, open: (l: L) => Promise<boolean>): Promise<void> {
  l.link?.close();
  l.link = undefined;
  for (;;) {
    if (l.failures >= MAX_RECONNECTS) throw new Error(`the subscription hub of partition ${l.partition} closed its socket ${MAX_RECONNECTS} times in a row`);
    if (l.failures > 0) await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS * 2 ** (l.failures - 1)));
    l.failures++;
    try {
      if (await open(l)) return;
    } catch {
      // The hub could not be reached (reset meanwhile): try again.
    }
  }
}

/** A hub's message: its event, its data as the stream sends it (JSON text), and the offset its id reads up to. */
export function parseMessage(text: string): { event: string; data: string; at: number | undefined } | undefined {
  try {
    const m = JSON.parse(text) as { event?: unknown; data?: unknown; id?: unknown };
    if (typeof m.event !== "string") return undefined;
    const positions = typeof m.id === "string" ? decodeToken(m.id)?.positions : undefined;
    const at = positions?.size === 1 ? [...positions.values()][0] : undefined;
    return { event: m.event, data: JSON.stringify(m.data ?? null), at };
  } catch {
    return undefined;
  }
}
