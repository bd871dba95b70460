/**
 * Live subscriptions (docs/subscriptions.md) of the example application, against the e2e poll in
 * the same run:
 *
 * - **Latency.** A few customers of task 0_0, each watched by the real `edge-streams/client` (the
 *   built bundle, examples/page-views/public/client/, over Node's fetch: server-sent events); one
 *   order ingested at a time (`POST /topics/orders/records`); the latency is the arrival of the
 *   change event at the client's callback minus the arrival of the ingest answer. Reports
 *   `push_p50_ms` / `push_p99_ms` idle and `push_p50_under_load_ms` / `push_p99_under_load_ms`
 *   while e2e-load's loader (./e2e-load.mjs, reused) ingests BENCH_E2E_LOAD_RATE orders/s (5,000)
 *   over all four partitions. Its baseline, measured here so the ratio is of one run: e2e's poll
 *   (./e2e.mjs: `GET /stores/totals/keys/<key>` back to back until the count grows) over other
 *   customers of the same task, idle and under the same load: `push_baseline_e2e_p50_ms`,
 *   `push_baseline_e2e_p99_under_load_ms`, and the ratios `push_p50_vs_e2e_p50` and
 *   `push_p99_under_load_vs_e2e_p99_under_load` (push over poll: under 1, push is faster). The
 *   watch's stream polls the changelog (50 ms after a change, backing off to once a second while
 *   idle), so an idle subscriber's latency holds part of that interval. Under load an event may
 *   reach the client before the ingest's answer does: that sample is negative.
 * - **Subscribers held.** BENCH_PUSH_SUBSCRIBERS (1,000) server-sent event streams on one key,
 *   opened from this process with plain `node:http` (one connection each) and parsed with the
 *   client's `SseParser`. Under wrangler dev one isolate serves them all, and an isolate holds at
 *   most MAX_WATCHES_PER_ISOLATE (256, src/subscriptions/watch-slots.ts) subscriptions, not
 *   configurable: the rest are refused with 503. `push_subscribers_held` counts the streams
 *   answered 200 (and `push_subscribers_refused` the 503s); `push_subscriptions_open_metric` is
 *   the isolate's own gauge (`GET /metrics`) meanwhile, and `push_subscriptions_open_after_close`
 *   the same up to 35 s after this process closed them all (a server stream notices a subscriber
 *   gone when it next writes: an event, or the keep-alive after 30 s).
 * - **Fan-out.** BENCH_PUSH_FANOUT_ORDERS (500) orders for that key, in requests of 100 posted
 *   back to back: every held stream must see the count go up by one per order, each once, in
 *   order (any gap, repeat or snapshot fails the scenario). `push_events_per_s` = held streams ×
 *   orders / (last stream's last event − first ingest request sent).
 * - **Memory.** The workerd processes' resident memory (bench/lib/rss.mjs; a Worker's heap is not
 *   observable from outside): before the streams open, while they are held, after the fan-out,
 *   and after they close: `push_workerd_rss_*_mb`.
 *
 * BENCH_PUSH_SAMPLES (100), BENCH_PUSH_WARMUP (10), BENCH_PUSH_LOAD_SAMPLES (50),
 * BENCH_PUSH_BASELINE_SAMPLES (50, idle and under load), BENCH_PUSH_SUBSCRIBERS (1000),
 * BENCH_PUSH_FANOUT_ORDERS (500), BENCH_E2E_CUSTOMERS (10), and e2e-load's BENCH_E2E_LOAD_RATE
 * and BENCH_E2E_LOAD_BATCH tune it.
 */
import http from "node:http";
import { SseParser, watch } from "../../examples/page-views/public/client/index.js";
import { call, request } from "../lib/client.mjs";
import { workerdRssBytes } from "../lib/rss.mjs";
import { envInt, note, percentile, waitFor } from "../lib/stats.mjs";
import { latencyKeys, sampleLatencies } from "./e2e.mjs";
import { drainLoad, loaderKeys, startLoader, total } from "./e2e-load.mjs";

export const name = "push";

const SAMPLE_TIMEOUT_MS = 10_000;
const OPEN_CONCURRENCY = 50;
const FANOUT_BATCH = 100;
const FANOUT_TIMEOUT_MS = 60_000;
const SLOTS_FREE_MS = 35_000;

