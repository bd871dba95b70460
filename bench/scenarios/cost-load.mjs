/**
 * What the example costs under sustained load, and what it costs once quiet.
 *
 * The example with its default 4 partitions, two placements (`a,b`) and a standby per task
 * (NUM_STANDBYS=1: 8 task instances) runs in its own `wrangler dev` from bench/counting-app.ts
 * (requests, SQLite rows by table and database sizes counted per object; bench/lib/usage.mjs).
 * Once every instance runs and a warm-up batch is processed:
 *
 * - Load: the loader of e2e-load (./e2e-load.mjs: batches of BENCH_COST_LOAD_BATCH orders, 100,
 *   paced by the wall clock) posts BENCH_COST_LOAD_RATE orders/s (5,000) over its 1,000 customers
 *   (250 per partition, every batch over all four) for BENCH_COST_LOAD_SECONDS (30). Counted from
 *   its first request until every instance reports lag 0 with nothing left to send (standbys
 *   current), minus what that polling cost (one poll measured on the idle application before),
 *   per order accepted: `cost_load_rows_written_per_record`, `cost_load_rows_read_per_record`,
 *   `cost_load_do_requests_per_record`, `cost_load_cost_per_million_usd` and the breakdown
 *   `cost_load_rows_written_per_record_<category>[_<table>]`, `cost_load_do_requests_per_record_<category>`
 *   (as the scale scenario's keys); the billed storage's growth per order
 *   (`cost_load_stored_bytes_per_record_marginal`: these customers' totals are updated in place,
 *   so it is the log's), its dollars a month and the order's JSON size; the loader's offered and
 *   accepted rates (`cost_load_offered_per_s`, `cost_load_achieved_per_s`) and the orders
 *   (`cost_load_records`). One customer's total is checked.
 * - Settled: what the next BENCH_SETTLE_MS (20,000) cost with no request from outside — progress
 *   the objects hold in memory and write within 10 s (RECORD_OWED_MS, PROGRESS_FLUSH_MS), their
 *   backstop alarms, the changelogs' quiet compaction — added to the load's:
 *   `cost_load_rows_written_per_record_settled`, `cost_load_do_requests_per_record_settled`.
 * - Idle: then nothing at all for BENCH_IDLE_MS (120,000): the requests (RPC calls and alarms)
 *   every object received, per minute — `idle_wakeups_per_min` and per kind
 *   `idle_wakeups_per_min_<task|partition|coordinator|restore|group>`. (In-memory timers wake an
 *   object without a request and are not counted here; they keep it from hibernating.)
 * - Watched: the same load again (BENCH_COST_LOAD_WATCHED_SECONDS, 30; 0 skips it) while one
 *   customer of each task is watched over a WebSocket (./push.mjs's subscriber, which checks each
 *   change comes once and in order): a watched task neither lingers its sends nor defers its
 *   commits (docs/subscriptions.md), and this is what that costs — the same per-order keys
 *   prefixed `cost_load_watched_`, and the changes the four subscribers received
 *   (`cost_load_watched_events`).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { describeAll, quiet } from "../lib/app.mjs";
import { call } from "../lib/client.mjs";
import { ingestLinger, startAppWorker } from "../lib/server.mjs";
import { envInt, note, waitFor } from "../lib/stats.mjs";
import {
  categorize,
  delta,
  lessPolls,
  objectsUsage,
  pollCost,
  perRecordKeys,
  standbyNames,
  storageKeys,
  tally,
  wakeupDetail,
  callsByCategory,
  settledKeys,
  wakeupKeys,
} from "../lib/usage.mjs";
import { loaderKeys, startLoader } from "./e2e-load.mjs";
import { closeAll, openWatch } from "./push.mjs";

export const name = "cost-load";

const PARTITIONS = 4; // the example's default
const INSTANCES = PARTITIONS * 2; // an active and a standby per task
const QUIET_TIMEOUT_MS = 300_000;
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

async function total(app, key) {
  const r = await call(app.baseUrl, "GET", `/stores/totals/keys/${encodeURIComponent(key)}`, { token: app.token, expect: [200, 404] });
  return r.status === 404 ? { count: 0, sum: 0 } : r.body.value;
}

/** The mean JSON size of the loader's first `count` orders (order n: customer n mod keys, amount 1 + n mod 97). */
function orderBytes(keys, count) {
  let bytes = 0;
  for (let n = 0; n < count; n++) bytes += Buffer.byteLength(JSON.stringify({ key: keys[n % keys.length], value: { amount: 1 + (n % 97) } }));
  return bytes / count;
}

