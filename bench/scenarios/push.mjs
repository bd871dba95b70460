/**
 * Live subscriptions (docs/subscriptions.md) of the example application, against the e2e poll in
 * the same run. The scenario starts an app of its own (not the one the other scenarios share):
 * its changelog keeps changes 10 minutes from compaction (`TOPICS`, min.compaction.lag.ms), as
 * subscriptions.md advises for subscribers that may fall behind, so that the burst's fan-out
 * (over a minute on a busy machine, past the log cleaner's 10 s of quiet) is not overtaken.
 *
 * - **Latency.** A few customers of task 0_0, each watched by a WebSocket held by its changelog
 *   partition's `SubscriptionHub` (bench/lib/ws.mjs; acknowledging every ACK_EVERY messages), and
 *   a few others by the real `edge-streams/client` (the built bundle, over Node's fetch:
 *   server-sent events, the Worker the hub's client); one order ingested at a
 *   time (`POST /topics/orders/records`); the latency is the arrival of the change at the
 *   subscriber minus the arrival of the ingest answer. Idle, each order comes
 *   BENCH_PUSH_IDLE_GAP_MS (150) after the previous one was pushed; orders back to back
 *   (`push_p50_back_to_back_ms`) are input that keeps coming, which an unwatched task would
 *   commit once per COMMIT_INTERVAL_MS and send lingering up to LINGER_MS (a watched one does
 *   neither: src/task/task-executor.ts, src/task/send-schedule.ts). Reports `push_p50_ms` / `push_p99_ms` (sockets, idle),
 *   `push_p50_under_load_ms` / `push_p99_under_load_ms` while e2e-load's loader
 *   (./e2e-load.mjs, reused) ingests BENCH_E2E_LOAD_RATE orders/s (5,000) over all four
 *   partitions, and `push_sse_*` the same for server-sent events; `push_tail_p50_ms` /
 *   `push_tail_p99_ms` the same, idle, for a tail of the output topic's partition (the real
 *   client's `tail`, server-sent events through the partition's hub): from the ingest answer to
 *   the output record of the order. The baseline, measured here so
 *   the ratio is of one run: e2e's poll (./e2e.mjs: `GET /stores/totals/keys/<key>` back to back
 *   until the count grows) over other customers of the same task, idle and under the same load
 *   (`push_baseline_e2e_*`, and the ratios `push_p50_vs_e2e_p50` and
 *   `push_p99_under_load_vs_e2e_p99_under_load`: push over poll, under 1 push is faster). An
 *   event may reach the subscriber before the ingest's answer reaches this process (the answer
 *   leaves after the append; processing and the push race it): that sample is negative.
 * - **Subscribers held.** BENCH_PUSH_SUBSCRIBERS (1,000) WebSockets on one key, each on its own
 *   connection, held by the hub (at most HUB_MAX_SOCKETS_PER_KEY, 1,000, per key):
 *   `push_subscribers_held` counts those answered 101 (`push_subscribers_refused` the 503s);
 *   `push_hub_sockets_metric` is the hubs' own gauge (`edge_streams_hub_sockets`, `GET /metrics`)
 *   meanwhile, and `push_hub_sockets_after_close` the same once this process closed them.
 * - **Fan-out.** BENCH_PUSH_FANOUT_SINGLES (20) single orders for that key, one at a time: from
 *   the ingest answer to the first socket's event and to the last one's
 *   (`push_fanout_first_p50_ms`, `push_fanout_all_p50_ms` / `_p99_ms`), and from the request
 *   sent to the last one's (`push_fanout_all_from_request_p50_ms`: the ingest's answer waits
 *   behind the fan-out in wrangler dev's one workerd thread); then
 *   BENCH_PUSH_FANOUT_ORDERS (500) orders in requests of 100 posted back to back. Every socket
 *   must see the count go up by one per order, each once, in order (any gap, repeat, resync or
 *   close fails the scenario). `push_events_per_s` = sockets × orders / (the last socket's last
 *   event − the first request sent); `push_hub_drops_metric` the hubs' drops meanwhile (0);
 *   `push_hub_events_pushed_metric` what the changelog's hubs counted pushed over the fan-out
 *   (`edge_streams_hub_events_pushed_total`, monotonic: sockets × (singles + orders) exactly).
 * - **Memory.** The workerd processes' resident memory (bench/lib/rss.mjs; a Worker's heap is not
 *   observable from outside): before the sockets open, while they are held, after the fan-out,
 *   and after they close: `push_workerd_rss_*_mb`.
 *
 * BENCH_PUSH_SAMPLES (100), BENCH_PUSH_WARMUP (10), BENCH_PUSH_LOAD_SAMPLES (50),
 * BENCH_PUSH_BASELINE_SAMPLES (50, idle and under load), BENCH_PUSH_SSE_SAMPLES (50, also the
 * back-to-back samples), BENCH_PUSH_IDLE_GAP_MS (150), BENCH_PUSH_SUBSCRIBERS (1000),
 * BENCH_PUSH_FANOUT_SINGLES (20), BENCH_PUSH_FANOUT_ORDERS (500), BENCH_E2E_CUSTOMERS (10), and
 * e2e-load's BENCH_E2E_LOAD_RATE and BENCH_E2E_LOAD_BATCH tune it.
 */