/** One `edge-streams/client` watch per key; `next(key)` promises the arrival time of the key's next count. */
async function watchers(app, keys) {
  const state = new Map();
  const subs = [];
  for (const key of keys) {
    const s = { count: undefined, waiter: undefined, failure: undefined };
    let ready;
    const first = new Promise((resolve) => {
      ready = resolve;
    });
    const seen = (count, at) => {
      s.count = count;
      if (s.waiter && count >= s.waiter.want) {
        if (count > s.waiter.want) s.failure ??= new Error(`watch of ${key}: count ${count}, more than the ${s.waiter.want} ingested`);
        s.waiter.resolve(at);
        s.waiter = undefined;
      }
    };
    const sub = watch(
      "totals",
      key,
      (e) => {
        const at = performance.now();
        if (e.type === "snapshot") {
          if (e.reason !== "initial") s.failure ??= new Error(`watch of ${key}: a ${e.reason} snapshot`);
          seen(e.entries[0]?.value?.count ?? 0, at);
          ready();
        } else if (e.type === "change") seen(e.value?.count ?? 0, at);
        else if (e.type === "error" && e.retryInMs === undefined) s.failure ??= new Error(`watch of ${key} ended: ${e.error.message}`);
      },
      { baseUrl: app.baseUrl, token: app.token },
    );
    subs.push(sub);
    state.set(key, s);
    await waitFor(`the first snapshot of ${key}`, async () => (s.count !== undefined ? true : undefined), { timeoutMs: SAMPLE_TIMEOUT_MS, intervalMs: 10 });
    await first;
  }
  return {
    next(key) {
      const s = state.get(key);
      if (s.failure) throw s.failure;
      const want = s.count + 1;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`watch of ${key}: no count ${want} within ${SAMPLE_TIMEOUT_MS} ms (at ${s.count})`)),
          SAMPLE_TIMEOUT_MS,
        );
        s.waiter = {
          want,
          resolve: (at) => {
            clearTimeout(timer);
            if (s.failure) reject(s.failure);
            else resolve(at);
          },
        };
      });
    },
    close() {
      for (const sub of subs) sub.close();
    },
  };
}

/** `warmup + samples` single orders over `keys`, each watched: ingest answer → change at the client, in ms. */
async function pushLatencies(app, keys, watched, { samples, warmup, check = () => {} }) {
  const latencies = [];
  for (let i = 0; i < warmup + samples; i++) {
    check();
    const key = keys[i % keys.length];
    const arrival = watched.next(key);
    await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: [{ key, value: { amount: 1 } }] } });
    const ingested = performance.now();
    const arrived = await arrival;
    if (i >= warmup) latencies.push(arrived - ingested);
    if ((i + 1) % 25 === 0) note(`push: ${i + 1} of ${warmup + samples} orders, the last in ${(arrived - ingested).toFixed(1)} ms`);
  }
  return latencies;
}

/**
 * `count` server-sent event streams on `key`, opened OPEN_CONCURRENCY at a time over connections
 * of their own: the held ones (200) with the counts each has seen, and how many were refused (503).
 */
async function openStreams(app, key, count) {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const held = [];
  let refused = 0;
  const open = () =>
    new Promise((resolve, reject) => {
      const req = http.get(
        `${app.baseUrl}/stores/totals/keys/${encodeURIComponent(key)}/watch`,
        { agent, headers: { Authorization: `Bearer ${app.token}` } },
        (res) => {
          if (res.statusCode === 503) {
            refused++;
            res.resume();
            resolve();
            return;
          }
          if (res.statusCode !== 200) {
            reject(new Error(`watch of ${key}: HTTP ${res.statusCode}`));
            res.resume();
            return;
          }
          const stream = { counts: [], last: 0, snapshots: 0, failure: undefined, res, req };
          const parser = new SseParser();
          let first = true;
          res.setEncoding("utf8");
          res.on("data", (chunk) => {
            for (const e of parser.push(chunk)) {
              if (e.event !== "message" && e.event !== "snapshot") {
                if (e.event !== "snapshot-end") stream.failure ??= `event ${e.event}: ${e.data}`;
                continue;
              }
              const count = JSON.parse(e.data).value?.count ?? 0;
              if (first || e.event === "snapshot") {
                if (!first) stream.failure ??= "a fresh snapshot mid-stream";
                first = false;
                stream.snapshots++;
                stream.last = count;
                resolve();
                continue;
              }
              if (count !== stream.last + 1) stream.failure ??= `count ${count} after ${stream.last}`;
              stream.last = count;
              stream.counts.push(count);
              stream.lastAt = performance.now();
            }
          });
          res.on("error", () => {});
          res.on("end", () => {
            stream.ended = true;
          });
          held.push(stream);
        },
      );
      req.on("error", reject);
    });
  for (let opened = 0; opened < count; opened += OPEN_CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, count - opened) }, open));
  }
  return {
    held,
    refused,
    close() {
      for (const s of held) s.req.destroy();
      agent.destroy();
    },
  };
}