/**
 * The loader at `rate` for `seconds`, counted from its first request until every order is
 * processed and every standby current: what the objects spent, the load, and the polls made.
 * One customer's total is checked.
 */
async function loadCost(app, keys, categoryOf, { rate, batch, seconds, label }) {
  const checkKey = keys[1];
  const checkBefore = await total(app, checkKey);
  const objectsBefore = await objectsUsage(app);
  const before = tally(objectsBefore, categoryOf);
  note(`${label}: ${rate} orders/s in batches of ${batch} over ${keys.length} customers for ${seconds} s`);
  const loader = startLoader(app, keys, { rate, batch });
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until && !loader.failure) await sleep(Math.min(1000, Math.max(0, until - performance.now())));
  const load = await loader.stop();
  const started = performance.now();
  const polls = await quiet(app, INSTANCES, "every order processed and every standby current", QUIET_TIMEOUT_MS);
  const objectsAfter = await objectsUsage(app);
  const spent = delta(tally(objectsAfter, categoryOf), before);
  note(
    `${label}: ${load.posted} orders posted in ${((load.stoppedAt - load.started) / 1000).toFixed(1)} s, ${load.accepted} accepted; ` +
      `all processed and replicated ${((performance.now() - started) / 1000).toFixed(1)} s after the last answer (${polls} polls); ` +
      `spent ${JSON.stringify({ rowsWritten: spent.rowsWritten, rowsRead: spent.rowsRead, requests: spent.requests })}`,
  );
  note(`${label}: requests during the load by category and call: ${JSON.stringify(callsByCategory(wakeupDetail(objectsAfter, objectsBefore), categoryOf))}`);

  const got = await total(app, checkKey);
  const added = load.added.get(checkKey) ?? { count: 0, sum: 0 };
  if (got.count !== checkBefore.count + added.count || got.sum !== checkBefore.sum + added.sum) {
    throw new Error(
      `${label}: customer ${checkKey} has ${JSON.stringify(got)}, expected ${JSON.stringify({ count: checkBefore.count + added.count, sum: checkBefore.sum + added.sum })}`,
    );
  }
  return { load, polls, spent, objectsBefore, objectsAfter };
}

