/**
 * A subscriber's socket held by a hub that the changelog no longer serves from its position
 * (compaction or retention overtook a slow subscriber, or a token too old): the hub takes a fresh
 * snapshot of the socket's key (or key's windows) from the owning task itself and sends, on the
 * same socket, `resync` (none when nothing was sent yet: a stale token) and the snapshot as
 * `snapshot` events, then goes on from the snapshot's offset — the events the Worker's own loop
 * sends (watch-loop.ts), byte for byte (docs/subscriptions.md, *Sockets held by a hibernating hub*).
 * Platform-free: the hub gives the snapshot's ports (store-snapshot.ts).
 */
import { keyForAnswer } from "../streams/key-text";
import type { StoreDefinition } from "../streams/topology/topology";
import type { SnapshotSelection } from "../task/protocol";
import { changeData } from "./change-data";
import type { HubSocket } from "./hub-sockets";
import { encodeToken } from "./resume-token";
import { socketMessage } from "./socket-message";
import { MAX_SNAPSHOT_KEYS } from "./store-snapshot";
import { RESYNC_DATA, type Snapshot, snapshotEvents, type WatchTarget } from "./watch-loop";
import { windowRowsPrefix } from "./window-keys";

/** What a fresh snapshot of a socket's subscription takes: what to ask the task, and how its events read. */
export interface Resnapshot {
  readonly target: WatchTarget;
  readonly selection: SnapshotSelection;
  /** The refusal's message past `MAX_SNAPSHOT_KEYS` rows (a key's windows). */
  readonly tooMany?: string;
}

/** The subscription of a key's (or a key's windows') socket, as workers/api/routes/watch.ts builds it; undefined for other views. */
export function resnapshotOf(store: StoreDefinition, s: Pick<HubSocket, "topic" | "partition" | "view" | "key">): Resnapshot | undefined {
  if (s.view !== "key" && s.view !== "windows") return undefined;
  const typedKey = keyForAnswer(store.keySerde, s.key);
  const data = changeData(store, s.view, s.key, typedKey);
  const present = (k: string, value: string | null) => JSON.stringify(data(k, value));
  const base = { topic: s.topic, partitions: [s.partition], present };
  if (s.view === "key") return { target: { ...base, watched: (k) => k === s.key, kind: "key", key: s.key }, selection: { key: s.key } };
  const prefix = windowRowsPrefix(s.key);
  return {
    target: { ...base, watched: (row) => row.startsWith(prefix), kind: "prefix", snapshotEnd: (windows) => JSON.stringify({ key: typedKey, windows }) },
    selection: { prefix, limit: MAX_SNAPSHOT_KEYS + 1 },
    tooMany: `key ${JSON.stringify(typedKey)} has more than ${MAX_SNAPSHOT_KEYS} windows in store ${store.name}: too many to watch`,
  };
}

/**
 * The sockets a hub can no longer serve, sorted: those it takes a fresh snapshot for, grouped by
 * what they watch (one snapshot per group, in the order first met), and the rest — a Worker's
 * socket (it takes the snapshot itself) or one written before the flag — which it closes `4009`.
 */
export function sortLost<T>(lost: readonly T[], state: (socket: T) => HubSocket): { readonly groups: T[][]; readonly close: T[] } {
  const groups = new Map<string, T[]>();
  const close: T[] = [];
  for (const socket of lost) {
    const s = state(socket);
    if (!s.snapshots) {
      close.push(socket);
      continue;
    }
    const watched = `${s.store}\n${s.view}\n${s.key}`;
    const group = groups.get(watched);
    if (group) group.push(socket);
    else groups.set(watched, [socket]);
  }
  return { groups: [...groups.values()], close };
}

/** The `resync` message of a subscriber's socket, as the Worker's socket sends it. */
export const RESYNC_EVENT_MESSAGE = socketMessage({ event: "resync", data: RESYNC_DATA });

/**
 * What a socket gets from a fresh snapshot, and where it stands after it: `resync` when it had been
 * sent anything (a stale token on connecting needs no such word), the snapshot's `snapshot` events
 * (the last carrying the token of the snapshot's offset), its position moved to that offset and its
 * messages counted (they may pass its window, as an opening snapshot does).
 */
export function planResnapshot(s: HubSocket, target: WatchTarget, snapshot: Snapshot, now: number, window: number): string[] {
  const position = snapshot.positions.get(s.partition) ?? 0;
  const id = encodeToken({ topic: s.topic, positions: new Map([[s.partition, position]]) });
  const messages = [...(s.sent > 0 ? [RESYNC_EVENT_MESSAGE] : []), ...snapshotEvents(target, snapshot, id, true).map(socketMessage)];
  s.position = position;
  s.sent += messages.length;
  s.fullSince = s.sent - s.acked < window ? null : (s.fullSince ?? now);
  return messages;
}
