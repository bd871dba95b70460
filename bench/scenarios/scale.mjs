/**
 * Scale and cost of the example application (orders → totals) with PARTITIONS=256 and two
 * placements (`eu:weur,us:enam`) with one standby each: 512 task instances.
 *
 * - `reconcile_ms_10k_tasks`: the coordinator's pure assignment step (src/coordinator/reconcile.ts,
 *   bundled for Node with esbuild) planning 10,000 tasks over two placements with a standby each,
 *   from nothing (20,000 instances); the median of BENCH_SCALE_RECONCILE_RUNS after a warm-up.
 * - The app runs in its own `wrangler dev` from bench/counting-app.ts (the example's Worker with
 *   Durable Object requests, SQLite rows by table and database sizes counted per object;
 *   `GET /bench/usage`, read through bench/lib/usage.mjs). Once all instances run and every
 *   partition had its first record (each partition tells the coordinator once):
 *   - `scale_ingest_records_per_s`: BENCH_SCALE_RECORDS orders over random customers (so over all
 *     partitions), BENCH_SCALE_BATCH per `POST /topics/orders/records`, one request after
 *     another, timed to the last answer;
 *   - `coordinator_calls_per_1k_ingests`: RPC calls made to the coordinator during those ingest
 *     requests, per 1,000 requests (the goal: 0 — ingest never asks it in steady state);
 *   - `rows_written_per_record`, `rows_read_per_record`, `do_requests_per_record` (RPC calls and
 *     alarms) and `cost_per_million_usd` (those counts at the prices of bench/lib/prices.mjs):
 *     from the first ingest request until every instance reports lag 0 (actives processed every
 *     order; standbys applied every changelog record, as each instance describes itself through
 *     `GET /tasks`), per order — minus what that polling itself cost (one poll measured on the
 *     idle application just before); and where they go: `rows_written_per_record_<category>`,
 *     `rows_written_per_record_<category>_<table>` and `do_requests_per_record_<category>`
 *     (categories: the input, changelog, output and other topics' partitions, active task
 *     instances, standbys, restore workers, the coordinator, consumer groups);
 *   - the same totals at BENCH_SCALE_ALSO_PARTITIONS (64; a list, empty for none), each in an app
 *     of its own: `rows_written_per_record_64_partitions`, `rows_read_per_record_64_partitions`,
 *     `do_requests_per_record_64_partitions`, `cost_per_million_usd_64_partitions`;
 *   - `scale_processed_records_per_s`: orders per second until that point (under `wrangler dev`
 *     one thread runs every object, so this bounds the objects' summed active time per order);
 *   - storage as billed, the SQLite database size of every object (`databaseSize`):
 *     `stored_bytes_per_object_empty[_<kind>]` (a new object: its schema),
 *     `stored_bytes_per_record_marginal` (the growth of all of them per order, every order a new
 *     customer) and `stored_usd_per_million_per_month`, beside `order_serialized_bytes` (one
 *     order as JSON); and `stored_file_bytes_per_record`, the growth of the local files (SQLite
 *     with its write-ahead logs: an upper bound);
 *   - `scale_get_tasks_ms` (one page of 100 instances, with the summary) and
 *     `scale_status_page_ms` (the status page), medians of BENCH_SCALE_VIEWS requests.
 *
 * Under `wrangler dev` every object shares one workerd thread: throughput is a floor (deployed,
 * the partitions and their tasks run apart); the counts are what Cloudflare would bill.
 * BENCH_SCALE_PARTITIONS (256), BENCH_SCALE_ALSO_PARTITIONS (64), BENCH_SCALE_RECORDS (20000),
 * BENCH_SCALE_BATCH (1000), BENCH_SCALE_VIEWS (10), BENCH_SCALE_RECONCILE_RUNS (5),
 * BENCH_SCALE_STANDBYS (1) tune it.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describeAll, quiet } from "../lib/app.mjs";
import { call, request } from "../lib/client.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, median, note } from "../lib/stats.mjs";
import {
  callsByCategory,
  categorize,
  delta,
  lessPolls,
  objectsUsage,
  pollCost,
  perRecordKeys,
  settledKeys,
  standbyNames,
  storageKeys,
  tally,
  wakeupDetail,
} from "../lib/usage.mjs";

export const name = "scale";

const PARTITIONS = envInt("BENCH_SCALE_PARTITIONS", 256);
const PLACEMENTS = "eu:weur,us:enam";
const QUIET_TIMEOUT_MS = 900_000;
/** After the count, what the quiet period writes is measured for this long (`*_settled` keys). */
const SETTLE_MS = envInt("BENCH_SETTLE_MS", 20_000);

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

