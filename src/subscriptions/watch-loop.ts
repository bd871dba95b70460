/**
 * One subscription's stream (docs/subscriptions.md): a snapshot of the watched keys at known
 * changelog offsets, then every committed change read from the store's changelog partitions in
 * order, each event carrying the resume token of the position after it. Pull, not push: the
 * stream reads a bounded batch, sends its events one at a time, each send waiting while the
 * subscriber does not read (the stream's back-pressure), and only then reads the next. So a slow
 * subscriber holds one batch in memory and lags behind in the changelog, never in a buffer; when
 * the changelog no longer holds where it stands (compaction, retention) it gets `resync` and a
 * fresh snapshot. Between reads of an idle changelog it waits, backing off (a bounded poll: the
 * first step; the partition's wake-ups are the next, see docs/subscriptions.md).
 *
 * Platform-free: the Worker gives it the log, the snapshot and the stream (workers/api/routes/watch.ts).
 */
import { OffsetOutOfRange } from "../log/errors";
import type { FetchBounds, FetchResult } from "../log/types";
import { changesFrom } from "./change-feed";
import { encodeToken, type Positions } from "./resume-token";

/** The most one read of a changelog partition brings: what a stream holds in memory at most, beside its snapshot. */
export const WATCH_FETCH: FetchBounds = { maxRecords: 500, maxBytes: 256 * 1024 };
/** An idle changelog is read again after this long, doubling up to `MAX_IDLE_MS`. */
export const MIN_IDLE_MS = 50;
export const MAX_IDLE_MS = 1_000;
/**
 * A stream with nothing to send sends a comment this often: proxies close a response that sends
 * nothing for a while (Cloudflare's after 100 s), and the subscriber would reconnect for nothing.
 */
export const KEEP_ALIVE_MS = 30_000;

/** Committed entries (serialized) and the changelog positions they are the fold of. */
export interface Snapshot {
  readonly entries: readonly { key: string; value: string }[];
  readonly positions: Positions;
}

/** An event of the stream, as server-sent events carry it. */
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

export interface WatchPorts {
  fetch(partition: number, offset: number, bounds: FetchBounds): Promise<FetchResult>;
  /** A fresh snapshot of the watched keys. */
  snapshot(): Promise<Snapshot>;
  /** Sends an event; resolves once the stream took it (waits while the subscriber does not read). */
  send(event: WatchEvent): Promise<void>;
  /** The subscriber went away. */
  closed(): boolean;
  /** Waits `ms`, or less if the subscriber goes away. */
  idle(ms: number): Promise<void>;
  /** Sends a comment (no event): the connection is alive. */
  keepAlive(): Promise<void>;
  /** Milliseconds since some epoch (the keep-alive's clock). */
  now(): number;
}

/** Where a stream starts: from a snapshot taken before it opened, or from a client's token. */
export type WatchStart = { readonly snapshot: Snapshot } | { readonly resume: Positions };

export async function runWatch(target: WatchTarget, ports: WatchPorts, start: WatchStart): Promise<void> {
  let sentAny = false;
  let lastSentAt = ports.now();
  const send = async (event: WatchEvent) => {
    sentAny = true;
    await ports.send(event);
    lastSentAt = ports.now();
  };
  const token = (positions: Positions) => encodeToken({ topic: target.topic, positions });

  /** Sends a snapshot (`marked`: not the stream's first, so as `snapshot` events); returns its positions. */
  const sendSnapshot = async (snapshot: Snapshot, marked: boolean): Promise<Map<number, number>> => {
    const event = marked ? ("snapshot" as const) : undefined;
    const id = token(snapshot.positions);
    if (target.kind === "key") {
      const key = target.key ?? "";
      const value = snapshot.entries.find((e) => e.key === key)?.value ?? null;
      await send({ event, data: target.present(key, value), id });
    } else {
      // Only the end carries the token: a subscriber cut off midway starts the snapshot again.
      for (const e of snapshot.entries) await send({ event, data: target.present(e.key, e.value) });
      await send({ event: "snapshot-end", data: target.snapshotEnd?.(snapshot.entries.length) ?? "{}", id });
    }
    return new Map(snapshot.positions);
  };

  let positions = "snapshot" in start ? await sendSnapshot(start.snapshot, false) : new Map(start.resume);
  let idleMs = MIN_IDLE_MS;
  while (!ports.closed()) {
    let read = false;
    let gap = false;
    for (const partition of target.partitions) {
      const position = positions.get(partition) ?? 0;
      let result: FetchResult;
      try {
        result = await ports.fetch(partition, position, WATCH_FETCH);
      } catch (error) {
        // Below what retention keeps, or beyond the end of a changelog that started over.
        if (!(error instanceof OffsetOutOfRange)) throw error;
        gap = true;
        break;
      }
      const step = changesFrom(result.records, position, result.latest, target.watched);
      if (step === "gap") {
        gap = true;
        break;
      }
      if (result.records.length > 0) read = true;
      for (const change of step.changes) {
        if (ports.closed()) return;
        positions.set(partition, change.next);
        await send({ data: target.present(change.key, change.value), id: token(positions) });
      }
      positions.set(partition, step.next);
    }
    if (gap) {
      // Mid-stream the subscriber learns its view is void; a stale token on connecting needs no such word.
      if (sentAny) await send({ event: "resync", data: JSON.stringify({ reason: "the changelog no longer holds every change since this stream's position" }) });
      positions = await sendSnapshot(await ports.snapshot(), true);
      idleMs = MIN_IDLE_MS;
      continue;
    }
    if (read) idleMs = MIN_IDLE_MS;
    else {
      if (ports.now() - lastSentAt >= KEEP_ALIVE_MS) {
        await ports.keepAlive();
        lastSentAt = ports.now();
      }
      await ports.idle(idleMs);
      idleMs = Math.min(MAX_IDLE_MS, idleMs * 2);
    }
  }
}
