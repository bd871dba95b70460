/**
 * The connectors example (examples/connectors) on miniflare's Queues and R2 and a real webhook
 * server on 127.0.0.1 (test/node/webhook-server.ts, this project's globalSetup): events sent into
 * the Queue `connectors-events` (through the example's own route and producer binding, delivered
 * by miniflare) are aggregated per user and answered by `GET /stores/activity/keys/:user`; every
 * update of `activity` reaches the webhook signed (`verifyWebhookSignature`) in offset order and
 * the Queue `connectors-activity` with the same ids; the example's own receiver (`POST /demo/hook`)
 * takes a signed request and refuses an altered one; the input topic's closed rows move to R2 and a
 * fetch from offset 0 still reads every event.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SinkRecord } from "edge-streams";
import { verifyWebhookSignature } from "edge-streams";
import { ACTIVITY_RECEIVED, application } from "../../examples/connectors/app";
import { Host } from "../../platform/host";
import { TestDriver } from "../../platform/testing/test-driver";
import { topicPartition } from "../../src/names";
import { call, json } from "../support/api";
import { keyOn } from "../support/keys";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const vars = env as unknown as { ACTIVITY_WEBHOOK_URL: string; ACTIVITY_WEBHOOK_SECRET: string; TIERED_STORAGE: R2Bucket };
const server = vars.ACTIVITY_WEBHOOK_URL.replace(/\/hook$/, "");

interface Received {
  headers: Record<string, string>;
  body: string;
}
const hookRequests = async (): Promise<Received[]> => (await (await fetch(`${server}/received`)).json()) as Received[];
const recordsOf = (request: Received) => (JSON.parse(request.body) as { sink: string; records: SinkRecord[] }).records;

/** Sends events into the Queue through the example's demo route (its producer binding). */
async function send(events: readonly { user: string; action: string; amount: number }[]): Promise<void> {
  const response = await call("/demo/events", { body: { events } });
  expect(response.status).toBe(200);
  expect(await json(response)).toEqual({ sent: events.length });
}

const activityOf = async (user: string) => {
  const response = await call(`/stores/activity/keys/${user}`);
  return response.status === 200 ? (await json<{ value: { events: number; amount: number } }>(response)).value : undefined;
};

