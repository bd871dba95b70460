/**
 * A topic tail fed by its partition's subscription hub (docs/subscriptions.md, *Tailing a topic*):
 * the Worker holds the subscriber's server-sent event stream and is itself a WebSocket client of
 * the hub of the tailed partition, which hibernates between appends. So an idle tail costs no
 * request, no alarm and no duration of any object: the Worker only awaits (no poll).
 *
 * The stream is the one `runTail` (tail-loop.ts) sends: `start`, then every record from the
 * offset on with its offset as id, and `gap` for offsets the partition no longer holds — the hub
 * renders them as the Worker's loop does. The Worker keeps the position (after the last record or
 * gap passed on), so a hub socket closed otherwise than by the subscriber (the hub was reset, or it
 * closed a window stalled by a slow subscriber) is opened again there: every record after it once.
 * Back-pressure as hub-watch.ts: the Worker acknowledges what it passed on, so the hub is at most
 * its window ahead.
 *
 * Platform-free: the Worker gives it the hub (workers/api/hub-socket.ts) and the stream.
 */
import type { TopicPartition } from "../log/types";
import { Subscriber, type StreamPorts } from "./follow-log";
import { ACK_EVERY, type HubLink, Inbox, type LinkEvent, REFUSED, reopen, Waiting } from "./hub-watch";

export interface HubTailPorts extends StreamPorts {
  /** Opens a socket to the partition's hub from offset `position`; `deliver` gets its messages and its close, in order. Undefined when the hub refuses it. */
  connect(position: number, deliver: (event: LinkEvent) => void): Promise<HubLink | undefined>;
}

/** A tail hub's message: a record (its data as the stream sends it, the offset its id names), or a gap. */
export type TailMessage = { readonly record: string; readonly offset: number } | { readonly gap: { readonly from: number; readonly to: number } };

/** Parses a tail hub's message; undefined for anything else. */
export function parseTailMessage(text: string): TailMessage | undefined {
  try {
    const m = JSON.parse(text) as { event?: unknown; data?: { from?: unknown; to?: unknown }; id?: unknown };
    if (m.event === "message" && typeof m.id === "string" && /^(0|[1-9][0-9]*)$/.test(m.id)) return { record: JSON.stringify(m.data), offset: Number(m.id) };
    const { from, to } = m.data ?? {};
    if (m.event === "gap" && Number.isSafeInteger(from) && Number.isSafeInteger(to)) return { gap: { from: from as number, to: to as number } };
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs the tail of `tp` from offset `from` until the subscriber goes away; `REFUSED` (nothing sent)
 * when the hub refused the socket at the start or could not be reached: the caller reads the log
 * itself (tail-loop.ts). A hub socket that cannot be opened again ends it with an error (the
 * subscriber resumes with its last id).
 */
export async function runHubTail(tp: TopicPartition, from: number, ports: HubTailPorts): Promise<typeof REFUSED | undefined> {
  const subscriber = new Subscriber(ports);
  const inbox = new Inbox<{ readonly serial: number; readonly event: LinkEvent }>();
  let position = from;
  let serials = 0;
  const l = { partition: tp.partition, serial: 0, link: undefined as HubLink | undefined, received: 0, acked: 0, failures: 0 };
  const open = async () => {
    const serial = ++serials;
    l.serial = serial;
    l.received = l.acked = 0;
    l.link = await ports.connect(position, (event) => inbox.push({ serial, event }));
    return l.link !== undefined;
  };
  try {
    if (!(await open().catch(() => false))) return REFUSED;
    await subscriber.send({ event: "start", data: JSON.stringify({ topic: tp.topic, partition: tp.partition, from }) });
    const waiting = new Waiting(inbox, subscriber);
    while (!subscriber.closed()) {
      const arrival = await waiting.next();
      // Only the current socket counts: one closed (a close and an error both said so) or replaced is done with.
      if (arrival === undefined || arrival.serial !== l.serial) continue;
      if ("closed" in arrival.event) {
        await reopen(l, open);
        continue;
      }
      l.received++;
      const message = parseTailMessage(arrival.event.message);
      if (message === undefined) throw new Error(`unexpected message from a subscription hub: ${arrival.event.message.slice(0, 200)}`);
      if ("gap" in message) {
        ports.recovered?.("gap");
        await subscriber.send({ event: "gap", data: JSON.stringify(message.gap) });
        position = message.gap.to;
      } else {
        await subscriber.send({ data: message.record, id: String(message.offset) });
        position = message.offset + 1;
      }
      l.failures = 0;
      if (l.received - l.acked >= ACK_EVERY && l.link) {
        l.link.ack(l.received);
        l.acked = l.received;
      }
    }
  } finally {
    l.link?.close();
  }
  return undefined;
}
