/**
 * The example as a user sees it, through HTTP only, beside a hand-written Durable Object doing the
 * same aggregation with no log, changelog or outbox (`BaselineTotals` of bench/worker.ts, reached
 * through the bench Worker's HTTP routes), in the same run. The app is its own `wrangler dev` of the
 * root wrangler.toml with its default configuration (4 partitions, no standby, `totals`
 * uncached), only FAULT_INJECTION on for the corrupt route. Three shapes, in this order:
 *
 * - Restore bounded by live keys (`http_restore_live_keys_ratio` = baseline ms ÷ app ms): per
 *   round a task of its own (0_1, 0_2, 0_3) gets BENCH_HTTP_RESTORE_RECORDS orders (30,000) over
 *   BENCH_HTTP_RESTORE_KEYS customers of its partition (13,000: a history of 2–3 updates per key,
 *   not one record per key), 1,000 per request; once it has processed and sent them all, it is
 *   corrupted (`POST /admin/tasks/:id/corrupt`) and timed until `GET /tasks` (polled every 5 ms)
 *   shows it RUNNING with lag 0 (`http_restore_live_keys_ms`); one customer's total is checked.
 *   The baseline: its live keys inserted raw into one Durable Object's SQLite, ~100-byte records
 *   in transactions of 10,000 (the app's default restore batch; `http_restore_live_keys_baseline_ms`).
 *   Medians of BENCH_HTTP_RESTORE_ROUNDS (3, at most 3); also reported: the live keys, the
 *   changelog's end offset when corrupted (`http_restore_changelog_records`) and the records the
 *   restore replayed (`http_restore_replayed`: read from the changelog, after its compaction; a
 *   restore window's compaction in memory still reads them), medians. BENCH_HTTP_RESTORE_READ_AHEAD
 *   starts the app with that RESTORE_READ_AHEAD (unset: the app's default; 0 compares without
 *   restore windows).
 * - Processing (`http_process_ratio` = app rate ÷ baseline rate): BENCH_HTTP_PROCESS_RECORDS
 *   orders (20,000) over BENCH_HTTP_PROCESS_CUSTOMERS (2,000, so over every partition) posted in
 *   bodies of BENCH_HTTP_PROCESS_BATCH (500), BENCH_HTTP_CONCURRENCY (4) requests at a time, timed
 *   from the first request until every customer's total is visible: a few of the last customers
 *   read back until final, then prefix scans (`GET /stores/totals/keys?prefix=`, pages of 1,000)
 *   until every total is right. The baseline takes the same bodies the same way
 *   (`POST /bench/orders`) and is read back the same way (`GET /bench/orders/totals`). New
 *   customers and a new baseline object every round; after an untimed round of each, the medians
 *   of BENCH_HTTP_PROCESS_ROUNDS (3, alternating which goes first) of `http_process_records_per_s`
 *   and `http_process_baseline_records_per_s`. Each round's note splits its time seen from outside:
 *   posting, then the last customers' totals, then the scans.
 * - One order to its visible total (`http_e2e_p50_ratio`, `http_e2e_p99_ratio` = app ÷ baseline):
 *   from sending one order until a read of its customer's total shows it (read back to back), over
 *   10 customers; BENCH_HTTP_E2E_SAMPLES (100) samples of each after BENCH_HTTP_E2E_WARMUP (10),
 *   app and baseline alternating sample by sample; `http_e2e_p50_ms`, `http_e2e_p99_ms` and the
 *   baseline's `http_e2e_baseline_p50_ms`, `http_e2e_baseline_p99_ms` (nearest rank).
 *   BENCH_HTTP_E2E_ONLY=1 runs this shape alone (for comparing a change to it: a run of a minute
 *   instead of several; the result holds only its keys).
 *
 * Under `wrangler dev` the app's Worker and objects share one workerd thread and the machine's
 * load moves every time: the ratios need a quiet machine.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { corruptAndRestore, sqliteInsertMs } from "../lib/app.mjs";
import { call } from "../lib/client.mjs";
import { ingestLinger, startAppWorker } from "../lib/server.mjs";
import { envInt, median, note, percentile, waitFor } from "../lib/stats.mjs";
import { workload } from "./process.mjs";

export const name = "http";

const PARTITIONS = 4; // the example's default
const RESTORE_BATCH = 10_000; // the app's default RESTORE_BATCH_RECORDS (src/config.ts)
const WAIT_MS = 300_000;
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/** Runs `fn` over `items`, `concurrency` at a time. */
async function inParallel(items, concurrency, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** The app as a user reaches it: ingest, a total, a page of a prefix scan. */
function appTarget(app) {
  const auth = { token: app.token };
  return {
    post: (body) => call(app.baseUrl, "POST", "/topics/orders/records", { ...auth, body }),
    total: async (key) => {
      const r = await call(app.baseUrl, "GET", `/stores/totals/keys/${encodeURIComponent(key)}`, { ...auth, expect: [200, 404] });
      return r.status === 404 ? { count: 0, sum: 0 } : r.body.value;
    },
    scan: async (prefix, cursor) =>
      (
        await call(
          app.baseUrl,
          "GET",
          `/stores/totals/keys?prefix=${encodeURIComponent(prefix)}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
          auth,
        )
      ).body,
  };
}

/** The hand-written object `object` of the bench Worker, reached the same way. */
function baselineTarget(baseUrl, object) {
  return {
    post: (body) => call(baseUrl, "POST", `/bench/orders?object=${object}`, { body }),
    total: async (key) => {
      const r = await call(baseUrl, "GET", `/bench/orders/total?object=${object}&key=${encodeURIComponent(key)}`, { expect: [200, 404] });
      return r.status === 404 ? { count: 0, sum: 0 } : r.body;
    },
    scan: async (prefix, cursor) =>
      (
        await call(
          baseUrl,
          "GET",
          `/bench/orders/totals?object=${object}&prefix=${encodeURIComponent(prefix)}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        )
      ).body,
  };
}

const same = (a, b) => a.count === b.count && a.sum === b.sum;

/** Every total under `prefix` as `added` says (the scan sees exactly those customers, each right). */
async function allVisible(target, prefix, added) {
  let seen = 0;
  let cursor = null;
  do {
    const page = await target.scan(prefix, cursor);
    for (const { key, value } of page.items) {
      const want = added.get(key);
      if (!want || !same(value, want)) return false;
      seen++;
    }
    cursor = page.next;
  } while (cursor);
  return seen === added.size;
}

/** Posts the workload `concurrency` requests at a time; ms until every total is visible. */
async function processRound(target, work, prefix, lastKeys, concurrency) {
  const started = performance.now();
  await inParallel(work.bodies, concurrency, target.post);
  const posted = performance.now();
  let lastPolls = 0;
  await waitFor(
    `the last customers' totals under ${prefix}`,
    async () => {
      lastPolls++;
      return (await Promise.all(lastKeys.map(async (key) => same(await target.total(key), work.added.get(key))))).every(Boolean) ? true : undefined;
    },
    { timeoutMs: WAIT_MS, intervalMs: 5 },
  );
  const lastSeen = performance.now();
  let scans = 0;
  await waitFor(
    `every total under ${prefix}`,
    async () => {
      scans++;
      return (await allVisible(target, prefix, work.added)) ? true : undefined;
    },
    { timeoutMs: WAIT_MS, intervalMs: 10 },
  );
  const ended = performance.now();
  // Where the round's time went, seen from outside: posting, the last totals' wait, the scans.
  const phases = `posted ${(posted - started).toFixed(0)} ms, last totals +${(lastSeen - posted).toFixed(0)} ms (${lastPolls} polls), every total +${(ended - lastSeen).toFixed(0)} ms (${scans} scans)`;
  return { ms: ended - started, phases };
}

/** One order for `key` (whose count is `want - 1`), timed from sending it until a read shows count `want`. */
async function e2eSample(target, key, want) {
  const started = performance.now();
  await target.post(JSON.stringify({ records: [{ key, value: { amount: 1 } }] }));
  let seen;
  await waitFor(
    `customer ${key} to reach count ${want}`,
    async () => {
      seen = (await target.total(key)).count;
      if (seen > want) throw new Error(`customer ${key} has count ${seen}, more than the ${want} posted`);
      return seen === want ? true : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 0, last: () => `(last count ${seen})` },
  );
  return performance.now() - started;
}

/** Task `taskId`, once it runs with lag 0 and nothing left to send. */
async function settled(app, taskId, what) {
  let last;
  return waitFor(
    what,
    async () => {
      const { body } = await call(app.baseUrl, "GET", "/tasks", { token: app.token });
      last = body.tasks.find((t) => t.id === taskId && t.role === "active");
      if (last?.failure) throw new Error(`task ${taskId} failed: ${last.failure}`);
      return last && last.state === "RUNNING" && last.lag === 0 && last.pendingBatches === 0 ? last : undefined;
    },
    { timeoutMs: WAIT_MS, intervalMs: 100, last: () => JSON.stringify(last) },
  );
}

async function restoreRounds(baseUrl, app, { rounds, keys, records }) {
  const out = { appMs: [], baselineMs: [], changelog: [], replayed: [] };
  for (let round = 1; round <= rounds; round++) {
    const taskId = `0_${round}`;
    const customers = (await call(baseUrl, "GET", `/bench/keys?partitions=${PARTITIONS}&partition=${round}&count=${keys}&prefix=hr-`)).body.keys;
    const added = new Map();
    for (let start = 0; start < records; start += 1000) {
      const batch = [];
      for (let n = start; n < Math.min(records, start + 1000); n++) {
        const key = customers[n % keys];
        const amount = 1 + (n % 97);
        batch.push({ key, value: { amount } });
        const t = added.get(key) ?? { count: 0, sum: 0 };
        t.count++;
        t.sum += amount;
        added.set(key, t);
      }
      await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: batch } });
    }
    const before = await settled(app, taskId, `task ${taskId} to process ${records} orders`);
    const { ms, task } = await corruptAndRestore(app, taskId, (t) => t.lag === 0, {
      what: `task ${taskId} to restore ${keys} live keys (round ${round})`,
      timeoutMs: 120_000,
      intervalMs: 5,
    });
    const key = customers[(round * 997) % keys];
    const got = await appTarget(app).total(key);
    if (!same(got, added.get(key))) throw new Error(`http: restored ${key} = ${JSON.stringify(got)}, expected ${JSON.stringify(added.get(key))}`);
    out.appMs.push(ms);
    out.changelog.push(before.changelogs[0].end);
    out.replayed.push(task.changelogs[0].replayed);
    out.baselineMs.push(await sqliteInsertMs(baseUrl, keys, RESTORE_BATCH, `http-restore-${Date.now()}-${round}`));
    note(
      `http restore round ${round}: task ${taskId}, ${keys} live keys, changelog end ${before.changelogs[0].end}, replayed ${task.changelogs[0].replayed}: ` +
        `RUNNING with lag 0 in ${ms.toFixed(0)} ms; raw insert of the live keys ${out.baselineMs.at(-1)} ms`,
    );
  }
  return out;
}

