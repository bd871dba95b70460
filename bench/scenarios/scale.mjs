/**
 * Scale and cost of the example application (orders → totals) with PARTITIONS=256 and two
 * placements (`eu:weur,us:enam`) with one standby each: 512 task instances.
 *
 * - `reconcile_ms_10k_tasks`: the coordinator's pure assignment step (src/coordinator/reconcile.ts,
 *   bundled for Node with esbuild) planning 10,000 tasks over two placements with a standby each,
 *   from nothing (20,000 instances); the median of BENCH_SCALE_RECONCILE_RUNS after a warm-up.
 * - The app runs in its own `wrangler dev` from bench/counting-app.ts (the example's Worker with
 *   Durable Object requests and SQLite rows counted; `GET /bench/usage`). Once all instances
 *   run and every partition had its first record (each partition tells the coordinator once):
 *   - `scale_ingest_records_per_s`: BENCH_SCALE_RECORDS orders over random customers (so over all
 *     partitions), BENCH_SCALE_BATCH per `POST /topics/orders/records`, one request after
 *     another, timed to the last answer;
 *   - `coordinator_calls_per_1k_ingests`: RPC calls made to the coordinator during those ingest
 *     requests, per 1,000 requests (the goal: 0 — ingest never asks it in steady state);
 *   - `rows_written_per_record`, `rows_read_per_record`, `do_requests_per_record`: SQLite rows and
 *     Durable Object requests (RPC calls and alarms) from the first ingest request until every
 *     instance reports lag 0 (actives processed every order; standbys applied every changelog
 *     record, as each instance describes itself through `GET /tasks`), per order — minus what
 *     that polling itself cost (one poll measured on the idle application just before);
 *   - `scale_processed_records_per_s`: orders per second until that point (under `wrangler dev`
 *     one thread runs every object, so this bounds the objects' summed active time per order);
 *   - `stored_bytes_per_record`: growth of the app's local storage directory per order;
 *   - `scale_get_tasks_ms` (one page of 100 instances, with the summary) and
 *     `scale_status_page_ms` (the status page), medians of BENCH_SCALE_VIEWS requests.
 *
 * Under `wrangler dev` every object shares one workerd thread: throughput is a floor (deployed,
 * the partitions and their tasks run apart); the counts are what Cloudflare would bill.
 * BENCH_SCALE_PARTITIONS (256), BENCH_SCALE_RECORDS (20000), BENCH_SCALE_BATCH (1000), BENCH_SCALE_VIEWS (10),
 * BENCH_SCALE_RECONCILE_RUNS (5), BENCH_SCALE_STANDBYS (1) tune it.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { call, request } from "../lib/client.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, median, note, waitFor } from "../lib/stats.mjs";

export const name = "scale";

const PARTITIONS = envInt("BENCH_SCALE_PARTITIONS", 256);
const PLACEMENTS = "eu:weur,us:enam";
const QUIET_TIMEOUT_MS = 900_000;

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/** The pure reconcile step, timed in Node. */
async function reconcileMs(runs) {
  const { build } = await import("esbuild");
  const dir = await mkdtemp(join(tmpdir(), "edge-streams-reconcile-"));
  try {
    const outfile = join(dir, "reconcile.mjs");
    await build({ entryPoints: [join(root, "src/coordinator/reconcile.ts")], bundle: true, format: "esm", platform: "neutral", outfile, logLevel: "error" });
    const { planReconcile } = await import(pathToFileURL(outfile).href);
    const taskIds = Array.from({ length: 10_000 }, (_, i) => `0_${i}`);
    const plan = () => planReconcile({ taskIds, placements: ["eu", "us"], standbys: 1, instances: [] });
    if (plan().length !== 20_000) throw new Error("reconcile did not plan 20,000 instances for 10,000 tasks");
    const times = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      plan();
      times.push(performance.now() - started);
    }
    return median(times);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Bytes of every file under `dir` (the app's local Durable Object storage: SQLite files and their
 * WALs). The app keeps running: a WAL or shared-memory file listed may be gone when it is measured.
 */
async function bytesUnder(dir) {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      total += (await stat(join(entry.parentPath ?? entry.path, entry.name))).size;
    } catch (error) {
      if (error?.code !== "ENOENT") throw error;
    }
  }
  return total;
}

async function usage(app) {
  return (await call(app.baseUrl, "GET", "/bench/usage")).body;
}

function requests(u) {
  return Object.values(u.requests).reduce((a, b) => a + b, 0) + u.alarms;
}

function delta(after, before) {
  return {
    rowsRead: after.rowsRead - before.rowsRead,
    rowsWritten: after.rowsWritten - before.rowsWritten,
    requests: requests(after) - requests(before),
    coordinator: (after.requests.COORDINATOR ?? 0) - (before.requests.COORDINATOR ?? 0),
  };
}

/**
 * Every instance as it describes itself now (all pages of `GET /tasks`): live, unlike the summary,
 * which trails by up to the instances' report interval.
 */
