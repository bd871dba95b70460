/**
 * One store subscription's stream (docs/subscriptions.md): a snapshot of the watched keys at known
 * changelog offsets, then every committed change read from the store's changelog partitions in
 * order (follow-log.ts: bounded batches, back-pressure, keep-alives), each event carrying the
 * resume token of the position after it. When the changelog no longer holds where the stream
 * stands (compaction, retention), the subscriber gets `resync` and a fresh snapshot.
 *
 * Platform-free: the Worker gives it the log, the snapshot and the stream (workers/api/routes/watch.ts).
 */
import { changeOf } from "./change-feed";
import { type FollowedLog, followLog, type StreamPorts, Subscriber } from "./follow-log";
import { encodeToken, type Positions } from "./resume-token";

export { FOLLOW_FETCH as WATCH_FETCH, KEEP_ALIVE_MS, MAX_IDLE_MS, MIN_IDLE_MS } from "./follow-log";

/** Committed entries (serialized) and the changelog positions they are the fold of. */
export interface Snapshot {
  readonly entries: readonly { key: string; value: string }[];
  readonly positions: Positions;
}

/** An event of a store subscription, as server-sent events carry it. */
export interface WatchEvent {
  readonly event?: "snapshot" | "snapshot-end" | "resync";
  readonly data: string;
  readonly id?: string;
}

/** What is watched: the store's changelog topic, the partitions read, and the keys. */
export interface WatchTarget {
  readonly topic: string;
  readonly partitions: readonly number[];
  /** Whether a (serialized) key is watched. */
  readonly watched: (key: string) => boolean;
  /** One key (its snapshot is one event, absent keys too) or a prefix (one event per key present, then `snapshot-end`). */
  readonly kind: "key" | "prefix";
  /** The key given, serialized (a key watch's snapshot names it when it is absent). */
  readonly key?: string;
  /** The event data of a key's value (serialized; null: deleted or absent). */
  readonly present: (key: string, value: string | null) => string;
  /** The data of a prefix snapshot's `snapshot-end` event. */
  readonly snapshotEnd?: (keys: number) => string;
}

export interface WatchPorts extends StreamPorts, FollowedLog {
  /** A fresh snapshot of the watched keys. */
  snapshot(): Promise<Snapshot>;
  send(event: WatchEvent): Promise<void>;
}

/** Where a stream starts: from a snapshot taken before it opened, or from a client's token. */
export type WatchStart = { readonly snapshot: Snapshot } | { readonly resume: Positions };

/**
 * A snapshot's events (`marked`: not the stream's first, so as `snapshot` events): a key's one
 * event (an absent key too), or a prefix's one per key present, then `snapshot-end`. Only the last
 * carries the token `id`: a subscriber cut off midway starts the snapshot again.
 */
export function snapshotEvents(target: WatchTarget, snapshot: Snapshot, id: string, marked = false): WatchEvent[] {
  const event = marked ? ("snapshot" as const) : undefined;
  if (target.kind === "key") {
    const key = target.key ?? "";
    const value = snapshot.entries.find((e) => e.key === key)?.value ?? null;
    return [{ event, data: target.present(key, value), id }];
  }
  return [
    ...snapshot.entries.map((e) => ({ event, data: target.present(e.key, e.value) })),
    { event: "snapshot-end" as const, data: target.snapshotEnd?.(snapshot.entries.length) ?? "{}", id },
  ];
}

/** The data of a `resync` event. */
export const RESYNC_DATA = JSON.stringify({ reason: "the changelog no longer holds every change since this stream's position" });

export async function runWatch(target: WatchTarget, ports: WatchPorts, start: WatchStart): Promise<void> {
  const subscriber = new Subscriber(ports);
  const token = (positions: Positions) => encodeToken({ topic: target.topic, positions });

  /** Sends a snapshot (`marked`: not the stream's first, so as `snapshot` events); returns its positions. */
  const sendSnapshot = async (snapshot: Snapshot, marked: boolean): Promise<Positions> => {
    for (const e of snapshotEvents(target, snapshot, token(snapshot.positions), marked)) await subscriber.send(e);
    return snapshot.positions;
  };

  const positions = new Map("snapshot" in start ? await sendSnapshot(start.snapshot, false) : start.resume);
  await followLog(
    {
      partitions: target.partitions,
      positions,
      record: async (_partition, record) => {
        const change = changeOf(record, target.watched);
        if (change) await subscriber.send({ data: target.present(change.key, change.value), id: token(positions) });
      },
      gap: async () => {
        // The stream cannot tell whether a change of its keys was among the records gone: a fresh
        // snapshot. Mid-stream the subscriber learns its view is void; a stale token on connecting needs no such word.
        if (subscriber.sentAny) {
          ports.recovered?.("resync");
          await subscriber.send({ event: "resync", data: RESYNC_DATA });
        } else ports.recovered?.("snapshot");
        const fresh = await sendSnapshot(await ports.snapshot(), true);
        positions.clear();
        for (const [partition, offset] of fresh) positions.set(partition, offset);
        return "restart";
      },
    },
    ports,
    subscriber,
  );
}
