/**
 * End-to-end latency of the example application: a single order is ingested
 * (`POST /topics/orders/records`); from the moment its answer arrives, its customer's total is
 * polled back-to-back (`GET /stores/totals/keys/<key>`, no pause) until the count has grown; the
 * latency is the arrival of that answer minus the arrival of the ingest answer. Samples run one
 * after another on the warmed app (the process scenario, or the untimed warm-up here), over a few
 * customers of task 0_0. Reports `e2e_p50_ms` and `e2e_p99_ms` (nearest rank), and
 * `e2e_http_floor_ms`: the median of 50 `GET /healthz` (no Durable Object) from the same client,
 * the least any one request takes through wrangler dev here — each sample holds at least one. The scenario
 * e2e-load (./e2e-load.mjs) takes the same samples while another client ingests 5,000 orders/s.
 *
 * BENCH_E2E_SAMPLES (200), BENCH_E2E_WARMUP (20), BENCH_E2E_CUSTOMERS (10) tune it.
 */
import { call } from "../lib/client.mjs";
import { envInt, note, percentile, waitFor } from "../lib/stats.mjs";

export const name = "e2e";

const PARTITIONS = 4;
const SAMPLE_TIMEOUT_MS = 10_000;

/**
 * `warmup + samples` single orders, one after another, over `keys` (customers of one task): the
 * latency of each after the warm-up, in ms, and the store queries made per order. `check()` is
 * called before each order and each query, and may throw to end the sampling early.
 */
export async function sampleLatencies(app, keys, { samples, warmup, check = () => {} }) {
  const counts = new Map();
  for (const key of keys) {
    const r = await call(app.baseUrl, "GET", `/stores/totals/keys/${encodeURIComponent(key)}`, { token: app.token, expect: [200, 404] });
    counts.set(key, r.status === 404 ? 0 : r.body.value.count);
  }

  const latencies = [];
  let polls = 0;
  for (let i = 0; i < warmup + samples; i++) {
    check();
    const key = keys[i % keys.length];
    const path = `/stores/totals/keys/${encodeURIComponent(key)}`;
    const want = counts.get(key) + 1;
    const body = JSON.stringify({ records: [{ key, value: { amount: 1 } }] });
    await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    const ingested = performance.now();
    let seen;
    await waitFor(
      `customer ${key} to reach count ${want}`,
      async () => {
        check();
        polls++;
        const r = await call(app.baseUrl, "GET", path, { token: app.token, expect: [200, 404] });
        seen = r.status === 404 ? 0 : r.body.value.count;
        if (seen > want) throw new Error(`customer ${key} has count ${seen}, more than the ${want} ingested`);
        return seen === want ? true : undefined;
      },
      { timeoutMs: SAMPLE_TIMEOUT_MS, intervalMs: 0, last: () => `(last count ${seen})` },
    );
    const visible = performance.now();
    counts.set(key, want);
    if (i >= warmup) latencies.push(visible - ingested);
  }
  return { latencies, pollsPerOrder: polls / (warmup + samples) };
}

/** `count` customers of task 0_0 (partition 0 of `orders`) named `<prefix><n>`, from the bench Worker. */
export async function latencyKeys(baseUrl, count, prefix = "latency-") {
  return (await call(baseUrl, "GET", `/bench/keys?partitions=${PARTITIONS}&partition=0&count=${count}&prefix=${prefix}`)).body.keys;
}

export async function run({ baseUrl, app: startApp }) {
  const samples = envInt("BENCH_E2E_SAMPLES", 200);
  const warmup = envInt("BENCH_E2E_WARMUP", 20);
  const customers = envInt("BENCH_E2E_CUSTOMERS", 10);
  const keys = await latencyKeys(baseUrl, customers);
  const app = await startApp();

  const { latencies, pollsPerOrder } = await sampleLatencies(app, keys, { samples, warmup });
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  note(
    `e2e over ${samples} orders: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms, ${pollsPerOrder.toFixed(1)} queries per order`,
  );
  // The floor under every sample: one request through wrangler dev that does nothing (the app's
  // GET /healthz, no Durable Object), as the same client makes it.
  const floor = [];
  for (let i = 0; i < 50; i++) floor.push((await call(app.baseUrl, "GET", "/healthz")).ms);
  const floorP50 = percentile(floor, 50);
  note(`e2e: GET /healthz takes p50 ${floorP50.toFixed(1)} ms from this client (the floor of one request)`);
  return {
    e2e_p50_ms: Number(p50.toFixed(1)),
    e2e_p99_ms: Number(p99.toFixed(1)),
    e2e_samples: samples,
    e2e_http_floor_ms: Number(floorP50.toFixed(1)),
  };
}
