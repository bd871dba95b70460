/**
 * Restoration as a user sees it, with the app's DEFAULT configuration: a task of 13,000 live keys
 * is corrupted, and the time until `GET /tasks` shows it RUNNING with lag 0 again is compared with
 * inserting the same number of records straight into SQLite.
 *
 * - App (`restore_e2e_default_ms`): its own instance of the example app from the root
 *   wrangler.toml with no knob changed (RESTORE_BATCH_RECORDS, RESTORE_SHARDS, … as shipped), only
 *   FAULT_INJECTION on so that the corrupt route exists (as the restore scenario starts it). It
 *   gets BENCH_RESTORE_E2E_KEYS orders (13,000) for task 0_0, each for a customer of its own on
 *   partition 0 of `orders` (from `/bench/keys`), 1000 per ingest request, and processes them to
 *   lag 0: the task's store holds that many live keys, its changelog that many records (~100
 *   bytes). Then, each round, `POST /admin/tasks/0_0/corrupt` (wiped and revived, the task
 *   restores its changelog through the restore worker), timed from the corrupt call until
 *   `GET /tasks` (polled every 5 ms) shows 0_0 RUNNING with lag 0 in the incarnation the corrupt
 *   call made; one customer's total (a different one each round) is then checked.
 * - Baseline (`restore_e2e_baseline_ms`): the same number of ~100-byte records inserted straight
 *   into one fresh Durable Object's SQLite, one transaction per 10,000 (the app's default restore
 *   batch), by the bench Worker (`/bench/sqlite-insert`: the sum of its timed RPC calls), once per
 *   round, right after the app's restore.
 *
 * BENCH_RESTORE_E2E_ROUNDS (5) rounds (single rounds swing: 81–297 ms in one run of eight, and
 * 125–257 ms in one full run, so a median of three could be a slow round); the medians are
 * reported, and
 * `restore_e2e_default_ratio` = median baseline ms ÷ median app ms (1 would be restoring as fast as
 * raw inserts). The instance is stopped at the end.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { call } from "../lib/client.mjs";
import { activeTask, corruptAndRestore, oneOrderEach, sqliteInsertMs } from "../lib/app.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, median, note } from "../lib/stats.mjs";

export const name = "restore-e2e";

const TASK = "0_0";
const BASELINE_BATCH = 10_000; // the app's default RESTORE_BATCH_RECORDS (src/config.ts)
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export async function run({ baseUrl }) {
  const records = envInt("BENCH_RESTORE_E2E_KEYS", 13_000);
  const rounds = envInt("BENCH_RESTORE_E2E_ROUNDS", 5);
  const app = await startAppWorker({ root, vars: { FAULT_INJECTION: "on" } });
  try {
    await activeTask(app, TASK); // the assignment exists, 0_0 runs

    note(`restore-e2e: ${records} orders for task ${TASK}, one per customer …`);
    const customers = await oneOrderEach(baseUrl, app, { count: records, prefix: "restore-e2e-", timeoutMs: 300_000 });
    const appMs = [];
    const baselineMs = [];
    for (let round = 1; round <= rounds; round++) {
      const { ms, task: last } = await corruptAndRestore(app, TASK, (task) => task.lag === 0, {
        what: `task ${TASK} to restore ${records} keys (round ${round})`,
        timeoutMs: 120_000,
        intervalMs: 5,
      });
      const changelog = last.changelogs[0];
      if (changelog.checkpoint !== changelog.end || changelog.end < records) {
        throw new Error(`restore-e2e: ${TASK} RUNNING with changelog ${JSON.stringify(changelog)}, expected its checkpoint at its end (≥ ${records})`);
      }
      const index = Math.floor((round * records) / (rounds + 1));
      const key = customers[index];
      const { body } = await call(app.baseUrl, "GET", `/stores/totals/keys/${key}`, { token: app.token });
      if (body.value.count !== 1 || body.value.sum !== index)
        throw new Error(`restore-e2e: restored ${key} = ${JSON.stringify(body.value)}, expected {count: 1, sum: ${index}}`);
      appMs.push(ms);

      baselineMs.push(await sqliteInsertMs(baseUrl, records, BASELINE_BATCH, `restore-e2e-${Date.now()}-${round}`));
      note(
        `restore-e2e round ${round}: ${records} keys restored to RUNNING, lag 0 in ${ms.toFixed(0)} ms (incarnation ${last.incarnation}, replayed ${changelog.replayed}); baseline ${baselineMs.at(-1)} ms`,
      );
    }

    const appMedian = median(appMs);
    const baselineMedian = median(baselineMs);
    return {
      restore_e2e_default_ms: Math.round(appMedian),
      restore_e2e_baseline_ms: Math.round(baselineMedian),
      restore_e2e_default_ratio: Number((baselineMedian / appMedian).toFixed(3)),
      restore_e2e_keys: records,
    };
  } catch (error) {
    note(`restore-e2e app wrangler output (tail):\n${app.output().slice(-4000)}`);
    throw error;
  } finally {
    await app.stop();
  }
}