/** `count` orders over random customers, `batch` per request body; and an order's mean size as JSON. */
function bodies(count, batch, prefix) {
  const out = [];
  let bytes = 0;
  for (let start = 0; start < count; start += batch) {
    const records = [];
    for (let i = start; i < Math.min(count, start + batch); i++) {
      const record = { key: `${prefix}-${Math.floor(Math.random() * 1e9)}`, value: { amount: 1 + (i % 97) } };
      bytes += Buffer.byteLength(JSON.stringify(record));
      records.push(record);
    }
    out.push(JSON.stringify({ records }));
  }
  out.orderBytes = bytes / count;
  return out;
}

/** `callsByCategory`'s counts divided by `records`, to four decimals. */
function perOrder(byCall, records) {
  const out = {};
  for (const [category, calls] of Object.entries(byCall)) {
    out[category] = {};
    for (const [method, n] of Object.entries(calls)) out[category][method] = Number((n / records).toFixed(4));
  }
  return out;
}

/** Partition counts from a comma-separated list (empty: none). */
function partitionList(raw) {
  if (!raw) return [];
  return raw.split(",").map((part) => {
    const n = Number(part);
    if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_SCALE_ALSO_PARTITIONS must list positive integers, got ${JSON.stringify(raw)}`);
    return n;
  });
}

/**
 * One deployment of the example with `partitions` partitions and `standbys` standbys per task, in
 * its own counting `wrangler dev`: `records` orders in requests of `batch`, counted until every
 * instance has caught up. `views` (a number) also times the views.
 */
async function measure({ partitions, standbys, records, batch, views }) {
  const instances = partitions * (1 + standbys);
  note(`starting the example with PARTITIONS=${partitions}, PLACEMENTS=${PLACEMENTS}, NUM_STANDBYS=${standbys} …`);
  const app = await startAppWorker({
    root,
    script: join(root, "bench", "counting-app.ts"),
    vars: { PARTITIONS: String(partitions), PLACEMENTS, NUM_STANDBYS: String(standbys), LOG_LEVEL: "warn", MAX_BODY_BYTES: String(4 << 20) },
  });
  try {
    const assignStarted = performance.now();
    await quiet(app, instances, `all ${instances} instances to run`, QUIET_TIMEOUT_MS);
    note(`${instances} instances running after ${((performance.now() - assignStarted) / 1000).toFixed(0)} s`);

    // Every partition's first record (each partition tells the coordinator once), then quiet.
    for (const body of bodies(partitions * 8, batch, "warm")) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    await quiet(app, instances, "the warm-up orders to be processed", QUIET_TIMEOUT_MS);

    // What one poll costs (the least of three), on the idle application; the roles it shows name the standbys.
    const categoryOf = categorize(standbyNames(await describeAll(app)));
    const perPoll = await pollCost(app, categoryOf, () => describeAll(app));

    const work = bodies(records, batch, "customer");
    const filesBefore = await bytesUnder(app.persistDir);
    const objectsBefore = await objectsUsage(app);
    const before = tally(objectsBefore, categoryOf);
    const started = performance.now();
    for (const body of work) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    const ingestMs = performance.now() - started;
    const afterIngest = tally(await objectsUsage(app), categoryOf);
    const polls = await quiet(app, instances, "every order processed and every standby current", QUIET_TIMEOUT_MS);
    const processedMs = performance.now() - started;
    const objectsAfter = await objectsUsage(app);
    const spent = delta(tally(objectsAfter, categoryOf), before);
    const filesAfter = await bytesUnder(app.persistDir);
    // Requests by category and call (the polls' `describe` calls included: `per poll` below).
    const byCall = callsByCategory(wakeupDetail(objectsAfter, objectsBefore), categoryOf);
    note(`${partitions} partitions: requests per order by category and call: ${JSON.stringify(perOrder(byCall, records))}`);
    // What the quiet period after writes (progress held in memory, backstop alarms, quiet compaction).
    await sleep(SETTLE_MS);
    const settled = delta(tally(await objectsUsage(app), categoryOf), tally(objectsAfter, categoryOf));
    const ingest = delta(afterIngest, before);
    note(
      `${partitions} partitions, ${records} orders: ingest ${(ingestMs / 1000).toFixed(1)} s, all processed and replicated after ${(processedMs / 1000).toFixed(1)} s (${polls} polls); ` +
        `spent ${JSON.stringify({ rowsWritten: spent.rowsWritten, rowsRead: spent.rowsRead, requests: spent.requests })}; ` +
        `per poll ${JSON.stringify({ rowsWritten: perPoll.rowsWritten, rowsRead: perPoll.rowsRead, requests: perPoll.requests })}`,
    );

    const getTasks = [];
    const statusPage = [];
    for (let i = 0; i < (views ?? 0); i++) {
      const page = await call(app.baseUrl, "GET", "/tasks?limit=100", { token: app.token });
      if (page.body.tasks.length !== Math.min(100, instances)) throw new Error(`GET /tasks?limit=100 answered ${page.body.tasks.length} instances`);
      getTasks.push(page.ms);
      const started = performance.now();
      const { status, text: html } = await request(`${app.baseUrl}/`, { headers: { Authorization: `Bearer ${app.token}` } });
      if (status !== 200 || !html.includes("<article ")) throw new Error(`status page: HTTP ${status}`);
      statusPage.push(performance.now() - started);
    }

    return {
      instances,
      net: lessPolls(spent, polls, perPoll),
      settled,
      coordinatorCalls: ingest["calls:coordinator"] ?? 0,
      requests: work.length,
      ingestMs,
      processedMs,
      fileBytes: Math.max(0, filesAfter - filesBefore),
      storage: { before: objectsBefore, after: objectsAfter, records, orderBytes: work.orderBytes },
      getTasks,
      statusPage,
    };
  } catch (error) {
    note(`app wrangler output (tail):\n${app.output().slice(-4000)}`);
    throw error;
  } finally {
    await app.stop();
  }
}

export async function run() {
  const records = envInt("BENCH_SCALE_RECORDS", 20_000);
  const batch = envInt("BENCH_SCALE_BATCH", 1000);
  const views = envInt("BENCH_SCALE_VIEWS", 10);
  const reconcileRuns = envInt("BENCH_SCALE_RECONCILE_RUNS", 5);
  const standbys = Number(process.env.BENCH_SCALE_STANDBYS ?? 1);
  const also = partitionList(process.env.BENCH_SCALE_ALSO_PARTITIONS ?? "64");

  const reconcile = await reconcileMs(reconcileRuns);
  note(`reconcile of 10,000 tasks: ${reconcile.toFixed(1)} ms`);

  const main = await measure({ partitions: PARTITIONS, standbys, records, batch, views });
  const result = {
    reconcile_ms_10k_tasks: Number(reconcile.toFixed(1)),
    scale_ingest_records_per_s: Math.round(records / (main.ingestMs / 1000)),
    scale_get_tasks_ms: Number(median(main.getTasks).toFixed(1)),
    scale_status_page_ms: Number(median(main.statusPage).toFixed(1)),
    coordinator_calls_per_1k_ingests: Number(((main.coordinatorCalls / main.requests) * 1000).toFixed(2)),
    ...perRecordKeys("", main.net, records),
    ...settledKeys("", main.net, main.settled, records),
    // Wall time until every order is processed and replicated: under wrangler dev one thread
    // runs every object, so this bounds the objects' summed active time (billed duration).
    scale_processed_records_per_s: Math.round(records / (main.processedMs / 1000)),
    ...storageKeys("", main.storage),
    // Growth of the local storage (SQLite files with their write-ahead logs): an upper bound.
    stored_file_bytes_per_record: Math.round(main.fileBytes / records),
    scale_instances: main.instances,
    scale_records: records,
    scale_batch_records: batch,
  };
  for (const partitions of also) {
    const other = await measure({ partitions, standbys, records, batch });
    const keys = perRecordKeys("", other.net, records);
    for (const key of ["rows_written_per_record", "rows_read_per_record", "do_requests_per_record", "cost_per_million_usd"]) {
      result[`${key}_${partitions}_partitions`] = keys[key];
    }
    for (const [key, value] of Object.entries(settledKeys("", other.net, other.settled, records)))
      result[`${key.replace(/_settled$/, "")}_${partitions}_partitions_settled`] = value;
  }
  return result;
}
