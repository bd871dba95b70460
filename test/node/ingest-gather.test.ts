/**
 * Gathered ingest appends (src/ingest/gather.ts) against a real `wrangler dev` with real HTTP
 * clients: concurrent requests to one partition make fewer appends than requests (the partition's
 * calls and rows, counted by the bench's counting app, bench/counting-app.ts), each answered with
 * its own records' offsets; a gathered append that fails fails every request in it, and what the
 * clients retry is in the log once; requests with an `Idempotency-Key` still find their duplicates.
 *
 * Not a workerd test: @cloudflare/vitest-pool-workers turns cross-request promise resolution off
 * (`no_handle_cross_request_promise_resolution`), so concurrent requests made from the test hang once
 * one settles another's wait ("Cannot perform I/O on behalf of a different request"); deployed and
 * under `wrangler dev` the flag's opposite is on by default (docs/design.md).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UpstashLog } from "../../src/kafka-rest/upstash-log";
// @ts-expect-error: plain JavaScript modules of the bench, without types.
import { startAppWorker } from "../../bench/lib/server.mjs";
// @ts-expect-error: plain JavaScript modules of the bench, without types.
import { objectsUsage } from "../../bench/lib/usage.mjs";

declare const process: { cwd(): string };

// No task reads `ingest-test`: its partitions hold only what these requests append.
const TOPIC = "ingest-test";
const LOG_TOKEN = `node-log-${Math.random().toString(36).slice(2)}`;
const REQUESTS = 12;
/** Rounds of concurrent requests sent at most until one gathered (see the tests). */
const ROUNDS = 5;
/** Requests of the paced stream (see its test): half a second of it. */
const PACED_REQUESTS = 25;

type App = { baseUrl: string; token: string; stop(): Promise<void> };
type Offsets = { offsets: { partition: number; offset: number }[] };
let app: App;
let log: UpstashLog;

beforeAll(async () => {
  app = await startAppWorker({
    root: process.cwd(),
    script: `${process.cwd()}/bench/counting-app.ts`,
    vars: { TOPICS: `${TOPIC}=4`, FAULT_INJECTION: "on", LOG_TOKEN, LOG_LEVEL: "warn" },
  });
  log = new UpstashLog({ url: `${app.baseUrl}/kafka`, username: "edge", password: LOG_TOKEN, timeoutMs: 10_000 });
});

afterAll(async () => {
  await app?.stop();
});

