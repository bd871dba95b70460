/**
 * The sockets of a subscription hub (docs/subscriptions.md): one hibernating Durable Object per
 * changelog partition (durable-objects/subscription-hub.ts) holds the WebSocket subscriptions of
 * keys (and of a key's windows) in that partition. Each socket's state lives in its attachment
 * (this `HubSocket`), not in rows: what it watches, the next changelog offset it reads, and its
 * acknowledgement window (the same credit as socket-credit.ts). On a wake-up the hub reads one
 * batch from the lowest position among the sockets with room and `planPush` says, per socket,
 * what to send and where it stands then. Platform-free.
 */
import type { LogRecord, OffsetRange } from "../log/types";
import { changeOf } from "./change-feed";
import { encodeToken } from "./resume-token";
import { SOCKET_STALL_MS, SOCKET_WINDOW } from "./socket-credit";
import { windowRowsPrefix } from "./window-keys";

/** Sockets one hub holds at most (the runtime takes far more; this bounds one object's fan-out work). */
export const MAX_SOCKETS_PER_HUB = 10_000;
/** Sockets watching one key (its value or its windows) at most, per hub. */
export const MAX_SOCKETS_PER_KEY = 1_000;
/** The close code of a socket the hub can no longer follow (compaction or retention overtook it): reconnect without `lastEventId` for a fresh snapshot. */
export const RESYNC_CLOSE = 4009;

/**
 * What a socket watches: one key's value (`key`), every window of one key (`windows`), every
 * key with a prefix (`prefix`: its `key` is the serialized prefix; the Worker's socket to each
 * partition's hub, feeding a prefix subscription or a server-sent event stream, src/subscriptions/hub-watch.ts),
 * or every record of the partition (`tail`: a topic tail of any topic, its `store` and `key` empty;
 * src/subscriptions/hub-tail.ts).
 */
export type HubView = "key" | "windows" | "prefix" | "tail";

/** What a hub knows of one socket: its attachment (serializeAttachment), rewritten as it advances. */
export interface HubSocket {
  readonly topic: string;
  readonly partition: number;
  readonly store: string;
  readonly view: HubView;
  /** The serialized key watched (a prefix's: the serialized prefix). */
  readonly key: string;
  /** The next changelog offset this socket reads. */
  position: number;
  /** Messages sent and acknowledged (`{"ack": n}`), as socket-credit.ts counts them. */
  sent: number;
  acked: number;
  /** Since when the window is full (null: it has room). */
  fullSince: number | null;
  /**
   * A subscriber's own socket (handed over by the Worker): on a resync the hub takes its fresh
   * snapshot and goes on (hub-resync.ts). Otherwise (the Worker's socket feeding a stream it holds,
   * or an attachment written before this field) it is sent `resync` and closed `RESYNC_CLOSE`.
   */
  readonly snapshots?: boolean;
}

/** What a Worker hands a hub with the upgrade: the socket's start and the snapshot's messages (none on a resume). */
export interface HubStart {
  readonly topic: string;
  readonly partition: number;
  readonly store: string;
  readonly view: HubView;
  readonly key: string;
  /** The offset after the snapshot (its changelog position) or the resume token's. */
  readonly position: number;
  /** Messages to send first, in order (the snapshot), already rendered. */
  readonly messages: readonly string[];
  /** The subscriber's own socket: the hub takes its fresh snapshot on a resync (`HubSocket.snapshots`). */
  readonly snapshots?: boolean;
}

/** The start a request's body holds; undefined when it is not one. */
export function parseHubStart(body: unknown): HubStart | undefined {
  const b = body as Partial<HubStart> | null;
  if (typeof b !== "object" || b === null) return undefined;
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  if (typeof b.topic !== "string" || typeof b.store !== "string" || typeof b.key !== "string") return undefined;
  if (!count(b.partition) || !count(b.position) || !["key", "windows", "prefix", "tail"].includes(b.view as string)) return undefined;
  if (!Array.isArray(b.messages) || !b.messages.every((m) => typeof m === "string")) return undefined;
  if (b.snapshots !== undefined && typeof b.snapshots !== "boolean") return undefined;
  return b as HubStart;
}

/** The socket a start opens (the snapshot's messages counted as sent). */
export function newSocket(start: HubStart): HubSocket {
  const { topic, partition, store, view, key, position, messages } = start;
  const socket: HubSocket = { topic, partition, store, view, key, position, sent: messages.length, acked: 0, fullSince: null };
  return start.snapshots && (view === "key" || view === "windows") ? { ...socket, snapshots: true } : socket;
}