import { fileURLToPath } from "node:url";
import { tail, watch } from "../../examples/page-views/public/client/index.js";
import { call, request } from "../lib/client.mjs";
import { workerdRssBytes } from "../lib/rss.mjs";
import { openSocket } from "../lib/ws.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, note, percentile, waitFor } from "../lib/stats.mjs";
import { latencyKeys, sampleLatencies } from "./e2e.mjs";
import { drainLoad, loaderKeys, startLoader, total } from "./e2e-load.mjs";

export const name = "push";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CHANGELOG_TOPICS = "edge-streams-totals-changelog=4(min.compaction.lag.ms=600000)";
/** The label of the store changelog's hub series on /metrics (the fan-out's hub is among them). */
const CHANGELOG_HUBS = 'topic="edge-streams-totals-changelog"';

const SAMPLE_TIMEOUT_MS = 10_000;
const OPEN_CONCURRENCY = 50;
const FANOUT_BATCH = 100;
const FANOUT_TIMEOUT_MS = 180_000;
/** A subscriber acknowledges every this many messages (the hub sends at most 100 past the last acknowledgement). */
const ACK_EVERY = 10;

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

/**
 * One `edge-streams/client` tail of the output topic's partition 0 (the keys' task's: server-sent
 * events, the Worker the client of the partition's hub); `next(key)` promises the arrival time of
 * the key's next count in an output record, as `watchers` does.
 */
async function tailWatchers(app, keys) {
  const counts = new Map(keys.map((key) => [key, 0]));
  const waiters = new Map();
  let started = false;
  let failure;
  const sub = tail(
    "totals",
    { partition: 0, from: "latest" },
    (e) => {
      const at = performance.now();
      if (e.type === "start") started = true;
      else if (e.type === "gap") failure ??= new Error(`tail: a gap ${e.from}..${e.to}`);
      else if (e.type === "error" && e.retryInMs === undefined) failure ??= new Error(`tail ended: ${e.error.message}`);
      else if (e.type === "record" && counts.has(e.record.key)) {
        const value = typeof e.record.value === "string" ? JSON.parse(e.record.value) : e.record.value;
        counts.set(e.record.key, value.count);
        const w = waiters.get(e.record.key);
        if (w && value.count >= w.want) {
          waiters.delete(e.record.key);
          w.resolve(at);
        }
      }
    },
    { baseUrl: app.baseUrl, token: app.token },
  );
  await waitFor("the tail's start", async () => (started ? true : undefined), { timeoutMs: SAMPLE_TIMEOUT_MS, intervalMs: 10 });
  for (const key of keys) counts.set(key, (await total(app, key)).count);
  return {
    next(key) {
      if (failure) throw failure;
      const want = counts.get(key) + 1;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`tail: no count ${want} of ${key} within ${SAMPLE_TIMEOUT_MS} ms`)), SAMPLE_TIMEOUT_MS);
        waiters.set(key, {
          want,
          resolve: (at) => {
            clearTimeout(timer);
            resolve(at);
          },
        });
      });
    },
    close() {
      sub.close();
    },
  };
}

