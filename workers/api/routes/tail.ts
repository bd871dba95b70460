/**
 * `GET /topics/:topic/watch?partition=&from=`: a topic partition's records as server-sent events,
 * from an offset on (src/subscriptions/tail-loop.ts; docs/subscriptions.md). Any topic the Worker
 * serves — inputs, outputs, dead letters, changelogs, repartition topics — with the `read` role,
 * as `GET /topics/:topic` (workers/api/access.ts). `from` is an offset, `earliest` or `latest`
 * (the default: only records appended after the subscription starts); a `Last-Event-ID` (the
 * offset of the last record the client got; or `?lastEventId=`, which a browser's WebSocket can
 * send) wins over it and continues at the next offset. With `Upgrade: websocket` the same events
 * come as a WebSocket's messages. Where there are hubs (the Worker binds them and its log wakes
 * readers) a tail follows its partition's `SubscriptionHub`, no poll: a socket is handed to the hub
 * (../hub-socket.ts), a stream is the hub's client (src/subscriptions/hub-tail.ts); otherwise
 * this request reads the partition itself (workers/api/watch-socket.ts for a socket). A tail the
 * Worker holds takes one of the isolate's subscription slots, as a store watch does.
 */
import { zValidator } from "@hono/zod-validator";
import { Hono, type Context } from "hono";
import { z } from "zod";
import type { TopicPartition } from "../../../src/log/types";
import type { FollowedLog, StreamPorts } from "../../../src/subscriptions/follow-log";
import { runTail } from "../../../src/subscriptions/tail-loop";
import type { ApiEnv } from "../context";
import { ApiError } from "../http-error";
import { openStream, takeSlot } from "../subscription-stream";
import { invalidInput } from "../validation";
import { openSocket, socketMessage, wantsWebSocket } from "../watch-socket";
import { connectHub, handOver, hubsServe } from "../hub-socket";
import { type LinkEvent, REFUSED } from "../../../src/subscriptions/hub-watch";
import { runHubTail } from "../../../src/subscriptions/hub-tail";

/** A non-negative integer as decimal text (no sign, no leading zero) up to the largest safe integer. */
const OFFSET_TEXT = /^(0|[1-9][0-9]{0,15})$/;
const isOffsetText = (text: string) => OFFSET_TEXT.test(text) && Number(text) <= Number.MAX_SAFE_INTEGER;

const tailQuery = z
  .object({
    partition: z
      .string({ error: "partition is required (a partition number of the topic)" })
      .regex(/^(0|[1-9][0-9]{0,8})$/, "partition is a partition number: a non-negative integer")
      .transform(Number),
    from: z
      .string()
      .refine((from) => from === "earliest" || from === "latest" || isOffsetText(from), "from is an offset (a non-negative integer), earliest or latest")
      .optional(),
    lastEventId: z.string().optional(),
  })
  .strict();

/** The offset a client's `Last-Event-ID` (header, else `?lastEventId=`) continues at, when it sent one. */
function resumeOffset(c: Context<ApiEnv>, fromQuery: string | undefined): number | undefined {
  const last = c.req.header("Last-Event-ID") ?? fromQuery;
  if (last === undefined || last === "") return undefined;
  if (!isOffsetText(last) || Number(last) >= Number.MAX_SAFE_INTEGER)
    throw new ApiError(400, "invalid_input", "Last-Event-ID: not a record offset (send back the id of the last record event)");
  return Number(last) + 1;
}

/** The offset `from` names: itself, or the partition's earliest or end offset now. */
async function fromOffset(c: Context<ApiEnv>, tp: TopicPartition, from: string): Promise<number> {
  if (from !== "earliest" && from !== "latest") return Number(from);
  const range = await c.var.host.log.offsets(tp);
  return from === "earliest" ? range.earliest : range.latest;
}

export const tail = new Hono<ApiEnv>().get("/topics/:topic/watch", zValidator("query", tailQuery, invalidInput), async (c) => {
  const topic = c.req.param("topic");
  const catalog = c.var.host.catalog;
  if (!catalog.has(topic)) throw new ApiError(404, "unknown_topic", `unknown topic ${JSON.stringify(topic)}`);
  const { partition, from = "latest", lastEventId } = c.req.valid("query");
  const partitions = catalog.partitions(topic);
  if (partition >= partitions) throw new ApiError(400, "invalid_input", `partition: topic ${topic} has partitions 0 to ${partitions - 1}`);
  const tp = { topic, partition };
  const offset = resumeOffset(c, lastEventId) ?? (await fromOffset(c, tp, from));
  const start = { event: "start", data: JSON.stringify({ topic, partition, from: offset }) };
  const hubbed = { ...tp, store: "", view: "tail", key: "", position: offset } as const;
  const hub = hubsServe(c) ? c.var.host.subscriptionHub(tp) : undefined;
  // A socket is handed to the partition's hub, which holds it while it hibernates (no slot of the isolate).
  const held = hub && wantsWebSocket(c.req.raw) ? await handOver(c, hub, { ...hubbed, messages: [socketMessage(start)] }) : undefined;
  if (held) return held;
  const run = async (ports: StreamPorts & FollowedLog) => {
    if (hub) {
      const connect = (position: number, deliver: (event: LinkEvent) => void) => connectHub(c, { ...hubbed, position }, deliver);
      // A hub that refuses (its limits) leaves the tail to this request's own reads.
      if ((await runHubTail(tp, offset, { ...ports, connect })) !== REFUSED) return;
    }
    await runTail(tp, offset, ports);
  };
  if (wantsWebSocket(c.req.raw)) return openSocket(c, topic, takeSlot(), run);
  return openStream(c, topic, takeSlot(), run);
});