function api(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${app.baseUrl}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${app.token}`, "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Request `r`'s records, all to `partition`: keys unique to the request and record. */
const recordsOf = (tag: string, r: number, partition: number) =>
  Array.from({ length: 3 }, (_, i) => ({ key: `${tag}-${r}-${i}`, value: { request: r, i }, partition }));

const post = (records: unknown[], headers?: Record<string, string>) => api(`/topics/${TOPIC}/records`, { records }, headers);

/** The partition's appends so far: its `appendEncoded` calls and its `record_batches` rows written. */
async function appendsOf(partition: number): Promise<{ calls: number; rows: number }> {
  const usage = (await objectsUsage(app))[`partition:${TOPIC}/${partition}`];
  return { calls: usage?.methods?.appendEncoded ?? 0, rows: usage?.written?.record_batches ?? 0 };
}

/** The partition's records from `from`: offset → key. */
async function keysFrom(partition: number, from: number): Promise<Map<number, string>> {
  const tp = { topic: TOPIC, partition };
  const { latest } = await log.offsets(tp);
  const keys = new Map<number, string>();
  for (let offset = from; offset < latest; ) {
    const page = await log.fetch(tp, offset, { maxRecords: 1_000, maxBytes: 1 << 20 });
    for (const r of page.records) keys.set(r.offset, r.key!);
    offset = page.nextOffset;
  }
  return keys;
}

describe("gathered ingest appends", () => {
  it("turn concurrent requests to a partition into fewer appends, each request answered with its own records' offsets", async () => {
    const partition = 2;
    // Requests gather only when they overlap an append in flight: a round whose appends all ended
    // before the next request came (a machine busy elsewhere) is sent again, up to ROUNDS times.
    let gathered = false;
    for (let round = 0; round < ROUNDS && !gathered; round++) {
      const before = await appendsOf(partition);
      const start = (await log.offsets({ topic: TOPIC, partition })).latest;
      const bodies = Array.from({ length: REQUESTS }, (_, r) => recordsOf(`g${round}`, r, partition));
      const responses = await Promise.all(bodies.map((records) => post(records)));
      expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 200));
      const answers = await Promise.all(responses.map((r) => r.json() as Promise<Offsets>));
      const after = await appendsOf(partition);
      expect(after.calls - before.calls).toBeGreaterThanOrEqual(1);
      expect(after.rows - before.rows).toBe(after.calls - before.calls);
      // Each answer names exactly where its records are, in request order, gathered or not.
      const stored = await keysFrom(partition, start);
      expect(stored.size).toBe(REQUESTS * 3);
      answers.forEach(({ offsets }, r) => {
        expect(offsets.map((o) => o.partition)).toEqual([partition, partition, partition]);
        expect(offsets.map((o) => stored.get(o.offset))).toEqual(bodies[r]!.map((record) => record.key));
      });
      gathered = after.calls - before.calls < REQUESTS;
    }
    // Fewer appends than requests: the requests that came while one was in flight went as one.
    expect(gathered).toBe(true);
  });

  it("pace a streaming partition's requests that do not overlap into one append per linger (INGEST_LINGER_MS)", async () => {
    const partition = 0;
    const before = await appendsOf(partition);
    const start = (await log.offsets({ topic: TOPIC, partition })).latest;
    // A client streaming on its own schedule (as the bench's loader): a request of 40 records every
    // 20 ms (2,000 records a second), each sent whether or not the one before was answered. An
    // append takes a few milliseconds here, so without the linger they seldom overlap: one each.
    const bodies = Array.from({ length: PACED_REQUESTS }, (_, r) =>
      Array.from({ length: 40 }, (_, i) => ({ key: `p-${r}-${i}`, value: { request: r, i }, partition })),
    );
    const sent: Promise<Response>[] = [];
    for (const records of bodies) {
      sent.push(post(records));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const responses = await Promise.all(sent);
    expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 200));
    const answers = await Promise.all(responses.map((r) => r.json() as Promise<Offsets>));
    const after = await appendsOf(partition);
    // Paced: about one append per linger (100 ms by default) of the stream (the first ones, before the partition counts
    // as streaming, alone), not one per request.
    expect(after.calls - before.calls).toBeLessThan(PACED_REQUESTS / 2);
    const stored = await keysFrom(partition, start);
    expect(stored.size).toBe(PACED_REQUESTS * 40);
    answers.forEach(({ offsets }, r) => {
      expect(offsets.map((o) => stored.get(o.offset))).toEqual(bodies[r]!.map((record) => record.key));
    });
  });

  it("fail every request of a gathered append that fails; what the clients retry is in the log once", async () => {
    const partition = 1;
    const start = (await log.offsets({ topic: TOPIC, partition })).latest;
    let gathered = false;
    let bodies: ReturnType<typeof recordsOf>[] = [];
    for (let round = 0; round < ROUNDS && !gathered; round++) {
      const before = await appendsOf(partition);
      // The partition fails its next REQUESTS calls: every append these requests make.
      expect((await api("/admin/log/fail", { topic: TOPIC, partition, times: REQUESTS })).status).toBe(200);
      bodies = Array.from({ length: REQUESTS }, (_, r) => recordsOf(`f${round}`, r, partition));
      const responses = await Promise.all(bodies.map((records) => post(records)));
      expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 503));
      for (const r of responses) expect(((await r.json()) as { error: string }).error).toBe("unavailable");
      // Fewer appends failed than requests did: a failed append held several requests, and each
      // got its error (a round whose requests did not overlap is sent again, as above).
      gathered = (await appendsOf(partition)).calls - before.calls < REQUESTS;
      // Nothing of them is in the log (read once the failures left are spent: one per call).
      let end: number | undefined;
      for (let attempt = 0; end === undefined && attempt <= REQUESTS; attempt++) {
        end = await log.offsets({ topic: TOPIC, partition }).then(
          (range) => range.latest,
          () => undefined,
        );
      }
      expect(end).toBe(start);
    }
    expect(gathered).toBe(true);
    // The clients retry (at once, gathered again): each record is then in the log exactly once, where its answer says.
    const retries = await Promise.all(bodies.map((records) => post(records)));
    expect(retries.map((r) => r.status)).toEqual(bodies.map(() => 200));
    const stored = await keysFrom(partition, start);
    expect([...stored.values()].sort()).toEqual(bodies.flatMap((records) => records.map((record) => record.key)).sort());
    for (const [i, retry] of retries.entries()) {
      const { offsets } = (await retry.json()) as Offsets;
      expect(offsets.map((o) => stored.get(o.offset))).toEqual(bodies[i]!.map((record) => record.key));
    }
  });

  it("leave requests with an Idempotency-Key to append alone, so that a concurrent retry is still a duplicate", async () => {
    const partition = 3;
    const start = (await log.offsets({ topic: TOPIC, partition })).latest;
    const bodies = Array.from({ length: 4 }, (_, r) => recordsOf("k", r, partition));
    // Each request sent twice at once, as a client retrying before the first answered.
    const sends = [...bodies.entries(), ...bodies.entries()].map(([r, records]) => post(records, { "Idempotency-Key": `gather-${r}` }));
    const responses = await Promise.all(sends);
    expect(responses.map((r) => r.status)).toEqual(sends.map(() => 200));
    const answers = await Promise.all(responses.map((r) => r.json() as Promise<Offsets>));
    // Both sends of a request answer the same offsets, and its records are in the log once.
    for (let r = 0; r < bodies.length; r++) expect(answers[r + bodies.length]).toEqual(answers[r]);
    const keys = [...(await keysFrom(partition, start)).values()];
    expect(keys.sort()).toEqual(bodies.flatMap((records) => records.map((record) => record.key)).sort());
  });
});
