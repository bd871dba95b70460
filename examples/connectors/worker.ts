/**
 * The connectors example as a Worker: `npm run start:connectors` serves it with
 * examples/connectors/wrangler.toml. Besides Edge Streams' routes it has two of its own, to see
 * the connectors work without anything outside (README.md):
 *
 * - `POST /demo/events` (the API token): `{"events": [{"user", "action", "amount"}, …]}` sent to
 *   the Queue `connectors-events` through its producer binding — the way events would arrive from
 *   any other Worker;
 * - `POST /demo/hook`: a webhook receiver, the default of ACTIVITY_WEBHOOK_URL. It verifies the
 *   signature (`verifyWebhookSignature`), logs the records and answers 200 (401 when the signature
 *   does not verify: the sink retries).
 */
import { SIGNATURE_HEADER, verifyWebhookSignature, type EdgeStreamsEnv } from "edge-streams";
import { streams } from "./app";

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}

/** The bindings and vars of examples/connectors/wrangler.toml the demo routes use. */
type ConnectorsEnv = EdgeStreamsEnv & {
  readonly EVENTS_QUEUE: Queue<unknown>;
  readonly ACTIVITY_WEBHOOK_SECRET?: string;
  readonly API_TOKEN?: string;
};

/** At most this many events per `POST /demo/events` (Queues' `sendBatch` takes 100 messages). */
const MAX_DEMO_EVENTS = 100;

const encoder = new TextEncoder();

/** True when the request carries one of API_TOKEN's tokens (a comma-separated list), compared in constant time. */
function authorized(request: Request, env: ConnectorsEnv): boolean {
  const given = encoder.encode(/^Bearer (.+)$/.exec(request.headers.get("Authorization") ?? "")?.[1] ?? "");
  return (env.API_TOKEN ?? "")
    .split(",")
    .map((token) => encoder.encode(token.trim()))
    .some((token) => token.byteLength > 0 && token.byteLength === given.byteLength && crypto.subtle.timingSafeEqual(token, given));
}

async function sendEvents(request: Request, env: ConnectorsEnv): Promise<Response> {
  if (!authorized(request, env)) return Response.json({ error: "unauthorized" }, { status: 401 });
  const body = (await request.json().catch(() => null)) as { events?: unknown } | null;
  const events = body?.events;
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_DEMO_EVENTS) {
    return Response.json({ error: `expected {"events": [...]} with 1 to ${MAX_DEMO_EVENTS} events` }, { status: 400 });
  }
  await env.EVENTS_QUEUE.sendBatch(events.map((event) => ({ body: event, contentType: "json" as const })));
  return Response.json({ sent: events.length });
}

async function receiveHook(request: Request, env: ConnectorsEnv): Promise<Response> {
  const secret = env.ACTIVITY_WEBHOOK_SECRET;
  if (!secret) return Response.json({ error: "ACTIVITY_WEBHOOK_SECRET is not set" }, { status: 500 });
  const body = await request.text();
  const signed = await verifyWebhookSignature(secret, request.headers.get(SIGNATURE_HEADER), body);
  if (!signed) return Response.json({ error: "bad signature" }, { status: 401 });
  const { records } = JSON.parse(body) as { records: { id: string; key: string; value: string }[] };
  for (const record of records) console.log(JSON.stringify({ event: "demo.webhook-received", id: record.id, key: record.key, value: record.value }));
  return Response.json({ received: records.length });
}

export default {
  fetch(request: Request, env: ConnectorsEnv, ctx: ExecutionContext): Response | Promise<Response> {
    const { pathname } = new URL(request.url);
    if (request.method === "POST" && pathname === "/demo/events") return sendEvents(request, env);
    if (request.method === "POST" && pathname === "/demo/hook") return receiveHook(request, env);
    return streams.fetch(request, env, ctx);
  },
  queue: (batch: MessageBatch, env: ConnectorsEnv, ctx: ExecutionContext) => streams.queue(batch, env, ctx),
};