/** The isolate's gauge of open subscriptions, from `GET /metrics`. */
async function openMetric(app) {
  const { text } = await request(`${app.baseUrl}/metrics`, { headers: { Authorization: `Bearer ${app.token}` } });
  const line = text.split("\n").find((l) => l.startsWith("edge_streams_subscriptions_open"));
  return line ? Number(line.split(/\s+/).at(-1)) : -1;
}

/** Waits up to SLOTS_FREE_MS for the isolate's open subscriptions to reach 0; answers the last count (noted when not 0). */
async function slotsFree(app) {
  const deadline = performance.now() + SLOTS_FREE_MS;
  let open = await openMetric(app);
  while (open > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    open = await openMetric(app);
  }
  if (open > 0) note(`push: ${open} subscriptions still open in the isolate after ${SLOTS_FREE_MS / 1000} s`);
  return open;
}

const mb = (bytes) => (bytes === undefined ? -1 : Math.round(bytes / 2 ** 20));

export async function run({ baseUrl, app: startApp }) {
  const samples = envInt("BENCH_PUSH_SAMPLES", 100);
  const warmup = envInt("BENCH_PUSH_WARMUP", 10);
  const loadSamples = envInt("BENCH_PUSH_LOAD_SAMPLES", 50);
  const baselineSamples = envInt("BENCH_PUSH_BASELINE_SAMPLES", 50);
  const subscribers = envInt("BENCH_PUSH_SUBSCRIBERS", 1000);
  const fanoutOrders = envInt("BENCH_PUSH_FANOUT_ORDERS", 500);
  const customers = envInt("BENCH_E2E_CUSTOMERS", 10);
  const rate = envInt("BENCH_E2E_LOAD_RATE", 5000);
  const batch = envInt("BENCH_E2E_LOAD_BATCH", 100);
  const pushKeys = await latencyKeys(baseUrl, customers, "push-");
  const pollKeys = await latencyKeys(baseUrl, customers, "push-poll-");
  const [fanoutKey] = await latencyKeys(baseUrl, 1, "push-fanout-");
  const loaderCustomers = await loaderKeys(baseUrl);
  const app = await startApp();

  // Idle: the poll (baseline), then the push.
  const baselineIdle = (await sampleLatencies(app, pollKeys, { samples: baselineSamples, warmup })).latencies;
  const watched = await watchers(app, pushKeys);
  let idle;
  let loaded;
  let baselineLoaded;
  try {
    idle = await pushLatencies(app, pushKeys, watched, { samples, warmup });
    note(
      `push idle over ${samples} orders: p50 ${percentile(idle, 50).toFixed(1)} ms, p99 ${percentile(idle, 99).toFixed(1)} ms (poll: p50 ${percentile(baselineIdle, 50).toFixed(1)} ms)`,
    );

    // Under load: the push, then the poll, beside the same loader.
    note(`push: loader at ${rate} orders/s (batches of ${batch}) over ${loaderCustomers.length} customers`);
    const before = await total(app, loaderCustomers[1]);
    const loader = startLoader(app, loaderCustomers, { rate, batch });
    const loaderStarted = performance.now();
    const load0 = () => `${((performance.now() - loaderStarted) / 1000).toFixed(1)} s in,`;
    const check = () => {
      if (loader.failure) throw loader.failure;
    };
    let sampleError;
    try {
      loaded = await pushLatencies(app, pushKeys, watched, { samples: loadSamples, warmup, check });
      note(`push: under load ${load0()} now the poll`);
      baselineLoaded = (await sampleLatencies(app, pollKeys, { samples: baselineSamples, warmup, check })).latencies;
    } catch (error) {
      sampleError = error;
    }
    watched.close(); // its streams' slots free up while the app drains
    const load = await loader.stop();
    if (sampleError) throw sampleError;
    const offered = load.posted / ((load.stoppedAt - load.started) / 1000);
    note(
      `push under load over ${loadSamples} orders: p50 ${percentile(loaded, 50).toFixed(1)} ms, p99 ${percentile(loaded, 99).toFixed(1)} ms; ` +
        `poll: p50 ${percentile(baselineLoaded, 50).toFixed(1)} ms, p99 ${percentile(baselineLoaded, 99).toFixed(1)} ms; loader ${Math.round(offered)}/s offered`,
    );
    await drainLoad(app, load, loaderCustomers[1], before);
  } finally {
    watched.close();
  }

  // Many subscribers on one key, then the fan-out of a run of changes to all of them. A server
  // stream learns that its subscriber left when it next writes (an event, or the keep-alive after
  // 30 s), so closed streams hold their slots a while: wait (bounded) for the isolate to free them.
  await slotsFree(app);
  const rssBefore = await workerdRssBytes(app.pid);
  const openStarted = performance.now();
  const streams = await openStreams(app, fanoutKey, subscribers);
  const held = streams.held.length;
  note(`push: ${held} of ${subscribers} streams held, ${streams.refused} refused (503) in ${((performance.now() - openStarted) / 1000).toFixed(1)} s`);
  let openGauge;
  let rssHeld;
  let rssFanout;
  let eventsPerS;
  try {
    openGauge = await openMetric(app);
    rssHeld = await workerdRssBytes(app.pid);
    const base = streams.held[0]?.last ?? 0;
    if (streams.held.some((s) => s.last !== base)) throw new Error("push: the held streams' snapshots disagree");
    const started = performance.now();
    for (let sent = 0; sent < fanoutOrders; sent += FANOUT_BATCH) {
      const records = Array.from({ length: Math.min(FANOUT_BATCH, fanoutOrders - sent) }, () => ({ key: fanoutKey, value: { amount: 1 } }));
      await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records } });
    }
    const want = base + fanoutOrders;
    await waitFor(
      `every held stream to reach count ${want}`,
      async () => {
        const failed = streams.held.find((s) => s.failure || s.ended);
        if (failed) throw new Error(`push: a held stream ${failed.failure ?? "ended"}`);
        return streams.held.every((s) => s.last === want) ? true : undefined;
      },
      { timeoutMs: FANOUT_TIMEOUT_MS, intervalMs: 20, last: () => `(lowest ${Math.min(...streams.held.map((s) => s.last))})` },
    );
    const lastAt = Math.max(...streams.held.map((s) => s.lastAt));
    for (const s of streams.held)
      if (s.counts.length !== fanoutOrders || s.snapshots !== 1) throw new Error(`push: a stream saw ${s.counts.length} changes and ${s.snapshots} snapshots`);
    eventsPerS = (held * fanoutOrders) / ((lastAt - started) / 1000);
    rssFanout = await workerdRssBytes(app.pid);
    note(
      `push: ${held} streams × ${fanoutOrders} changes, each once in order, in ${((lastAt - started) / 1000).toFixed(2)} s: ${Math.round(eventsPerS)} events/s`,
    );
  } finally {
    streams.close();
  }
  const openAfterClose = await slotsFree(app);
  const rssClosed = await workerdRssBytes(app.pid);
  note(`push: workerd RSS ${mb(rssBefore)} MB before, ${mb(rssHeld)} MB held, ${mb(rssFanout)} MB after the fan-out, ${mb(rssClosed)} MB closed`);

  const p50 = percentile(idle, 50);
  const pollP50 = percentile(baselineIdle, 50);
  const p99Loaded = percentile(loaded, 99);
  const pollP99Loaded = percentile(baselineLoaded, 99);
  const r = (x, digits = 1) => Number(x.toFixed(digits));
  return {
    push_p50_ms: r(p50),
    push_p99_ms: r(percentile(idle, 99)),
    push_p50_under_load_ms: r(percentile(loaded, 50)),
    push_p99_under_load_ms: r(p99Loaded),
    push_baseline_e2e_p50_ms: r(pollP50),
    push_baseline_e2e_p99_under_load_ms: r(pollP99Loaded),
    push_p50_vs_e2e_p50: r(p50 / pollP50, 2),
    push_p99_under_load_vs_e2e_p99_under_load: r(p99Loaded / pollP99Loaded, 2),
    push_subscribers_attempted: subscribers,
    push_subscribers_held: held,
    push_subscribers_refused: streams.refused,
    push_subscriptions_open_metric: openGauge,
    push_subscriptions_open_after_close: openAfterClose,
    push_events_per_s: Math.round(eventsPerS),
    push_fanout_orders: fanoutOrders,
    push_workerd_rss_before_mb: mb(rssBefore),
    push_workerd_rss_held_mb: mb(rssHeld),
    push_workerd_rss_after_fanout_mb: mb(rssFanout),
    push_workerd_rss_closed_mb: mb(rssClosed),
  };
}
