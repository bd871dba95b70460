/**
 * End-to-end latency under load: the samples of the e2e scenario (./e2e.mjs: one order ingested
 * with `POST /topics/orders/records`, then `GET /stores/totals/keys/<key>` back to back until its
 * count grows; latency = arrival of the visible answer minus arrival of the ingest answer), over a
 * few customers of task 0_0, taken WHILE a background loader in this Node process ingests
 * BENCH_E2E_LOAD_RATE orders/s (5,000) into the same app (the shared `app()` instance).
 *
 * The loader posts batches of BENCH_E2E_LOAD_BATCH orders (100, so one every 20 ms at 5,000/s),
 * paced by the wall clock: batch n is due at start + n × batch / rate, and one that is late goes
 * out as soon as it can (at most MAX_IN_FLIGHT requests in flight), so a slow answer does not
 * lower the offered rate unless the app falls more than MAX_IN_FLIGHT batches behind. Its orders
 * go to 1,000 customers of its own spread evenly over ALL FOUR partitions of `orders` (250 each,
 * every batch touches every partition), so task 0_0 gets a quarter of the load and the other
 * three tasks the rest, all in the same workerd. Any failed loader request (non-2xx, connection
 * error) fails the scenario.
 *
 * Reports `e2e_p99_under_load_ms` (nearest rank over the samples after the warm-up), and, so that
 * a reader sees the load was real, `e2e_load_offered_per_s` (orders the loader posted per second,
 * from its start until it was told to stop) and `e2e_load_achieved_per_s` (orders the app
 * accepted, 2xx, per second from the loader's start until its last answer). After the loader has
 * stopped and its requests have settled, the scenario waits (untimed) for every task to reach
 * lag 0 and checks one loader customer's total, so the scenarios after it start from an idle app.
 *
 * BENCH_E2E_LOAD_SAMPLES (100), BENCH_E2E_LOAD_WARMUP (10), BENCH_E2E_LOAD_RATE (5000),
 * BENCH_E2E_LOAD_BATCH (100), BENCH_E2E_CUSTOMERS (10, the latency customers) tune it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { call } from "../lib/client.mjs";
import { envInt, note, percentile, waitFor } from "../lib/stats.mjs";
import { latencyKeys, sampleLatencies } from "./e2e.mjs";

export const name = "e2e-load";

const PARTITIONS = 4; // of `orders` (examples/orders-totals/topology.ts)
const LOADER_KEYS_PER_PARTITION = 250;
const MAX_IN_FLIGHT = 50; // 1 s of batches at 5,000/s
const DRAIN_TIMEOUT_MS = 120_000;

/**
 * Starts posting `rate` orders/s in batches of `batch` over `keys` (cycled) until `stop()`, which
 * waits for the requests in flight and resolves to the loader's counts, or rejects with the first
 * failure. `failure` is that failure as soon as it happens (undefined until then).
 */
export function startLoader(app, keys, { rate, batch }) {
  const intervalMs = (batch / rate) * 1000;
  const added = new Map();
  const inFlight = new Set();
  let failure;
  let stopping = false;
  let posted = 0;
  let accepted = 0;
  let peakInFlight = 0;
  let blocked = 0; // times a due batch waited for a free slot
  const requestMs = [];
  let due = 0; // batches the schedule had called for when the loader stopped
  let next = 0; // orders generated so far (the key/amount cursor)
  let wake; // resolves the loop's pause early when stop() is called
  const started = performance.now();
  let stoppedAt = started;
  let settledAt = started;

  const bodyOf = () => {
    const records = [];
    for (let j = 0; j < batch; j++, next++) {
      const key = keys[next % keys.length];
      const amount = 1 + (next % 97);
      records.push({ key, value: { amount } });
      const t = added.get(key) ?? { count: 0, sum: 0 };
      t.count++;
      t.sum += amount;
      added.set(key, t);
    }
    return JSON.stringify({ records });
  };

  const send = (body) => {
    posted += batch;
    const request = call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body })
      .then(
        ({ ms }) => {
          accepted += batch;
          requestMs.push(ms);
          settledAt = performance.now();
        },
        (error) => {
          failure ??= new Error(`the loader's ingest request failed: ${error?.message ?? error}`);
          wake?.();
        },
      )
      .finally(() => inFlight.delete(request));
    inFlight.add(request);
    peakInFlight = Math.max(peakInFlight, inFlight.size);
  };

  const loop = (async () => {
    for (let n = 0; !stopping && !failure; ) {
      const wait = started + n * intervalMs - performance.now();
      if (wait > 0) {
        const ac = new AbortController();
        wake = () => ac.abort();
        await sleep(wait, undefined, { signal: ac.signal }).catch(() => {});
        wake = undefined;
        continue;
      }
      if (inFlight.size >= MAX_IN_FLIGHT) {
        blocked++;
        await Promise.race(inFlight);
        continue;
      }
      send(bodyOf());
      n++;
    }
    stoppedAt = performance.now();
    due = Math.floor((stoppedAt - started) / intervalMs) + 1;
    await Promise.allSettled([...inFlight]);
  })();

  return {
    get failure() {
      return failure;
    },
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      if (failure) throw failure;
      return { posted, accepted, dueOrders: due * batch, added, started, stoppedAt, settledAt, peakInFlight, blocked, requestMs };
    },
  };
}

