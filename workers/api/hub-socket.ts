/**
 * A key's (or a key's windows') subscription over a WebSocket held by its changelog partition's
 * `SubscriptionHub` (durable-objects/subscription-hub.ts, docs/subscriptions.md): the Worker has
 * authenticated the request and taken the snapshot (or checked the resume token); it hands the hub
 * the snapshot's messages and the changelog position they are the fold of, and passes on the
 * socket the hub answers with. A topic tail's socket goes to its partition's hub the same way
 * (routes/tail.ts). Used when the Worker has the hub's binding and its log wakes readers.
 */
import type { Context } from "hono";
import type { HubStart, HubView } from "../../src/subscriptions/hub-sockets";
import type { HubLink, LinkEvent } from "../../src/subscriptions/hub-watch";
import { snapshotEvents, type WatchStart, type WatchTarget } from "../../src/subscriptions/watch-loop";
import type { ApiEnv } from "./context";
import { ApiError } from "./http-error";
import { socketMessage } from "./watch-socket";
import { offeredSubprotocols, SUBPROTOCOL } from "./watch-auth";

/** The hub of the target's partition, when this subscription goes to one (a WebSocket of one partition, a log that wakes readers). */
export function hubFor(c: Context<ApiEnv>, target: WatchTarget) {
  const { host } = c.var;
  if (target.partitions.length !== 1 || !hubsServe(c)) return undefined;
  return host.subscriptionHub({ topic: target.topic, partition: target.partitions[0]! });
}

/** Whether subscriptions go through hubs: the Worker binds them and its log wakes readers (else the Worker polls). */
export function hubsServe(c: Context<ApiEnv>): boolean {
  const { host } = c.var;
  return host.log.capabilities.wakesReaders && host.env.SUBSCRIPTION_HUB !== undefined;
}

/**
 * The Worker's own socket to a partition's hub (src/subscriptions/hub-watch.ts), from `start`'s
 * position with no snapshot: `deliver` gets each message and the close. Undefined when the hub
 * refuses it (a limit) or the start is too long to hand over.
 */
export async function connectHub(c: Context<ApiEnv>, start: Omit<HubStart, "messages">, deliver: (event: LinkEvent) => void): Promise<HubLink | undefined> {
  const hub = c.var.host.subscriptionHub({ topic: start.topic, partition: start.partition });
  const header = encodeURIComponent(JSON.stringify({ ...start, messages: [] } satisfies HubStart));
  if (!hub || header.length > MAX_HUB_START) return undefined;
  const answer = await hub.fetch(new Request("https://hub/subscribe", { headers: { Upgrade: "websocket", [HUB_START_HEADER]: header } }));
  if (answer.status === 503) return undefined;
  const ws = answer.webSocket;
  if (answer.status !== 101 || !ws) throw new Error(`the subscription hub answered ${answer.status}: ${await answer.text()}`);
  ws.accept();
  let closed = false;
  const end = (code: number) => {
    if (closed) return;
    closed = true;
    deliver({ closed: code });
  };
  ws.addEventListener("message", (m) => {
    if (!closed) deliver({ message: typeof m.data === "string" ? m.data : "" });
  });
  ws.addEventListener("close", (e) => end(e.code));
  ws.addEventListener("error", () => end(1006));
  return {
    ack: (count) => {
      try {
        ws.send(JSON.stringify({ ack: count }));
      } catch {
        // Closing: its close is on its way to the inbox.
      }
    },
    close: () => {
      try {
        ws.close(1000, "the stream ended");
      } catch {
        // Already closed.
      }
    },
  };
}

/** The snapshot's messages, as the Worker's own socket would send them first (watch-loop.ts). */
function snapshotMessages(target: WatchTarget, start: WatchStart, id: string): string[] {
  return "snapshot" in start ? snapshotEvents(target, start.snapshot, id).map(socketMessage) : [];
}

/** The header the start travels in (an upgrade's body does not reach the object). */
export const HUB_START_HEADER = "X-Edge-Streams-Hub-Start";
/** A start longer than this (a windows snapshot of many rows) stays on the Worker's own socket. */
export const MAX_HUB_START = 64 * 1024;

/** Forwards the upgrade to `hub`; its refusal (a limit) is the answer's status. Undefined: the start is too long to hand over (the Worker holds the socket). */
export async function openHubSocket(
  c: Context<ApiEnv>,
  hub: { fetch(request: Request): Promise<Response> },
  target: WatchTarget,
  start: WatchStart,
  hubStart: { store: string; view: HubView; key: string },
  token: (position: number) => string,
): Promise<Response | undefined> {
  const partition = target.partitions[0]!;
  const position = ("snapshot" in start ? start.snapshot.positions : start.resume).get(partition) ?? 0;
  // The subscriber's own socket: a resync gets its fresh snapshot from the hub, on the same socket.
  return handOver(c, hub, {
    topic: target.topic,
    partition,
    ...hubStart,
    position,
    messages: snapshotMessages(target, start, token(position)),
    snapshots: true,
  });
}

/**
 * Forwards the subscriber's upgrade to `hub` with the socket's start (a key's, a key's windows' or
 * a topic tail's): the hub's socket, answered with the subprotocol the client offered; a refusal
 * over a limit is `503`. Undefined: the start is too long to hand over (the Worker holds the socket).
 */
export async function handOver(c: Context<ApiEnv>, hub: { fetch(request: Request): Promise<Response> }, body: HubStart): Promise<Response | undefined> {
  if (c.req.method !== "GET") throw new ApiError(400, "invalid_input", "a WebSocket is opened with GET");
  const header = encodeURIComponent(JSON.stringify(body));
  if (header.length > MAX_HUB_START) return undefined;
  const answer = await hub.fetch(new Request("https://hub/subscribe", { headers: { Upgrade: "websocket", [HUB_START_HEADER]: header } }));
  if (answer.status !== 101 || !answer.webSocket) {
    const text = await answer.text();
    const refused = (() => {
      try {
        return JSON.parse(text) as { message?: string };
      } catch {
        return { message: `${answer.status}: ${text}` };
      }
    })();
    throw new ApiError(
      answer.status === 503 ? 503 : 500,
      answer.status === 503 ? "unavailable" : "internal",
      refused.message ?? `the subscription hub refused the socket (${answer.status})`,
      1,
    );
  }
  const offered = offeredSubprotocols(c.req.raw);
  return new Response(null, {
    status: 101,
    webSocket: answer.webSocket,
    headers: offered.includes(SUBPROTOCOL) ? { "Sec-WebSocket-Protocol": SUBPROTOCOL } : {},
  });
}