/** `warmup + samples` single orders over `keys`, each watched: ingest answer → change at the client, in ms. */
async function pushLatencies(app, keys, watched, { samples, warmup, check = () => {}, gapMs = 0 }) {
  const latencies = [];
  let last = -Infinity;
  for (let i = 0; i < warmup + samples; i++) {
    check();
    // A pause after the previous order: its task's changelog batch goes to the log at once, not after the linger.
    const wait = last + gapMs - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    last = performance.now();
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
 * A WebSocket subscriber of a key, as docs/subscriptions.md's client: it takes the first message as
 * the snapshot, then checks that each change's count is one more than the last (any other event,
 * gap or repeat is its `failure`), and acknowledges every ACK_EVERY messages (`{"ack": n}`, n the
 * messages received so far). `onCount(count, at)` sees each count.
 */
function subscribe(socket, key, onCount = () => {}) {
  const s = { key, socket, last: undefined, changes: 0, received: 0, lastAt: 0, failure: undefined, closedByUs: false };
  socket.onMessage = (text, at) => {
    s.received++;
    if (s.received % ACK_EVERY === 0) socket.send(JSON.stringify({ ack: s.received }));
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      s.failure ??= `not JSON: ${text.slice(0, 100)}`;
      return;
    }
    if (message.event !== "message") {
      s.failure ??= `event ${message.event}: ${JSON.stringify(message.data)}`;
      return;
    }
    const count = message.data?.value?.count ?? 0;
    if (s.last !== undefined) {
      if (count !== s.last + 1) s.failure ??= `count ${count} after ${s.last}`;
      s.changes++;
    }
    s.last = count;
    s.lastAt = at;
    onCount(count, at);
  };
  socket.onClose = (code) => {
    if (!s.closedByUs) s.failure ??= `closed with ${code}`;
  };
  return s;
}

/** Opens a key's WebSocket watch (held by its changelog partition's hub): the subscriber, or the status of a refusal (503). */
export async function openWatch(app, key, onCount) {
  const answer = await openSocket(`${app.baseUrl}/stores/totals/keys/${encodeURIComponent(key)}/watch`, { Authorization: `Bearer ${app.token}` });
  if (answer.status === 101) return subscribe(answer.socket, key, onCount);
  if (answer.status === 503) return undefined;
  throw new Error(`socket watch of ${key}: HTTP ${answer.status}: ${answer.text}`);
}

export const closeAll = (subscribers) => {
  for (const s of subscribers) {
    s.closedByUs = true;
    s.socket.close();
  }
};

/** One WebSocket watch per key (held by the hub); `next(key)` promises the arrival time of the key's next count, as `watchers` does. */
async function socketWatchers(app, keys) {
  const state = new Map();
  const subs = [];
  for (const key of keys) {
    const w = { waiter: undefined };
    const sub = await openWatch(app, key, (count, at) => {
      if (w.waiter && count >= w.waiter.want) {
        w.waiter.resolve(at);
        w.waiter = undefined;
      }
    });
    if (!sub) throw new Error(`socket watch of ${key}: refused (503)`);
    subs.push(sub);
    state.set(key, { w, sub });
    await waitFor(`the snapshot of ${key}`, async () => (sub.failure ? Promise.reject(new Error(sub.failure)) : sub.last !== undefined ? true : undefined), {
      timeoutMs: SAMPLE_TIMEOUT_MS,
      intervalMs: 5,
    });
  }
  return {
    next(key) {
      const { w, sub } = state.get(key);
      if (sub.failure) throw new Error(`socket watch of ${key}: ${sub.failure}`);
      const want = sub.last + 1;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`socket watch of ${key}: no count ${want} within ${SAMPLE_TIMEOUT_MS} ms (at ${sub.last})`)),
          SAMPLE_TIMEOUT_MS,
        );
        w.waiter = {
          want,
          resolve: (at) => {
            clearTimeout(timer);
            if (sub.failure) reject(new Error(`socket watch of ${key}: ${sub.failure}`));
            else resolve(at);
          },
        };
      });
    },
    close() {
      closeAll(subs);
    },
  };
}

/** `count` WebSocket watches of `key`, opened OPEN_CONCURRENCY at a time, each on its own connection: the held ones and how many were refused (503). */
async function openWatches(app, key, count) {
  const held = [];
  let refused = 0;
  for (let opened = 0; opened < count; opened += OPEN_CONCURRENCY) {
    const batch = await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, count - opened) }, () => openWatch(app, key)));
    for (const s of batch) {
      if (s) held.push(s);
      else refused++;
    }
  }
  await waitFor(
    `the snapshots of ${held.length} watches`,
    async () => {
      const failed = held.find((s) => s.failure);
      if (failed) throw new Error(`push: a watch ${failed.failure}`);
      return held.every((s) => s.last !== undefined) ? true : undefined;
    },
    { timeoutMs: FANOUT_TIMEOUT_MS, intervalMs: 20 },
  );
  return { held, refused };
}