/**
 * The tag a socket is accepted with (per-key counts): the key, or a hash of a long one (tags are at
 * most 256 characters). A key's value and its windows count alike; a prefix counts apart (`p`).
 */
export function keyTag(key: string, kind: "k" | "p" = "k"): string {
  if (key.length <= 200) return `${kind}:${key}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return `${kind === "k" ? "h" : "q"}:${key.length}:${h.toString(16)}`;
}

/** The tag every tail of the partition is accepted with: the tails of a partition count as the sockets of one key. */
export const TAIL_TAG = "t:";

/** The tag of the socket a start opens. */
export function startTag(start: Pick<HubStart, "view" | "key">): string {
  if (start.view === "tail") return TAIL_TAG;
  return keyTag(start.key, start.view === "prefix" ? "p" : "k");
}

export interface HubLimits {
  readonly perHub: number;
  readonly perKey: number;
}

/** Why a new socket is refused (undefined: taken), given the sockets open in the hub and on its key (a tail's: the partition's tails). */
export function refusal(
  open: { hub: number; key: number },
  limits: HubLimits = { perHub: MAX_SOCKETS_PER_HUB, perKey: MAX_SOCKETS_PER_KEY },
  view: HubView = "key",
): string | undefined {
  if (open.hub >= limits.perHub) return `this subscription hub holds ${limits.perHub} sockets, its most: try again later`;
  if (open.key >= limits.perKey)
    return view === "tail"
      ? `${limits.perKey} sockets tail this partition already, the most: try again later`
      : `${limits.perKey} sockets watch this key already, the most: try again later`;
  return undefined;
}

export function hasRoom(s: HubSocket, window = SOCKET_WINDOW): boolean {
  return s.sent - s.acked < window;
}

/** Takes an acknowledgement (as SocketCredit.ack): false for one that is not a count or exceeds what was sent. */
export function acknowledge(s: HubSocket, count: unknown, window = SOCKET_WINDOW): boolean {
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0 || count > s.sent) return false;
  if (count > s.acked) s.acked = count;
  if (hasRoom(s, window)) s.fullSince = null;
  return true;
}

/** Whether the socket's window has been full longer than `stallMs` (closed `4008` then). */
export function stalled(s: HubSocket, now: number, stallMs = SOCKET_STALL_MS): boolean {
  return s.fullSince !== null && now - s.fullSince >= stallMs;
}

/** Where the hub reads from: the lowest position among sockets with room; undefined when none has room. */
export function readFrom(sockets: readonly HubSocket[], window = SOCKET_WINDOW): number | undefined {
  let from: number | undefined;
  for (const s of sockets) if (hasRoom(s, window) && (from === undefined || s.position < from)) from = s.position;
  return from;
}

/** Whether a record's (serialized) key is one the socket watches. */
export function watches(s: HubSocket): (key: string) => boolean {
  if (s.view === "tail") return () => true;
  if (s.view === "key") return (k) => k === s.key;
  const prefix = s.view === "prefix" ? s.key : windowRowsPrefix(s.key);
  return (k) => k.startsWith(prefix);
}

/** One read of the partition: its records from offset `from` on, and the partition's end then. */
export interface HubBatch {
  readonly from: number;
  readonly records: readonly LogRecord[];
  readonly latest: number;
}

/** What one socket gets from a batch: its messages, in order, and whether it must resync (then closed). */
export interface SocketPlan {
  readonly messages: string[];
  readonly resync: boolean;
}

/**
 * What a batch read from `from` (a partition ending at `latest`) gives `s` (nothing when `s` stands below `from`), advancing its position
 * and counts: each record from its position on that it watches, rendered by `data` (its event's
 * data, JSON) with the token of the position after it, until its window is full. A missing offset
 * from its position on (compaction, retention, a log that started over) is a resync. `rendered`,
 * shared by the sockets that watch the same key and view in one batch, keeps each record's message
 * (they are the same for all of them): a record is rendered once, not once per socket.
 */
export function planSocket(
  s: HubSocket,
  { from, records, latest }: HubBatch,
  now: number,
  data: (key: string, value: string | null) => unknown,
  window = SOCKET_WINDOW,
  rendered?: Map<number, string>,
): SocketPlan {
  const messages: string[] = [];
  // Below the batch (its window opened while the batch was read): the next read starts from it.
  if (!hasRoom(s, window) || s.position < from) return { messages, resync: false };
  if (s.position > latest) return { messages, resync: true };
  const selected = watches(s);
  for (const record of records) {
    if (record.offset < s.position) continue;
    if (record.offset !== s.position) return { messages, resync: true };
    const change = changeOf(record, selected);
    if (change) {
      if (!hasRoom(s, window)) {
        s.fullSince ??= now;
        return { messages, resync: false };
      }
      let message = rendered?.get(record.offset);
      if (message === undefined) {
        const id = encodeToken({ topic: s.topic, positions: new Map([[s.partition, record.offset + 1]]) });
        message = JSON.stringify({ event: "message", data: data(change.key, change.value), id });
        rendered?.set(record.offset, message);
      }
      messages.push(message);
      s.sent++;
    }
    s.position = record.offset + 1;
  }
  // Read to the end of what the batch holds, and nothing past: offsets gone at the log's end.
  if (records.length === 0 && s.position < latest) return { messages, resync: true };
  if (!hasRoom(s, window)) s.fullSince ??= now;
  return { messages, resync: false };
}

/** A tail's message for offsets `from` (included) up to `to` (excluded) that the partition no longer holds. */
export function gapMessage(from: number, to: number): string {
  return JSON.stringify({ event: "gap", data: { from, to } });
}

/**
 * What a batch gives a tail's socket (nothing when it stands below `from`), advancing its position
 * and counts: every record from its position on, rendered by `render` (its message, the record's
 * offset as its id; one rendering per record shared by every tail of the batch), with a `gap`
 * message before any offsets the partition no longer holds (compaction, retention, a log that
 * started over: then the gap ends at the partition's end), as src/subscriptions/tail-loop.ts
 * sends them. A tail never resyncs: it goes on after a gap. Each message takes a place of the
 * window; a full window stops it where it stands.
 */
export function planTail(
  s: HubSocket,
  { from, records, latest }: HubBatch,
  now: number,
  render: (record: LogRecord) => string,
  window = SOCKET_WINDOW,
): string[] {
  const messages: string[] = [];
  if (!hasRoom(s, window) || s.position < from) return messages;
  /** Sends `message` when the window has room, moving the position to `to`; false when full. */
  const push = (message: string, to: number): boolean => {
    if (!hasRoom(s, window)) {
      s.fullSince ??= now;
      return false;
    }
    messages.push(message);
    s.sent++;
    s.position = to;
    return true;
  };
  if (s.position > latest) {
    push(gapMessage(s.position, latest), latest);
    return messages;
  }
  for (const record of records) {
    if (record.offset < s.position) continue;
    if (record.offset > s.position && !push(gapMessage(s.position, record.offset), record.offset)) return messages;
    if (!push(render(record), record.offset + 1)) return messages;
  }
  // Read to the end of what the batch holds, and nothing past: offsets gone at the log's end.
  if (records.length === 0 && s.position < latest) push(gapMessage(s.position, latest), latest);
  if (!hasRoom(s, window)) s.fullSince ??= now;
  return messages;
}

/**
 * What a tail's socket gets when its position is outside what the partition holds (below its start,
 * or past its end after the log started over): a `gap` to where it goes on, when the window has
 * room, advancing its position and count. A tail never resyncs (a key's socket does: `resync`).
 */
export function planTailOutside(s: HubSocket, range: OffsetRange, window = SOCKET_WINDOW): string[] {
  if (!hasRoom(s, window)) return [];
  const to = s.position < range.earliest ? range.earliest : range.latest;
  const message = gapMessage(s.position, to);
  s.position = to;
  s.sent++;
  return [message];
}

/** Whether a socket still has records to read (and room to take them). */
export function behind(s: HubSocket, latest: number, window = SOCKET_WINDOW): boolean {
  return hasRoom(s, window) && s.position < latest;
}

/** Whether a position is outside what the partition keeps (below its earliest, beyond its end). */
export function outside(position: number, { earliest, latest }: OffsetRange): boolean {
  return position < earliest || position > latest;
}

/** The message a socket that must resync gets before it is closed with `RESYNC_CLOSE`. */
export const RESYNC_MESSAGE = JSON.stringify({
  event: "resync",
  data: { reason: "the changelog no longer holds every change since this stream's position: reconnect without lastEventId for a fresh snapshot" },
});