describe("the connectors example", () => {
  it("aggregates a Queue's events, delivers the results signed to the webhook and to a Queue, and tiers its input to R2", async () => {
    const ada = keyOn(1, "ada");
    const bob = keyOn(2, "bob");
    // Two sends, each its own delivered batch: `events`/1 gets two rows, the older of which can move to R2.
    await send([
      { user: ada, action: "view", amount: 0 },
      { user: ada, action: "buy", amount: 12 },
      { user: bob, action: "buy", amount: 5 },
    ]);
    await until(async () => (await activityOf(ada))?.events === 2, 20_000, "ada's first two events aggregated");
    await send([{ user: ada, action: "buy", amount: 30 }]);

    // The aggregate, over HTTP.
    await until(async () => (await activityOf(ada))?.events === 3 && (await activityOf(bob))?.events === 1, 20_000, "every event aggregated");
    expect(await activityOf(ada)).toEqual({ events: 3, amount: 42 });
    expect(await activityOf(bob)).toEqual({ events: 1, amount: 5 });

    // The webhook: the updates of activity (the store caches, as Kafka's does by default: updates of
    // one batch may come as one), each partition's in offset order, signed with the secret.
    const ours = (records: readonly SinkRecord[]) => records.filter((r) => r.key === ada || r.key === bob);
    const latest = (records: readonly SinkRecord[], user: string) => records.filter((r) => r.key === user).at(-1)?.value;
    const done = (records: readonly SinkRecord[]) =>
      latest(records, ada) === JSON.stringify({ events: 3, amount: 42 }) && latest(records, bob) === JSON.stringify({ events: 1, amount: 5 });
    await until(async () => done((await hookRequests()).flatMap(recordsOf)), 20_000, "the final updates at the webhook");
    const requests = (await hookRequests()).filter((r) => ours(recordsOf(r)).length > 0);
    for (const request of requests) {
      expect(request.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(request.body).sink).toBe("activity-webhook");
      expect(await verifyWebhookSignature(vars.ACTIVITY_WEBHOOK_SECRET, request.headers["edge-streams-signature"]!, request.body)).toBe(true);
      expect(await verifyWebhookSignature("another-secret", request.headers["edge-streams-signature"]!, request.body)).toBe(false);
      const records = recordsOf(request);
      expect(request.headers["idempotency-key"]).toBe(`activity/${records[0]!.partition}/${records[0]!.offset}-${records.at(-1)!.offset}`);
    }
    // The example's own receiver (POST /demo/hook, ACTIVITY_WEBHOOK_URL's default) takes a request
    // the sink signed, and refuses it altered.
    const replay = (body: string) =>
      call("/demo/hook", { token: null, rawBody: body, headers: { "Edge-Streams-Signature": requests[0]!.headers["edge-streams-signature"]! } });
    const accepted = await replay(requests[0]!.body);
    expect(accepted.status).toBe(200);
    expect(await json(accepted)).toEqual({ received: recordsOf(requests[0]!).length });
    expect((await replay(requests[0]!.body.replace('"sink"', '"sink" '))).status).toBe(401);
    const hooked = ours(requests.flatMap(recordsOf));
    const adaHooked = hooked.filter((r) => r.key === ada);
    // ada's partition of activity holds only her updates: offsets 0, 1, … in order, her counts rising.
    expect(adaHooked.map((r) => r.offset)).toEqual(adaHooked.map((_, i) => i));
    expect(adaHooked.map((r) => r.id)).toEqual(adaHooked.map((r) => `activity/${r.partition}/${r.offset}`));
    const counts = adaHooked.map((r) => (JSON.parse(r.value!) as { events: number }).events);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));

    // The output Queue: the same records with the same ids (the Worker consumes it into activity-received).
    const queued = async () => ours((await driver.read(ACTIVITY_RECEIVED)).map((r) => JSON.parse(r.value) as SinkRecord));
    await until(async () => done(await queued()), 20_000, "the final updates through the output Queue");
    expect(new Set((await queued()).map((m) => m.id))).toEqual(new Set(hooked.map((r) => r.id)));
    expect((await queued()).filter((m) => m.key === ada).map((m) => [m.id, m.value])).toEqual(adaHooked.map((r) => [r.id, r.value]));

    // Tiered storage: the partition's maintenance moves the older row of `events`/1 to R2...
    const tp = { topic: "events", partition: 1 };
    const partition = env.LOG_PARTITION.getByName(topicPartition(tp));
    const maintained = (await partition.maintain(tp)) as { ok: true; value: { tiering?: { tiered: number } } };
    expect(maintained.value.tiering?.tiered).toBe(1);
    const objects = (await vars.TIERED_STORAGE.list({ prefix: `${application.applicationId}/events/1/` })).objects;
    expect(objects).toHaveLength(1);
    const topic = await json<{ partitions: { partition: number; remote?: { records: number } }[] }>(await call("/topics/events"));
    expect(topic.partitions.find((p) => p.partition === 1)?.remote?.records).toBe(2);
    // ...and a fetch from offset 0 reads every event of the partition, from R2 and from the partition.
    const log = Host.of(application, env).log;
    const fetched = await log.fetch(tp, 0, { maxRecords: 100, maxBytes: 1 << 20 });
    const rest = await log.fetch(tp, fetched.nextOffset, { maxRecords: 100, maxBytes: 1 << 20 });
    expect([...fetched.records, ...rest.records].map((r) => [r.key, JSON.parse(r.value!).amount])).toEqual([
      [ada, 0],
      [ada, 12],
      [ada, 30],
    ]);
  });
});
