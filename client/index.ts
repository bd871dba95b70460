/**
 * `edge-streams/client`: live subscriptions to an Edge Streams API from a browser or Node 20+
 * (docs/subscriptions.md#the-client). Standard web APIs only (fetch, streams, URL), no Workers
 * types and no dependencies, so it runs anywhere. Each subscription reconnects by itself and
 * resumes after the last event it delivered (`Last-Event-ID`): every committed change once.
 *
 * ```ts
 * const sub = watch("totals", "alice", (e) => {
 *   if (e.type === "snapshot") show(e.entries[0]?.value);
 *   else if (e.type === "change") show(e.value);
 * }, { baseUrl: "https://streams.example.com", token });
 * sub.close();
 * ```
 */
import { CallbackError, connect, type ConnectionOptions, type Protocol, type Subscription, SubscriptionError, urlOf } from "./connection.js";
import type { ServerSentEvent } from "./sse.js";

export { backoffDelay, retryAfterMs, retryableStatus, type Backoff } from "./backoff.js";
export { SseParser, type ServerSentEvent } from "./sse.js";
export { SubscriptionError, type ConnectionOptions, type Subscription };

/** A key's value as the store holds it (`null`: absent or deleted). */
export interface Entry<V = unknown, K = string> {
  readonly key: K;
  readonly value: V | null;
}

/**
 * What a key or prefix subscription delivers:
 * - `snapshot`: the watched keys' whole state — replace your view with `entries` (a key watch: one
 *   entry, value null when absent; a prefix: every key present). `reason` "initial" on a fresh
 *   start, "resync" when the server could no longer give every change since your position
 *   (a slow subscriber overtaken by compaction, or a resume id too old).
 * - `change`: one committed change, in commit order.
 * - `error`: a failure; `retryInMs` when the client reconnects by itself, undefined when the
 *   subscription has ended (401, 403, 404, 400: nothing a retry changes).
 */
export type WatchEvent<V = unknown, K = string> =
  | { readonly type: "snapshot"; readonly reason: "initial" | "resync"; readonly entries: readonly Entry<V, K>[]; readonly id: string | undefined }
  | { readonly type: "change"; readonly key: K; readonly value: V | null; readonly id: string | undefined }
  | ErrorEvent;

export interface ErrorEvent {
  readonly type: "error";
  readonly error: SubscriptionError;
  readonly retryInMs: number | undefined;
}

/** A record of a topic, as `/kafka` renders records. */
export interface TopicRecord<V = unknown, K = string | null> {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly key: K;
  readonly value: V;
  readonly headers: Readonly<Record<string, string>> | readonly unknown[] | null;
}

/**
 * What a topic tail delivers: `start` (where the server began), each `record` in offset order,
 * `gap` when records between `from` and `to` were removed (retention, compaction) before they
 * could be read, and `error` as for watches.
 */
export type TailEvent<V = unknown, K = string | null> =
  | { readonly type: "start"; readonly topic: string; readonly partition: number; readonly from: number | string }
  | { readonly type: "record"; readonly record: TopicRecord<V, K>; readonly id: string | undefined }
  | { readonly type: "gap"; readonly from: number; readonly to: number }
  | ErrorEvent;

export interface TailPosition {
  readonly partition: number;
  /** An offset, `earliest` or `latest` (the server's default): where a new tail starts. A resume (`lastEventId`) goes on after its record instead. */
  readonly from?: number | "earliest" | "latest";
}

/** Calls the caller's callback; a throw ends the subscription (reported by `finished`). */
function deliver<E>(callback: (event: E) => void, event: E): void {
  try {
    callback(event);
  } catch (error) {
    throw new CallbackError(error);
  }
}

/** The `error` event, given to the callback; a callback that throws on it is ignored (the subscription is ending or waiting). */
function failure<E>(callback: (event: E | ErrorEvent) => void): Protocol["failed"] {
  return (error, retryInMs) => {
    try {
      callback({ type: "error", error, retryInMs });
    } catch {
      // Reporting a failure cannot fail it further.
    }
  };
}

const parse = (event: ServerSentEvent): unknown => JSON.parse(event.data);

