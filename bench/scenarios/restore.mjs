/**
 * Restoration throughput: a wiped task restoring its changelog through the restore worker.
 *
 * - App (`restore_records_per_s`): a second instance of the example app (FAULT_INJECTION on) gets
 *   BENCH_RESTORE_RECORDS records of ~100 bytes appended straight to partition 0 of the `totals`
 *   store's changelog (`POST /topics/edge-streams-totals-changelog/records`, 1000 per request),
 *   over BENCH_RESTORE_KEYS keys. Then task 0_0 is corrupted (`POST /admin/tasks/0_0/corrupt`):
 *   wiped and revived, it restores the whole changelog batch by batch (RESTORE_BATCH_RECORDS, the
 *   app's default 1000) through the restore worker. Timed from the corrupt call to `GET /tasks`
 *   showing 0_0 RUNNING with its checkpoint at the changelog's end; one key's value is checked.
 * - Baseline (`restore_baseline_records_per_s`): the same number of ~100-byte records inserted
 *   straight into one Durable Object's SQLite, one transaction per batch of the same size, by the
 *   bench Worker (`/bench/sqlite-insert`), same run.
 *
 * Memory is bounded by the batch, not the changelog: BENCH_RESTORE_RECORDS=1000000 restores a
 * million records the same way (the Worker isolate has 128 MB).
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { call, post } from "../lib/client.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, note, waitFor } from "../lib/stats.mjs";

export const name = "restore";

const CHANGELOG = "edge-streams-totals-changelog";
const TASK = "0_0";
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

async function task(app) {
  const { body } = await call(app.baseUrl, "GET", "/tasks", { token: app.token });
  const found = body.tasks.find((t) => t.id === TASK && t.role === "active");
  if (!found) throw new Error(`no active instance of ${TASK}`);
  return found;
}

export async function run({ baseUrl }) {
  const records = envInt("BENCH_RESTORE_RECORDS", 200_000);
  const keys = envInt("BENCH_RESTORE_KEYS", 10_000);
  const perRequest = 1000;
  const app = await startAppWorker({ root, vars: { FAULT_INJECTION: "on" } });
  await task(app); // the assignment exists, 0_0 runs

  note(`restore: writing ${records} changelog records …`);
  const pad = "x".repeat(60);
  for (let start = 0; start < records; start += perRequest) {
    const batch = [];
    for (let i = start; i < Math.min(records, start + perRequest); i++) {
      batch.push({ key: `key-${i % keys}`, value: { count: i, sum: i * 2, pad }, partition: 0 });
    }
    await call(app.baseUrl, "POST", `/topics/${CHANGELOG}/records`, { token: app.token, body: { records: batch } });
  }
  const lastIndex = records - 1;
  const checkKey = `key-${lastIndex % keys}`;

  const started = performance.now();
  await call(app.baseUrl, "POST", `/admin/tasks/${TASK}/corrupt`, { token: app.token });
  let last;
  await waitFor(
    `task ${TASK} to restore ${records} records`,
    async () => {
      last = await task(app);
      const changelog = last.changelogs[0];
      return last.state === "RUNNING" && changelog.checkpoint === changelog.end ? last : undefined;
    },
    { timeoutMs: 600_000, intervalMs: 20, last: () => JSON.stringify(last) },
  );
  const ms = performance.now() - started;
  const { body } = await call(app.baseUrl, "GET", `/stores/totals/keys/${checkKey}`, { token: app.token });
  if (body.value.count !== lastIndex) throw new Error(`restored ${checkKey} = ${JSON.stringify(body.value)}, expected count ${lastIndex}`);
  const appRate = records / (ms / 1000);
  note(`restore: ${records} records in ${ms.toFixed(0)} ms (${Math.round(appRate)}/s)`);

  const baseline = await post(baseUrl, "/bench/sqlite-insert", { records, batch: 1000, valueBytes: 90, run: `restore-${Date.now()}` });
  const baselineRate = records / (baseline["sqlite-row"].rpcMs / 1000);
  note(`restore baseline: ${Math.round(baselineRate)}/s`);

  return {
    restore_records_per_s: Math.round(appRate),
    restore_baseline_records_per_s: Math.round(baselineRate),
    restore_ratio: Number((appRate / baselineRate).toFixed(3)),
    restore_records: records,
  };
}