/** The same load while one customer of each task is watched: `cost_load_watched_*` per order. */
async function watchedCost(app, keys, categoryOf, perPoll, { rate, batch, seconds }) {
  // The loader's keys are interleaved by partition: the first PARTITIONS are one per task.
  const watchedKeys = keys.slice(0, PARTITIONS);
  const subscribers = [];
  try {
    for (const key of watchedKeys) {
      const subscriber = await openWatch(app, key);
      if (!subscriber) throw new Error(`cost-load: the watch of ${key} was refused (503)`);
      subscribers.push(subscriber);
    }
    await waitFor("the watches' snapshots", async () => (subscribers.every((s) => s.last !== undefined || s.failure) ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    const { load, polls, spent } = await loadCost(app, keys, categoryOf, { rate, batch, seconds, label: "cost-load watched" });
    const expected = watchedKeys.map((key) => load.added.get(key)?.count ?? 0);
    await waitFor(
      "every watched change at its subscriber",
      async () => (subscribers.every((s, i) => s.failure || s.changes >= expected[i]) ? true : undefined),
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    const failed = subscribers.find((s) => s.failure);
    if (failed) throw new Error(`cost-load: the watch of ${failed.key}: ${failed.failure}`);
    const events = subscribers.reduce((sum, s) => sum + s.changes, 0);
    note(`cost-load watched: the subscribers received ${events} changes (${expected.join(", ")} expected per key)`);
    return { ...perRecordKeys("cost_load_watched_", lessPolls(spent, polls, perPoll), load.accepted), cost_load_watched_events: events };
  } finally {
    closeAll(subscribers);
  }
}

export async function run({ baseUrl }) {
  const rate = envInt("BENCH_COST_LOAD_RATE", 5000);
  const seconds = envInt("BENCH_COST_LOAD_SECONDS", 30);
  const batch = envInt("BENCH_COST_LOAD_BATCH", 100);
  const idleMs = envInt("BENCH_IDLE_MS", 120_000);
  const settleMs = envInt("BENCH_SETTLE_MS", 20_000);
  const watchedSeconds = envInt("BENCH_COST_LOAD_WATCHED_SECONDS", 30);
  const keys = await loaderKeys(baseUrl);

  note(`cost-load: starting the example with NUM_STANDBYS=1 (counting) …`);
  const app = await startAppWorker({
    root,
    script: join(root, "bench", "counting-app.ts"),
    vars: { PARTITIONS: String(PARTITIONS), PLACEMENTS: "a,b", NUM_STANDBYS: "1", LOG_LEVEL: "warn", ...ingestLinger() },
  });
  try {
    await quiet(app, INSTANCES, `all ${INSTANCES} instances to run`, QUIET_TIMEOUT_MS);
    const warm = keys.map((key) => ({ key: `warm-${key}`, value: { amount: 1 } }));
    await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: warm } });
    await quiet(app, INSTANCES, "the warm-up orders to be processed", QUIET_TIMEOUT_MS);

    const categoryOf = categorize(standbyNames(await describeAll(app)));
    const perPoll = await pollCost(app, categoryOf, () => describeAll(app));

    const { load, polls, spent, objectsBefore, objectsAfter } = await loadCost(app, keys, categoryOf, { rate, batch, seconds, label: "cost-load" });
    const records = load.accepted;

    // Settled: what the quiet period after the load writes (progress held in memory, quiet compaction).
    await sleep(settleMs);
    const idleBefore = await objectsUsage(app);
    const settled = delta(tally(idleBefore, categoryOf), tally(objectsAfter, categoryOf));
    note(`cost-load: the ${settleMs / 1000} s after: ${JSON.stringify({ rowsWritten: settled.rowsWritten, requests: settled.requests })}`);

    // Idle: no request from here for idleMs.
    await sleep(idleMs);
    const idleAfter = await objectsUsage(app);
    const idle = wakeupKeys("idle_wakeups_per_min", idleAfter, idleBefore, idleMs);
    note(`cost-load: idle for ${idleMs / 1000} s: ${JSON.stringify(idle)}`);
    note(`cost-load: idle wake-ups by object and call: ${JSON.stringify(wakeupDetail(idleAfter, idleBefore))}`);

    const watched = watchedSeconds > 0 ? await watchedCost(app, keys, categoryOf, perPoll, { rate, batch, seconds: watchedSeconds }) : {};

    return {
      ...watched,
      ...perRecordKeys("cost_load_", lessPolls(spent, polls, perPoll), records),
      ...settledKeys("cost_load_", lessPolls(spent, polls, perPoll), settled, records),
      ...storageKeys("cost_load_", { before: objectsBefore, after: objectsAfter, records, orderBytes: orderBytes(keys, records) }),
      cost_load_offered_per_s: Math.round(load.posted / ((load.stoppedAt - load.started) / 1000)),
      cost_load_achieved_per_s: Math.round(load.accepted / ((load.settledAt - load.started) / 1000)),
      cost_load_records: records,
      ...idle,
    };
  } catch (error) {
    note(`cost-load app wrangler output (tail):\n${app.output().slice(-4000)}`);
    throw error;
  } finally {
    await app.stop();
  }
}