/** Watches one key of a key-value store (the key as text, as `GET /stores/:store/keys/:key` takes it): its value now, then each committed change. */
export function watch<V = unknown, K = string>(
  store: string,
  key: string,
  onEvent: (event: WatchEvent<V, K>) => void,
  options: ConnectionOptions = {},
): Subscription {
  const path = `stores/${encodeURIComponent(store)}/keys/${encodeURIComponent(key)}/watch`;
  let initial = false;
  let resync = false;
  const protocol: Protocol = {
    opened: (resuming) => {
      initial = !resuming;
      resync = false;
    },
    event: (event) => {
      if (event.event === "resync") {
        resync = true;
        return;
      }
      if (event.event !== "message" && event.event !== "snapshot") return;
      const entry = parse(event) as Entry<V, K>;
      if (initial || event.event === "snapshot") {
        const reason = initial && !resync ? "initial" : "resync";
        initial = resync = false;
        deliver(onEvent, { type: "snapshot", reason, entries: [entry], id: event.id });
      } else deliver(onEvent, { type: "change", key: entry.key, value: entry.value, id: event.id });
    },
    failed: failure(onEvent),
  };
  return connect(urlOf(path, {}, options.baseUrl), options, protocol);
}

/** Watches every key with `prefix` ("" for all) of a key-value store: their values now, then each committed change. */
export function watchPrefix<V = unknown, K = string>(
  store: string,
  prefix: string,
  onEvent: (event: WatchEvent<V, K>) => void,
  options: ConnectionOptions = {},
): Subscription {
  const path = `stores/${encodeURIComponent(store)}/watch`;
  // The snapshot being received: entries come one event each, and only its end carries an id.
  let pending: Entry<V, K>[] | undefined;
  let reason: "initial" | "resync" = "initial";
  const protocol: Protocol = {
    opened: (resuming) => {
      // A fresh connection starts with a snapshot; a snapshot cut off midway is started again.
      pending = resuming ? undefined : [];
      reason = "initial";
    },
    event: (event) => {
      switch (event.event) {
        case "resync":
          pending = [];
          reason = "resync";
          return;
        case "snapshot":
          if (!pending) {
            pending = [];
            reason = "resync";
          }
          pending.push(parse(event) as Entry<V, K>);
          return;
        case "snapshot-end": {
          const entries = pending ?? [];
          const why = pending === undefined ? "resync" : reason;
          pending = undefined;
          deliver(onEvent, { type: "snapshot", reason: why, entries, id: event.id });
          return;
        }
        case "message": {
          const entry = parse(event) as Entry<V, K>;
          if (pending) pending.push(entry);
          else deliver(onEvent, { type: "change", key: entry.key, value: entry.value, id: event.id });
        }
      }
    },
    failed: failure(onEvent),
  };
  return connect(urlOf(path, { prefix }, options.baseUrl), options, protocol);
}

/** Tails one partition of a topic (input, output, changelog or dead letters): every record from `from` on, in offset order. */
export function tail<V = unknown, K = string | null>(
  topic: string,
  position: TailPosition,
  onEvent: (event: TailEvent<V, K>) => void,
  options: ConnectionOptions = {},
): Subscription {
  const path = `topics/${encodeURIComponent(topic)}/watch`;
  const protocol: Protocol = {
    opened: () => undefined,
    event: (event) => {
      const data = parse(event) as Record<string, unknown>;
      if (event.event === "start") deliver(onEvent, { type: "start", ...(data as { topic: string; partition: number; from: number | string }) });
      else if (event.event === "gap") deliver(onEvent, { type: "gap", ...(data as { from: number; to: number }) });
      else if (event.event === "message") deliver(onEvent, { type: "record", record: data as unknown as TopicRecord<V, K>, id: event.id });
    },
    failed: failure(onEvent),
  };
  return connect(urlOf(path, { partition: position.partition, from: position.from }, options.baseUrl), options, protocol);
}

/** The three subscriptions with options given once (each call's options override them). */
export function createClient(defaults: ConnectionOptions) {
  return {
    watch: <V = unknown, K = string>(store: string, key: string, onEvent: (event: WatchEvent<V, K>) => void, options?: ConnectionOptions) =>
      watch<V, K>(store, key, onEvent, { ...defaults, ...options }),
    watchPrefix: <V = unknown, K = string>(store: string, prefix: string, onEvent: (event: WatchEvent<V, K>) => void, options?: ConnectionOptions) =>
      watchPrefix<V, K>(store, prefix, onEvent, { ...defaults, ...options }),
    tail: <V = unknown, K = string | null>(topic: string, position: TailPosition, onEvent: (event: TailEvent<V, K>) => void, options?: ConnectionOptions) =>
      tail<V, K>(topic, position, onEvent, { ...defaults, ...options }),
  };
}