export async function run({ baseUrl }) {
  const processRecords = envInt("BENCH_HTTP_PROCESS_RECORDS", 20_000);
  const processCustomers = envInt("BENCH_HTTP_PROCESS_CUSTOMERS", 2_000);
  const processBatch = envInt("BENCH_HTTP_PROCESS_BATCH", 500);
  const concurrency = envInt("BENCH_HTTP_CONCURRENCY", 4);
  const processRounds = envInt("BENCH_HTTP_PROCESS_ROUNDS", 3);
  const e2eSamples = envInt("BENCH_HTTP_E2E_SAMPLES", 100);
  const e2eWarmup = envInt("BENCH_HTTP_E2E_WARMUP", 10);
  const restoreKeys = envInt("BENCH_HTTP_RESTORE_KEYS", 13_000);
  const restoreRecords = envInt("BENCH_HTTP_RESTORE_RECORDS", 30_000);
  const restoreRoundCount = envInt("BENCH_HTTP_RESTORE_ROUNDS", 3);
  const e2eOnly = process.env.BENCH_HTTP_E2E_ONLY === "1";
  if (restoreRoundCount > PARTITIONS - 1) throw new Error(`BENCH_HTTP_RESTORE_ROUNDS is at most ${PARTITIONS - 1} (a task of its own per round)`);

  // Unset: the app's default (to compare with the read-ahead off, 0).
  const readAhead = process.env.BENCH_HTTP_RESTORE_READ_AHEAD;
  if (readAhead !== undefined && !/^[0-9]+$/.test(readAhead))
    throw new Error(`BENCH_HTTP_RESTORE_READ_AHEAD must be a whole number, got ${JSON.stringify(readAhead)}`);
  const app = await startAppWorker({
    root,
    vars: { FAULT_INJECTION: "on", ...ingestLinger(), ...(readAhead === undefined ? {} : { RESTORE_READ_AHEAD: readAhead }) },
  });
  try {
    await settled(app, "0_0", "the app's tasks to run");

    // First, while the restored tasks hold nothing but their history.
    const restore = e2eOnly ? undefined : await restoreRounds(baseUrl, app, { rounds: restoreRoundCount, keys: restoreKeys, records: restoreRecords });

    const run = Date.now();
    const processWork = (prefix, records) => {
      const keys = Array.from({ length: processCustomers }, (_, n) => `${prefix}${n}`);
      const work = workload(keys, records, processBatch);
      const tail = work.bodies.slice(-concurrency).map((body) => JSON.parse(body).records.at(-1).key);
      return { work, prefix, lastKeys: [...new Set(tail)] };
    };
    const targets = (round) => ({ app: appTarget(app), baseline: baselineTarget(baseUrl, `http-${run}-${round}`) });
    const warm = processWork("hw-", Math.min(processRecords, 4 * processBatch));
    for (const target of Object.values(targets("warm"))) await processRound(target, warm.work, warm.prefix, warm.lastKeys, concurrency);
    const rates = { app: [], baseline: [] };
    for (let round = 1; round <= (e2eOnly ? 0 : processRounds); round++) {
      const shape = processWork(`hp${round}-`, processRecords);
      const order = round % 2 ? ["app", "baseline"] : ["baseline", "app"];
      const byName = targets(round);
      for (const which of order) {
        const { ms, phases } = await processRound(byName[which], shape.work, shape.prefix, shape.lastKeys, concurrency);
        rates[which].push(processRecords / (ms / 1000));
        note(`http process round ${round} ${which.padEnd(8)} ${Math.round(processRecords / (ms / 1000))}/s (${ms.toFixed(0)} ms: ${phases})`);
      }
    }

    const e2eKeys = Array.from({ length: 10 }, (_, n) => `he-${run}-${n}`);
    const e2eTargets = { app: appTarget(app), baseline: baselineTarget(baseUrl, `http-e2e-${run}`) };
    const counts = { app: new Map(), baseline: new Map() };
    const latencies = { app: [], baseline: [] };
    for (let i = 0; i < e2eWarmup + e2eSamples; i++) {
      const key = e2eKeys[i % e2eKeys.length];
      for (const which of i % 2 ? ["app", "baseline"] : ["baseline", "app"]) {
        const want = (counts[which].get(key) ?? 0) + 1;
        const ms = await e2eSample(e2eTargets[which], key, want);
        counts[which].set(key, want);
        if (i >= e2eWarmup) latencies[which].push(ms);
      }
    }

    const p = (which, q) => percentile(latencies[which], q);
    const e2e = {
      http_e2e_p50_ms: Number(p("app", 50).toFixed(1)),
      http_e2e_p99_ms: Number(p("app", 99).toFixed(1)),
      http_e2e_baseline_p50_ms: Number(p("baseline", 50).toFixed(1)),
      http_e2e_baseline_p99_ms: Number(p("baseline", 99).toFixed(1)),
      http_e2e_p50_ratio: Number((p("app", 50) / p("baseline", 50)).toFixed(3)),
      http_e2e_p99_ratio: Number((p("app", 99) / p("baseline", 99)).toFixed(3)),
    };
    if (e2eOnly) {
      note(`http: ${JSON.stringify(e2e)}`);
      return e2e;
    }
    const appRate = median(rates.app);
    const baselineRate = median(rates.baseline);
    const appRestore = median(restore.appMs);
    const baselineRestore = median(restore.baselineMs);
    const result = {
      http_process_records_per_s: Math.round(appRate),
      http_process_baseline_records_per_s: Math.round(baselineRate),
      http_process_ratio: Number((appRate / baselineRate).toFixed(3)),
      ...e2e,
      http_restore_live_keys_ms: Math.round(appRestore),
      http_restore_live_keys_baseline_ms: Math.round(baselineRestore),
      http_restore_live_keys_ratio: Number((baselineRestore / appRestore).toFixed(3)),
      http_restore_live_keys: restoreKeys,
      http_restore_changelog_records: median(restore.changelog),
      http_restore_replayed: median(restore.replayed),
    };
    note(`http: ${JSON.stringify(result)}`);
    return result;
  } catch (error) {
    note(`http app wrangler output (tail):\n${app.output().slice(-4000)}`);
    throw error;
  } finally {
    await app.stop();
  }
}
