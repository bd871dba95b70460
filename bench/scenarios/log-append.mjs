/**
 * Batched appends to one partition through the log (`DurableLog.append`: Worker → LogPartition
 * RPC → SQLite) against a baseline that inserts the same records straight into one Durable
 * Object's SQLite, one `transactionSync` per batch, called the same way (Worker → DO RPC).
 * Both are timed inside the Worker around each awaited RPC and interleaved batch by batch, in
 * rotating order, so drift hits them alike; after a warm-up, the median of the rounds is reported.
 *
 * BENCH_RECORDS, BENCH_BATCH, BENCH_ROUNDS, BENCH_VALUE_BYTES tune it. (The log inserts 16 rows
 * per statement; the baseline keeps one row per INSERT, the plain way to write it.)
 */
import { post } from "../lib/client.mjs";
import { envInt, median, note } from "../lib/stats.mjs";

export const name = "log-append";

const KEY_BYTES = 10; // fixed by the Worker's record generator

export async function run({ baseUrl }) {
  const records = envInt("BENCH_RECORDS", 100_000);
  const batch = envInt("BENCH_BATCH", 1000);
  const rounds = envInt("BENCH_ROUNDS", 5);
  const valueBytes = envInt("BENCH_VALUE_BYTES", 90);

  const targets = [
    { key: "log_append_records_per_s", target: "log" },
    { key: "sqlite_insert_records_per_s", target: "sqlite-row" },
  ];

  // One request runs every target, batch by batch in rotating order, each on fresh objects.
  const measure = async (run, n) => {
    const r = await post(baseUrl, "/bench/append", { targets: targets.map((t) => t.target).join(","), records: n, batch, valueBytes, run });
    const totalRpcMs = targets.reduce((sum, t) => sum + (r[t.target]?.rpcMs ?? 0), 0);
    return targets.map((t) => {
      const m = r[t.target];
      if (!m || m.records !== n) throw new Error(`${t.target} wrote ${m?.records} records, expected ${n}`);
      // The in-Worker clock only moves across I/O: a zero time, or more than the wall time, means it did not.
      if (!(m.rpcMs > 0) || totalRpcMs > r.wallMs + 1) {
        throw new Error(`${t.target}: implausible in-Worker time ${m.rpcMs} ms (all targets ${totalRpcMs} ms, wall ${r.wallMs.toFixed(0)} ms)`);
      }
      return { ...t, perS: n / (m.rpcMs / 1000), rpcMs: m.rpcMs };
    });
  };

  await measure("warm", Math.min(records, 20 * batch));
  const rates = new Map(targets.map((t) => [t.key, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const m of await measure(`r${round}`, records)) {
      rates.get(m.key).push(m.perS);
      note(`round ${round} ${m.key.padEnd(42)} ${Math.round(m.perS).toString().padStart(8)}/s  (${m.rpcMs} ms)`);
    }
  }

  const result = {};
  for (const t of targets) result[t.key] = Math.round(median(rates.get(t.key)));
  result.log_append_ratio = Number((result.log_append_records_per_s / result.sqlite_insert_records_per_s).toFixed(3));
  result.log_append_records_per_round = records;
  result.log_append_batch_records = batch;
  result.log_append_record_bytes = KEY_BYTES + valueBytes;
  result.log_append_rounds = rounds;
  return result;
}