/** Sums a family of `GET /metrics` (first page: every partition of the example) over its samples whose line matches `filter`. */
async function metricSum(app, family, filter = "") {
  const { text } = await request(`${app.baseUrl}/metrics`, { headers: { Authorization: `Bearer ${app.token}` } });
  let sum = 0;
  let found = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${family}{`) && !line.startsWith(`${family} `)) continue;
    if (!line.includes(filter)) continue;
    sum += Number(line.split(/\s+/).at(-1));
    found = true;
  }
  return found ? sum : -1;
}

/** Waits (bounded) until every subscriber of `subs` has count `want`; throws on a failure or a subscriber past it. */
async function allReach(subs, want, timeoutMs) {
  await waitFor(
    `every watch to reach count ${want}`,
    async () => {
      const failed = subs.find((s) => s.failure || s.last > want);
      if (failed) throw new Error(`push: a watch ${failed.failure ?? `at ${failed.last}, past ${want}`}`);
      return subs.every((s) => s.last === want) ? true : undefined;
    },
    { timeoutMs, intervalMs: 2, last: () => `(lowest ${Math.min(...subs.map((s) => s.last))})` },
  );
}

const mb = (bytes) => (bytes === undefined ? -1 : Math.round(bytes / 2 ** 20));

export async function run({ baseUrl }) {
  // Its own app, whose changelog keeps every change 10 minutes from compaction (min.compaction.lag.ms):
  // the burst's fan-out outlasts the log cleaner's 10 s of quiet, and a socket it overtook would resync.
  const app = await startAppWorker({ root: ROOT, vars: { TOPICS: CHANGELOG_TOPICS } });
  try {
    return await measure(baseUrl, app);
  } finally {
    await app.stop();
  }
}

async function measure(baseUrl, app) {
  const samples = envInt("BENCH_PUSH_SAMPLES", 100);
  const warmup = envInt("BENCH_PUSH_WARMUP", 10);
  const loadSamples = envInt("BENCH_PUSH_LOAD_SAMPLES", 50);
  const baselineSamples = envInt("BENCH_PUSH_BASELINE_SAMPLES", 50);
  const sseSamples = envInt("BENCH_PUSH_SSE_SAMPLES", 50);
  const idleGap = envInt("BENCH_PUSH_IDLE_GAP_MS", 150);
  const subscribers = envInt("BENCH_PUSH_SUBSCRIBERS", 1000);
  const fanoutSingles = envInt("BENCH_PUSH_FANOUT_SINGLES", 20);
  const fanoutOrders = envInt("BENCH_PUSH_FANOUT_ORDERS", 500);
  const customers = envInt("BENCH_E2E_CUSTOMERS", 10);
  const rate = envInt("BENCH_E2E_LOAD_RATE", 5000);
  const batch = envInt("BENCH_E2E_LOAD_BATCH", 100);
  const pushKeys = await latencyKeys(baseUrl, customers, "push-ws-");
  const sseKeys = await latencyKeys(baseUrl, customers, "push-sse-");
  const pollKeys = await latencyKeys(baseUrl, customers, "push-poll-");
  const tailKeys = await latencyKeys(baseUrl, customers, "push-tail-");
  const [fanoutKey] = await latencyKeys(baseUrl, 1, "push-fanout-");
  const loaderCustomers = await loaderKeys(baseUrl);
  const r = (x, digits = 1) => Number(x.toFixed(digits));
  const p = (values, q) => r(percentile(values, q));

  // Idle: the poll (baseline), the push over sockets held by the hub, the push over server-sent events held by the Worker.
  const baselineIdle = (await sampleLatencies(app, pollKeys, { samples: baselineSamples, warmup })).latencies;
  const sockets = await socketWatchers(app, pushKeys);
  const streams = await watchers(app, sseKeys);
  const tails = await tailWatchers(app, tailKeys);
  let tailIdle;
  let idle;
  let sseIdle;
  let backToBack;
  let loaded;
  let sseLoaded;
  let baselineLoaded;
  let offered;
  try {
    idle = await pushLatencies(app, pushKeys, sockets, { samples, warmup, gapMs: idleGap });
    backToBack = await pushLatencies(app, pushKeys, sockets, { samples: sseSamples, warmup });
    sseIdle = await pushLatencies(app, sseKeys, streams, { samples: sseSamples, warmup, gapMs: idleGap });
    tailIdle = await pushLatencies(app, tailKeys, tails, { samples: sseSamples, warmup, gapMs: idleGap });
    note(`push idle: a tail of the output topic (server-sent events through its partition's hub) p50 ${p(tailIdle, 50)} ms, p99 ${p(tailIdle, 99)} ms`);
    note(
      `push idle: socket p50 ${p(idle, 50)} ms, p99 ${p(idle, 99)} ms (back to back: p50 ${p(backToBack, 50)} ms); server-sent events p50 ${p(sseIdle, 50)} ms; poll p50 ${p(baselineIdle, 50)} ms, p99 ${p(baselineIdle, 99)} ms`,
    );

    // Under load: the pushes, then the poll, beside the same loader.
    note(`push: loader at ${rate} orders/s (batches of ${batch}) over ${loaderCustomers.length} customers`);
    const before = await total(app, loaderCustomers[1]);
    const loader = startLoader(app, loaderCustomers, { rate, batch });
    const check = () => {
      if (loader.failure) throw loader.failure;
    };
    let sampleError;
    try {
      loaded = await pushLatencies(app, pushKeys, sockets, { samples: loadSamples, warmup, check });
      sseLoaded = await pushLatencies(app, sseKeys, streams, { samples: sseSamples, warmup, check });
      baselineLoaded = (await sampleLatencies(app, pollKeys, { samples: baselineSamples, warmup, check })).latencies;
    } catch (error) {
      sampleError = error;
    }
    const load = await loader.stop();
    if (sampleError) throw sampleError;
    offered = load.posted / ((load.stoppedAt - load.started) / 1000);
    note(
      `push under load: socket p50 ${p(loaded, 50)} ms, p99 ${p(loaded, 99)} ms; server-sent events p50 ${p(sseLoaded, 50)} ms, p99 ${p(sseLoaded, 99)} ms; ` +
        `poll p50 ${p(baselineLoaded, 50)} ms, p99 ${p(baselineLoaded, 99)} ms; loader ${Math.round(offered)}/s offered`,
    );
    await drainLoad(app, load, loaderCustomers[1], before);
  } finally {
    sockets.close();
    streams.close();
    tails.close();
  }

  // Many sockets on one key, held by its partition's hub: a run of single changes (each to all of
  // them), then a burst; every socket must see every change once, in order.
  const hubSocketsIdle = await metricSum(app, "edge_streams_hub_sockets");
  const rssBefore = await workerdRssBytes(app.pid);
  const openStarted = performance.now();
  const { held, refused } = await openWatches(app, fanoutKey, subscribers);
  note(`push: ${held.length} of ${subscribers} sockets held, ${refused} refused (503) in ${((performance.now() - openStarted) / 1000).toFixed(1)} s`);
  const hubSockets = await metricSum(app, "edge_streams_hub_sockets");
  // The store's changelog hubs only: a tail's hub leaves /metrics when its last tail closes, which
  // made a sum over every hub fall between two reads (docs/subscriptions.md, *Metrics*).
  const pushedBefore = await metricSum(app, "edge_streams_hub_events_pushed_total", CHANGELOG_HUBS);
  const rssHeld = await workerdRssBytes(app.pid);
  const first = [];
  const all = [];
  const allFromRequest = [];
  let eventsPerS;
  let rssFanout;
  let dropsAfter;
  let pushedAfter;
  try {
    const base = held[0]?.last ?? 0;
    if (held.some((s) => s.last !== base)) throw new Error("push: the watches' snapshots disagree");
    let want = base;
    for (let i = 0; i < fanoutSingles; i++) {
      want++;
      const sent = performance.now();
      await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: [{ key: fanoutKey, value: { amount: 1 } }] } });
      const ingested = performance.now();
      await allReach(held, want, SAMPLE_TIMEOUT_MS);
      const arrivals = held.map((s) => s.lastAt);
      first.push(Math.min(...arrivals) - ingested);
      all.push(Math.max(...arrivals) - ingested);
      allFromRequest.push(Math.max(...arrivals) - sent);
    }
    note(
      `push: one change to ${held.length} sockets: the first in p50 ${p(first, 50)} ms, all in p50 ${p(all, 50)} ms, p99 ${p(all, 99)} ms (from the request sent: p50 ${p(allFromRequest, 50)} ms)`,
    );
    const started = performance.now();
    for (let sent = 0; sent < fanoutOrders; sent += FANOUT_BATCH) {
      const records = Array.from({ length: Math.min(FANOUT_BATCH, fanoutOrders - sent) }, () => ({ key: fanoutKey, value: { amount: 1 } }));
      await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records } });
    }
    want += fanoutOrders;
    await allReach(held, want, FANOUT_TIMEOUT_MS);
    const lastAt = Math.max(...held.map((s) => s.lastAt));
    for (const s of held)
      if (s.changes !== fanoutSingles + fanoutOrders) throw new Error(`push: a watch saw ${s.changes} changes, not ${fanoutSingles + fanoutOrders}`);
    eventsPerS = (held.length * fanoutOrders) / ((lastAt - started) / 1000);
    rssFanout = await workerdRssBytes(app.pid);
    pushedAfter = await metricSum(app, "edge_streams_hub_events_pushed_total", CHANGELOG_HUBS);
    dropsAfter = await metricSum(app, "edge_streams_hub_drops_total");
    note(
      `push: ${held.length} sockets × ${fanoutOrders} changes, each once in order, in ${((lastAt - started) / 1000).toFixed(2)} s: ${Math.round(eventsPerS)} events/s; ` +
        `the hubs' metrics: ${hubSockets} sockets, ${pushedAfter - pushedBefore} events pushed, ${dropsAfter} drops`,
    );
  } finally {
    closeAll(held);
  }
  const hubSocketsClosed = await waitFor(
    "the hub to forget the closed sockets",
    async () => {
      const n = await metricSum(app, "edge_streams_hub_sockets");
      return n <= 0 ? n : undefined;
    },
    { timeoutMs: FANOUT_TIMEOUT_MS, intervalMs: 200 },
  );
  const rssClosed = await workerdRssBytes(app.pid);
  note(`push: workerd RSS ${mb(rssBefore)} MB before, ${mb(rssHeld)} MB held, ${mb(rssFanout)} MB after the fan-out, ${mb(rssClosed)} MB closed`);

  const p50 = percentile(idle, 50);
  const pollP50 = percentile(baselineIdle, 50);
  const p99Loaded = percentile(loaded, 99);
  const pollP99Loaded = percentile(baselineLoaded, 99);
  return {
    push_p50_ms: r(p50),
    push_p99_ms: p(idle, 99),
    push_p50_under_load_ms: p(loaded, 50),
    push_p99_under_load_ms: r(p99Loaded),
    push_p50_back_to_back_ms: p(backToBack, 50),
    push_p99_back_to_back_ms: p(backToBack, 99),
    push_baseline_e2e_p50_ms: r(pollP50),
    push_baseline_e2e_p99_ms: p(baselineIdle, 99),
    push_baseline_e2e_p50_under_load_ms: p(baselineLoaded, 50),
    push_baseline_e2e_p99_under_load_ms: r(pollP99Loaded),
    push_p50_vs_e2e_p50: r(p50 / pollP50, 2),
    push_p99_under_load_vs_e2e_p99_under_load: r(p99Loaded / pollP99Loaded, 2),
    push_load_offered_per_s: Math.round(offered),
    push_sse_p50_ms: p(sseIdle, 50),
    push_sse_p99_ms: p(sseIdle, 99),
    push_sse_p50_under_load_ms: p(sseLoaded, 50),
    push_sse_p99_under_load_ms: p(sseLoaded, 99),
    push_tail_p50_ms: p(tailIdle, 50),
    push_tail_p99_ms: p(tailIdle, 99),
    push_subscribers_attempted: subscribers,
    push_subscribers_held: held.length,
    push_subscribers_refused: refused,
    push_hub_sockets_metric: hubSockets - Math.max(0, hubSocketsIdle),
    push_hub_sockets_after_close: hubSocketsClosed,
    push_hub_drops_metric: dropsAfter,
    push_hub_events_pushed_metric: pushedAfter - pushedBefore,
    push_fanout_first_p50_ms: p(first, 50),
    push_fanout_all_p50_ms: p(all, 50),
    push_fanout_all_p99_ms: p(all, 99),
    push_fanout_all_from_request_p50_ms: p(allFromRequest, 50),
    push_events_per_s: Math.round(eventsPerS),
    push_fanout_orders: fanoutOrders,
    push_workerd_rss_before_mb: mb(rssBefore),
    push_workerd_rss_held_mb: mb(rssHeld),
    push_workerd_rss_after_fanout_mb: mb(rssFanout),
    push_workerd_rss_closed_mb: mb(rssClosed),
  };
}
