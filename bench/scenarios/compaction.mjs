/**
 * Compaction and the restore it bounds.
 *
 * - `compaction_records_per_s`: BENCH_COMPACTION_RECORDS updates (~100 bytes) of
 *   BENCH_COMPACTION_KEYS keys written to a compacted partition's real storage in the bench
 *   Worker, then compacted to one record per key by maintenance passes within their usual budget;
 *   records compacted away per second of those passes.
 * - `restore_compacted_replayed_per_key`: the example app (a second `wrangler dev`) takes
 *   BENCH_REPLAY_UPDATES orders for each of BENCH_REPLAY_KEYS customers of task 0_1, through its
 *   ingest route; its changelog partition compacts on its own (its alarm); then the task is
 *   corrupted and restores: the records its restoration replayed (`replayed` in GET /tasks)
 *   divided by the live keys. Goal ≤ 1.5 (history would be BENCH_REPLAY_UPDATES per key).
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { call, post } from "../lib/client.mjs";
import { startAppWorker } from "../lib/server.mjs";
import { envInt, note, waitFor } from "../lib/stats.mjs";

export const name = "compaction";

const CHANGELOG = "edge-streams-totals-changelog";
const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export async function run({ baseUrl }) {
  const records = envInt("BENCH_COMPACTION_RECORDS", 200_000);
  const keys = envInt("BENCH_COMPACTION_KEYS", 1_000);
  const compaction = await post(baseUrl, "/bench/compaction", { records, keys, run: `c-${Date.now()}` });
  if (compaction.records !== keys) throw new Error(`compaction left ${compaction.records} records of ${keys} keys`);
  const compactionRate = (records - keys) / (compaction.ms / 1000);
  note(`compaction: ${records} → ${compaction.records} records in ${compaction.ms} ms, ${compaction.passes} passes (${Math.round(compactionRate)}/s)`);

  const replayKeys = envInt("BENCH_REPLAY_KEYS", 500);
  const updates = envInt("BENCH_REPLAY_UPDATES", 100);
  const app = await startAppWorker({ root, vars: { FAULT_INJECTION: "on" } });
  const customers = (await call(baseUrl, "GET", `/bench/keys?partitions=4&partition=1&count=${replayKeys}&prefix=replay-`)).body.keys;
  note(`replay: ${replayKeys * updates} orders for ${replayKeys} customers …`);
  for (let round = 1; round <= updates; round++) {
    await call(app.baseUrl, "POST", "/topics/orders/records", {
      token: app.token,
      body: { records: customers.map((key) => ({ key, value: { amount: round } })) },
    });
  }
  const task = async () => (await call(app.baseUrl, "GET", "/tasks", { token: app.token })).body.tasks.find((t) => t.id === "0_1" && t.role === "active");
  await waitFor("task 0_1 to process every order", async () => ((await task())?.lag === 0 && (await task()).state === "RUNNING" ? true : undefined), {
    timeoutMs: 300_000,
    intervalMs: 200,
  });
  await waitFor(
    "the changelog to compact",
    async () => {
      const { body } = await call(app.baseUrl, "GET", `/topics/${CHANGELOG}`, { token: app.token });
      return body.partitions[1].records <= replayKeys + 1 ? true : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 200 },
  );
  const before = await task();
  await call(app.baseUrl, "POST", "/admin/tasks/0_1/corrupt", { token: app.token });
  const restored = await waitFor(
    "task 0_1 to restore",
    async () => {
      const t = await task();
      return t && t.incarnation > before.incarnation && t.state === "RUNNING" ? t : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 50 },
  );
  const replayed = restored.changelogs[0].replayed;
  const check = (await call(app.baseUrl, "GET", `/stores/totals/keys/${customers[0]}`, { token: app.token })).body.value;
  if (check.count !== updates) throw new Error(`restored ${customers[0]} = ${JSON.stringify(check)}, expected count ${updates}`);
  note(`replay: ${replayed} records replayed for ${replayKeys} live keys (history: ${replayKeys * updates})`);
  return {
    compaction_records_per_s: Math.round(compactionRate),
    restore_compacted_replayed: replayed,
    restore_compacted_replayed_per_key: Number((replayed / replayKeys).toFixed(3)),
  };
}