async function describeAll(app) {
  const all = [];
  let cursor = null;
  do {
    const { body } = await call(app.baseUrl, "GET", `/tasks?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token: app.token });
    all.push(...body.tasks);
    cursor = body.next;
  } while (cursor);
  return all;
}

/** Polls until every instance runs (actives) or stands by (standbys) with lag 0; answers the polls made. */
async function quiet(app, instances, what) {
  let polls = 0;
  let last;
  await waitFor(
    what,
    async () => {
      polls++;
      const all = await describeAll(app);
      const behind = all.filter((t) => !(t.state === "RUNNING" || t.state === "UPDATING") || t.lag !== 0 || t.failure);
      last = `${all.length} instances, ${behind.length} not caught up: ${JSON.stringify(behind.slice(0, 3))}`;
      return all.length === instances && behind.length === 0 ? true : undefined;
    },
    { timeoutMs: QUIET_TIMEOUT_MS, intervalMs: 1_000, last: () => last },
  );
  return polls;
}

/** `count` orders over random customers, `batch` per request body. */
function bodies(count, batch, prefix) {
  const out = [];
  for (let start = 0; start < count; start += batch) {
    const records = [];
    for (let i = start; i < Math.min(count, start + batch); i++)
      records.push({ key: `${prefix}-${Math.floor(Math.random() * 1e9)}`, value: { amount: 1 + (i % 97) } });
    out.push(JSON.stringify({ records }));
  }
  return out;
}

export async function run() {
  const records = envInt("BENCH_SCALE_RECORDS", 20_000);
  const batch = envInt("BENCH_SCALE_BATCH", 1000);
  const views = envInt("BENCH_SCALE_VIEWS", 10);
  const reconcileRuns = envInt("BENCH_SCALE_RECONCILE_RUNS", 5);
  const standbys = Number(process.env.BENCH_SCALE_STANDBYS ?? 1);
  const instances = PARTITIONS * (1 + standbys);

  const reconcile = await reconcileMs(reconcileRuns);
  note(`reconcile of 10,000 tasks: ${reconcile.toFixed(1)} ms`);

  note(`starting the example with PARTITIONS=${PARTITIONS}, PLACEMENTS=${PLACEMENTS}, NUM_STANDBYS=${standbys} …`);
  const app = await startAppWorker({
    root,
    script: join(root, "bench", "counting-app.ts"),
    vars: { PARTITIONS: String(PARTITIONS), PLACEMENTS, NUM_STANDBYS: String(standbys), LOG_LEVEL: "warn", MAX_BODY_BYTES: String(4 << 20) },
  });
  try {
    const assignStarted = performance.now();
    await quiet(app, instances, `all ${instances} instances to run`);
    note(`${instances} instances running after ${((performance.now() - assignStarted) / 1000).toFixed(0)} s`);

    // Every partition's first record (each partition tells the coordinator once), then quiet.
    for (const body of bodies(PARTITIONS * 8, batch, "warm")) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    await quiet(app, instances, "the warm-up orders to be processed");

    // What one poll costs, on the idle application.
    const beforePoll = await usage(app);
    await describeAll(app);
    const perPoll = delta(await usage(app), beforePoll);

    const work = bodies(records, batch, "customer");
    const bytesBefore = await bytesUnder(app.persistDir);
    const before = await usage(app);
    const started = performance.now();
    for (const body of work) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    const ingestMs = performance.now() - started;
    const afterIngest = await usage(app);
    const polls = await quiet(app, instances, "every order processed and every standby current");
    const processedMs = performance.now() - started;
    const spent = delta(await usage(app), before);
    const bytesAfter = await bytesUnder(app.persistDir);
    const ingest = delta(afterIngest, before);
    note(
      `${records} orders: ingest ${(ingestMs / 1000).toFixed(1)} s, all processed and replicated after ${(processedMs / 1000).toFixed(1)} s (${polls} polls); ` +
        `${JSON.stringify(spent)}; per poll ${JSON.stringify(perPoll)}`,
    );

    const getTasks = [];
    const statusPage = [];
    for (let i = 0; i < views; i++) {
      const page = await call(app.baseUrl, "GET", "/tasks?limit=100", { token: app.token });
      if (page.body.tasks.length !== Math.min(100, instances)) throw new Error(`GET /tasks?limit=100 answered ${page.body.tasks.length} instances`);
      getTasks.push(page.ms);
      const started = performance.now();
      const { status, text: html } = await request(`${app.baseUrl}/`, { headers: { Authorization: `Bearer ${app.token}` } });
      if (status !== 200 || !html.includes("<article ")) throw new Error(`status page: HTTP ${status}`);
      statusPage.push(performance.now() - started);
    }

    const net = (key) => Math.max(0, spent[key] - polls * perPoll[key]);
    return {
      reconcile_ms_10k_tasks: Number(reconcile.toFixed(1)),
      scale_ingest_records_per_s: Math.round(records / (ingestMs / 1000)),
      scale_get_tasks_ms: Number(median(getTasks).toFixed(1)),
      scale_status_page_ms: Number(median(statusPage).toFixed(1)),
      coordinator_calls_per_1k_ingests: Number(((ingest.coordinator / work.length) * 1000).toFixed(2)),
      rows_written_per_record: Number((net("rowsWritten") / records).toFixed(2)),
      rows_read_per_record: Number((net("rowsRead") / records).toFixed(2)),
      do_requests_per_record: Number((net("requests") / records).toFixed(3)),
      // Wall time until every order is processed and replicated: under wrangler dev one thread
      // runs every object, so this bounds the objects' summed active time (billed duration).
      scale_processed_records_per_s: Math.round(records / (processedMs / 1000)),
      // Growth of the local storage (SQLite files with their write-ahead logs): an upper bound.
      stored_bytes_per_record: Math.round(Math.max(0, bytesAfter - bytesBefore) / records),
      scale_instances: instances,
      scale_records: records,
      scale_batch_records: batch,
    };
  } catch (error) {
    note(`app wrangler output (tail):\n${app.output().slice(-4000)}`);
    throw error;
  } finally {
    await app.stop();
  }
}
