/**
 * Restoration throughput: a wiped task restoring its changelog through the restore worker.
 *
 * - App (`restore_records_per_s`): a second instance of the example app (FAULT_INJECTION on) gets
 *   BENCH_RESTORE_RECORDS orders for task 0_0 through its ingest route (1000 per request), each
 *   for a customer of its own, so that its changelog holds that many records (~100 bytes) and
 *   compaction has nothing to remove. Once they are processed, task 0_0 is corrupted
 *   (`POST /admin/tasks/0_0/corrupt`): wiped and revived, it restores the whole changelog batch by
 *   batch (RESTORE_BATCH_RECORDS and RESTORE_BATCH_BYTES, the app's defaults) through the restore worker. Timed from
 *   the corrupt call to `GET /tasks` showing 0_0 RUNNING with its checkpoint at the changelog's
 *   end; one customer's value is checked. (The changelog is internal to the application: only its
 *   tasks write it, so the records come through processing.) BENCH_RESTORE_ROUNDS (3) restores,
 *   each alternating with a baseline round; the medians are reported.
 * - Baseline (`restore_baseline_records_per_s`): the same number of ~100-byte records inserted
 *   straight into one Durable Object's SQLite, one RPC and transaction per batch of the same size, by the
 *   bench Worker (`/bench/sqlite-insert`), same run.
 *
 * Memory is bounded by the batch, not the changelog: BENCH_RESTORE_RECORDS=1000000 restores a
 * million records the same way (the Worker isolate has 128 MB). The scenario restore-e2e
 * (./restore-e2e.mjs) measures a smaller task (13,000 live keys) the same way, five rounds, until
 * `GET /tasks` shows it RUNNING with lag 0 (`restore_e2e_default_ratio`).
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { call } from "../lib/client.mjs";
import { activeTask, corruptAndRestore, oneOrderEach, sqliteInsertMs } from "../lib/app.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, median, note } from "../lib/stats.mjs";

export const name = "restore";

const TASK = "0_0";
/** The app's default RESTORE_BATCH_RECORDS (src/config.ts, wrangler.toml). */
const RESTORE_BATCH = 10_000;
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export async function run({ baseUrl }) {
  const records = envInt("BENCH_RESTORE_RECORDS", 200_000);
  const rounds = envInt("BENCH_RESTORE_ROUNDS", 3);
  const app = await startAppWorker({ root, vars: { FAULT_INJECTION: "on" } });
  await activeTask(app, TASK); // the assignment exists, 0_0 runs

  note(`restore: ${records} orders for task ${TASK} …`);
  const customers = await oneOrderEach(baseUrl, app, { count: records, prefix: "restore-", timeoutMs: 600_000 });
  const lastIndex = records - 1;
  const checkKey = customers[lastIndex];

  const appRates = [];
  const baselineRates = [];
  for (let round = 1; round <= rounds; round++) {
    const { ms } = await corruptAndRestore(app, TASK, (task) => task.changelogs[0].checkpoint === task.changelogs[0].end, {
      what: `task ${TASK} to restore ${records} records`,
      timeoutMs: 600_000,
      intervalMs: 20,
    });
    const { body } = await call(app.baseUrl, "GET", `/stores/totals/keys/${checkKey}`, { token: app.token });
    if (body.value.count !== 1 || body.value.sum !== lastIndex)
      throw new Error(`restored ${checkKey} = ${JSON.stringify(body.value)}, expected {count: 1, sum: ${lastIndex}}`);
    appRates.push(records / (ms / 1000));

    // In batches as large as the app's restore batches (RESTORE_BATCH_RECORDS; ~100-byte records stay under RESTORE_BATCH_BYTES).
    baselineRates.push(records / ((await sqliteInsertMs(baseUrl, records, RESTORE_BATCH, `restore-${Date.now()}`)) / 1000));
    note(
      `restore round ${round}: ${records} records in ${ms.toFixed(0)} ms (${Math.round(appRates.at(-1))}/s); baseline ${Math.round(baselineRates.at(-1))}/s`,
    );
  }
  await app.stop(); // idle from here on, but later scenarios need the machine to themselves
  const appRate = median(appRates);
  const baselineRate = median(baselineRates);

  return {
    restore_records_per_s: Math.round(appRate),
    restore_baseline_records_per_s: Math.round(baselineRate),
    restore_ratio: Number((appRate / baselineRate).toFixed(3)),
    restore_records: records,
  };
}
