/**
 * A subscription over a WebSocket (docs/subscriptions.md): the same stream as the server-sent
 * events of routes/watch.ts — the same loop (src/subscriptions/watch-loop.ts), the same events —
 * each event one JSON text message `{"event", "data", "id"?}`. The Worker holds the socket and
 * runs the loop while it is open (see docs/design.md, "Where subscriptions live"). The subscriber
 * acknowledges what it received (`{"ack": n}`), which is the stream's back-pressure
 * (src/subscriptions/socket-credit.ts).
 */
import type { Context } from "hono";
import { SLOW_SUBSCRIBER, SocketCredit } from "../../src/subscriptions/socket-credit";
import type { FollowedLog, StreamPorts } from "../../src/subscriptions/follow-log";
import { logEvent } from "../../src/util/logging";
import type { ApiEnv } from "./context";
import { ApiError } from "./http-error";
import { streamCounters } from "./subscription-stream";
import { SUBPROTOCOL, offeredSubprotocols } from "./watch-auth";

/** Whether the request asks for a WebSocket. */
export function wantsWebSocket(request: Request): boolean {
  return request.headers.get("Upgrade")?.toLowerCase() === "websocket";
}

import { socketMessage } from "../../src/subscriptions/socket-message";

export { socketMessage };

/** Accepts the socket and runs the subscription reading `topic` on it until either side closes it; the slot is given back then. */
export function openSocket(c: Context<ApiEnv>, topic: string, release: () => void, run: (ports: StreamPorts & FollowedLog) => Promise<void>): Response {
  if (c.req.method !== "GET") throw new ApiError(400, "invalid_input", "a WebSocket is opened with GET");
  const log = c.var.host.log;
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  const credit = new SocketCredit();
  let open = true;
  let wakeIdle: (() => void) | undefined;
  const end = () => {
    if (!open) return;
    open = false;
    credit.close();
    wakeIdle?.();
    release();
  };
  const close = (code: number, reason: string) => {
    end();
    try {
      server.close(code, reason);
    } catch {
      // Already closed, or closing: nothing to answer.
    }
  };
  // The closing handshake's answer: the subscriber closed, the server closes too.
  server.addEventListener("close", () => close(1000, "closed by the subscriber"));
  server.addEventListener("error", end);
  server.addEventListener("message", (message) => {
    let ack: unknown;
    try {
      ack = typeof message.data === "string" ? (JSON.parse(message.data) as { ack?: unknown }).ack : undefined;
    } catch {
      ack = undefined;
    }
    if (!credit.ack(ack)) close(1008, 'expected {"ack": n}, n the number of messages received so far');
  });

  const send = async (text: string) => {
    const room = await credit.waitForRoom();
    if (room === "stalled") close(SLOW_SUBSCRIBER, `too slow: no acknowledgement for ${credit.stallMs} ms; reconnect with your last id`);
    if (room !== "room" || !open) return;
    credit.sending();
    server.send(text);
  };
  const running = run({
    fetch: (partition, offset, bounds) => log.fetch({ topic, partition }, offset, bounds),
    offsets: (partition) => log.offsets({ topic, partition }),
    send: async (event) => {
      await send(socketMessage(event));
      streamCounters.eventsSent++;
    },
    closed: () => !open,
    idle: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wakeIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    keepAlive: () => send(JSON.stringify({ event: "keep-alive" })),
    now: () => Date.now(),
    recovered: (kind) => {
      streamCounters.recoveries[kind]++;
    },
  }).then(
    () => close(1000, "subscription ended"),
    (error) => {
      logEvent("watch.ended", { topic, error: String(error) }, "warn");
      const message = error instanceof ApiError ? error.message : "the subscription failed: reconnect with your last id";
      // A message the client can read, then the close (its reason is at most 123 bytes).
      if (open) server.send(JSON.stringify({ event: "error", data: { message } }));
      close(1011, "subscription failed; reconnect with your last id");
    },
  );
  c.executionCtx.waitUntil(running);
  const offered = offeredSubprotocols(c.req.raw);
  return new Response(null, { status: 101, webSocket: client, headers: offered.includes(SUBPROTOCOL) ? { "Sec-WebSocket-Protocol": SUBPROTOCOL } : {} });
}