/** The loader's customers: 250 per partition of `orders`, interleaved so that each batch spreads evenly over the partitions. */
export async function loaderKeys(baseUrl) {
  const perPartition = await Promise.all(
    Array.from(
      { length: PARTITIONS },
      async (_, p) =>
        (await call(baseUrl, "GET", `/bench/keys?partitions=${PARTITIONS}&partition=${p}&count=${LOADER_KEYS_PER_PARTITION}&prefix=load-`)).body.keys,
    ),
  );
  return perPartition[0].flatMap((_, i) => perPartition.map((ks) => ks[i]));
}

async function activeTasks(app) {
  const { body } = await call(app.baseUrl, "GET", "/tasks", { token: app.token });
  const active = body.tasks.filter((t) => t.role === "active");
  for (const t of active) if (t.failure) throw new Error(`task ${t.id} failed: ${t.failure}`);
  return active;
}

export async function total(app, key) {
  const r = await call(app.baseUrl, "GET", `/stores/totals/keys/${encodeURIComponent(key)}`, { token: app.token, expect: [200, 404] });
  return r.status === 404 ? { count: 0, sum: 0 } : r.body.value;
}

/**
 * Untimed, after `loader.stop()`: waits until every task has processed what the loader sent
 * (RUNNING, lag 0), then checks that `checkKey`, one of its customers, has the total it had
 * (`before`) plus what the loader added. Leaves an idle app to whatever comes next.
 */
export async function drainLoad(app, load, checkKey, before) {
  const drainStarted = performance.now();
  let last;
  await waitFor(
    "every task to process the loader's orders (RUNNING, lag 0)",
    async () => {
      last = await activeTasks(app);
      return last.length === PARTITIONS && last.every((t) => t.state === "RUNNING" && t.lag === 0) ? true : undefined;
    },
    { timeoutMs: DRAIN_TIMEOUT_MS, intervalMs: 100, last: () => JSON.stringify(last?.map((t) => ({ id: t.id, state: t.state, lag: t.lag }))) },
  );
  const got = await total(app, checkKey);
  const added = load.added.get(checkKey) ?? { count: 0, sum: 0 };
  if (got.count !== before.count + added.count || got.sum !== before.sum + added.sum) {
    throw new Error(
      `customer ${checkKey} of the loader has ${JSON.stringify(got)}, expected ${JSON.stringify({ count: before.count + added.count, sum: before.sum + added.sum })}`,
    );
  }
  note(`the app had processed the loader's orders ${((performance.now() - drainStarted) / 1000).toFixed(1)} s after its last answer`);
}

export async function run({ baseUrl, app: startApp }) {
  const samples = envInt("BENCH_E2E_LOAD_SAMPLES", 100);
  const warmup = envInt("BENCH_E2E_LOAD_WARMUP", 10);
  const rate = envInt("BENCH_E2E_LOAD_RATE", 5000);
  const batch = envInt("BENCH_E2E_LOAD_BATCH", 100);
  const customers = envInt("BENCH_E2E_CUSTOMERS", 10);
  const keys = await latencyKeys(baseUrl, customers, "latency-load-");
  const loaderCustomers = await loaderKeys(baseUrl);
  const app = await startApp();
  const checkKey = loaderCustomers[1]; // a customer of partition 1
  const before = await total(app, checkKey);

  note(`e2e-load: loader at ${rate} orders/s (batches of ${batch}) over ${loaderCustomers.length} customers on ${PARTITIONS} partitions`);
  const loader = startLoader(app, loaderCustomers, { rate, batch });
  let sampled;
  let sampleError;
  try {
    sampled = await sampleLatencies(app, keys, {
      samples,
      warmup,
      check: () => {
        if (loader.failure) throw loader.failure;
      },
    });
  } catch (error) {
    sampleError = error;
  }
  // Stop the loader whatever happened, and wait for it; its own failure comes first.
  const load = await loader.stop();
  if (sampleError) throw sampleError;

  const offered = load.posted / ((load.stoppedAt - load.started) / 1000);
  const achieved = load.accepted / ((load.settledAt - load.started) / 1000);
  const { latencies, pollsPerOrder } = sampled;
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  note(
    `e2e-load over ${samples} orders: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms, ${pollsPerOrder.toFixed(1)} queries per order; ` +
      `loader: ${load.posted} orders posted of ${load.dueOrders} due in ${((load.stoppedAt - load.started) / 1000).toFixed(1)} s, ` +
      `${Math.round(offered)}/s offered, ${Math.round(achieved)}/s accepted; its requests took p50 ${percentile(load.requestMs, 50).toFixed(0)} ms, ` +
      `p99 ${percentile(load.requestMs, 99).toFixed(0)} ms, at most ${load.peakInFlight} in flight (${load.blocked} waits for a free slot of ${MAX_IN_FLIGHT})`,
  );

  // Untimed: let every task take in what the loader sent, then check one of its customers.
  await drainLoad(app, load, checkKey, before);

  return {
    e2e_p99_under_load_ms: Number(p99.toFixed(1)),
    e2e_load_offered_per_s: Math.round(offered),
    e2e_load_achieved_per_s: Math.round(achieved),
    e2e_load_samples: samples,
  };
}
