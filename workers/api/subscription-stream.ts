/**
 * What every subscription route shares (docs/subscriptions.md): this isolate's slots and counters,
 * and the server-sent event stream a subscription runs in — a slot held while it is open, the
 * log read through the host, sends waiting on the response's back-pressure, keep-alive comments.
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { FollowedLog, StreamPorts } from "../../src/subscriptions/follow-log";
import { StreamCounters } from "../../src/subscriptions/stream-counters";
import { KeySlots } from "../../src/subscriptions/key-slots";
import { WatchSlots } from "../../src/subscriptions/watch-slots";
import { logEvent } from "../../src/util/logging";
import type { ApiEnv } from "./context";
import { ApiError } from "./http-error";

/** This isolate's open subscriptions, store watches and topic tails alike (src/subscriptions/watch-slots.ts). */
export const watchSlots = new WatchSlots();
/** What this isolate's subscriptions did (`GET /metrics`). */
export const streamCounters = new StreamCounters();

/** This isolate's subscriptions by watched key (src/subscriptions/key-slots.ts). */
export const keySlots = new KeySlots();

/**
 * A slot for a new subscription — and one of `key`'s when it watches one (a store's key, prefix
 * or key's windows) — or 503 when this isolate, or that key in it, holds its most.
 */
export function takeSlot(key?: string): () => void {
  const release = watchSlots.take();
  if (!release) {
    streamCounters.refused++;
    throw new ApiError(503, "unavailable", `this isolate holds ${watchSlots.limit} subscriptions, its most: try again`, 1);
  }
  if (key === undefined) return release;
  const releaseKey = keySlots.take(key);
  if (!releaseKey) {
    release();
    streamCounters.refused++;
    throw new ApiError(503, "unavailable", `this isolate holds ${keySlots.limit} subscriptions of this key, its most: try again`, 1);
  }
  return () => {
    releaseKey();
    release();
  };
}

/** Opens the event stream of a subscription reading `topic`: `run` goes until the subscriber leaves; the slot is held meanwhile. */
export function openStream(c: Context<ApiEnv>, topic: string, release: () => void, run: (ports: StreamPorts & FollowedLog) => Promise<void>) {
  const log = c.var.host.log;
  return openEventStream(c, topic, release, (ports) =>
    run({
      ...ports,
      fetch: (partition, offset, bounds) => log.fetch({ topic, partition }, offset, bounds),
      offsets: (partition) => log.offsets({ topic, partition }),
    }),
  );
}

/**
 * Opens an event stream whose `run` sends through the stream ports (any subscription: a log's,
 * or a view read on a cadence such as `GET /tasks/watch`) until the subscriber leaves, holding
 * the slot meanwhile; `what` names it in the log.
 */
export function openEventStream(c: Context<ApiEnv>, what: string, release: () => void, run: (ports: StreamPorts) => Promise<void>) {
  return streamSSE(
    c,
    async (stream) => {
      // The slot is given back when the subscriber leaves, not only when the loop ends: the runtime
      // may drop the request's pending calls once its client is gone, and the loop with them.
      const gone = new Promise<void>((resolve) =>
        stream.onAbort(() => {
          release();
          resolve();
        }),
      );
      try {
        await run({
          send: async (event) => {
            await stream.writeSSE(event);
            streamCounters.eventsSent++;
          },
          closed: () => stream.aborted || stream.closed,
          idle: (ms) => Promise.race([gone, new Promise<void>((resolve) => setTimeout(resolve, ms))]),
          keepAlive: async () => {
            await stream.write(": keep-alive\n\n");
          },
          now: () => Date.now(),
          recovered: (kind) => {
            streamCounters.recoveries[kind]++;
          },
        });
      } finally {
        release();
      }
    },
    async (error) => {
      release();
      logEvent("watch.ended", { what, error: String(error) }, "warn");
    },
  );
}
