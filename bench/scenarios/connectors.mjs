/**
 * Connectors (issue #35) on miniflare's local Queues and R2, each against a hand-written baseline
 * in the same run (bench/connectors.ts):
 *
 * - `queue_source_records_per_s`: the framework's Queue source (plan, `appendUnseen` per partition,
 *   ack) against a plain `queue()` handler writing each batch to a Durable Object's SQLite table
 *   (`queue_source_baseline_records_per_s`; `queue_source_ratio`, goal ≥ 0.7). The same messages
 *   go to both queues at once (batches of 100); each is the messages over the summed time of its
 *   handler's invocations. `queue_source_rows_written_per_record`: SQLite rows the source's
 *   partitions wrote per message (counted from each cursor's `rowsWritten`, as the cost keys
 *   count), beside the baseline's (`queue_source_baseline_rows_written_per_record`).
 * - `queue_sink_records_per_s`: the framework's Queue sink (`SinkDelivery` + `QueueSink` on a
 *   partition's store) against reading the same records from a table, `sendBatch`-ing the same
 *   messages by hand and keeping the position in a row per batch (`queue_sink_baseline_records_per_s`;
 *   `queue_sink_ratio`, goal ≥ 0.7: the median of the rounds' ratios, each round both sides one
 *   after the other under the same load), in rotating order, each side starting on a drained queue.
 *   `queue_sink_refused_batches` / `queue_sink_baseline_refused_batches`: `sendBatch` calls
 *   miniflare refused in the measured rounds (each sent again after the same back-off).
 * - `tiered_fetch_records_per_s`: a partition read whole from offset 0 with all but its newest row
 *   in R2, against the same records kept local (`tiered_fetch_local_records_per_s`; `tiered_fetch_ratio`).
 *
 * Medians of BENCH_CONNECTORS_ROUNDS (3) rounds (the sink: BENCH_SINK_ROUNDS, 7). BENCH_CONNECTORS_RECORDS (3,000 messages per
 * source round and sink round), BENCH_TIERED_RECORDS (100,000), BENCH_QUEUE_PARTITIONS (1: the
 * source topic's partitions; the baseline has one table) tune it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { call } from "../lib/client.mjs";
import { envInt, median, note } from "../lib/stats.mjs";

export const name = "connectors";

const CONSUME_TIMEOUT_MS = 300_000;

async function get(baseUrl, path) {
  return (await call(baseUrl, "GET", path)).body;
}

export async function run({ baseUrl }) {
  const records = envInt("BENCH_CONNECTORS_RECORDS", 3_000);
  const tieredRecords = envInt("BENCH_TIERED_RECORDS", 100_000);
  const rounds = envInt("BENCH_CONNECTORS_ROUNDS", 3);
  const sinkRounds = envInt("BENCH_SINK_ROUNDS", 7);
  const partitions = envInt("BENCH_QUEUE_PARTITIONS", 1);

  // Source: rounds of `records` messages to both queues; the counters are cumulative.
  const source = { log: [], plain: [] };
  let before = { log: { records: 0, ms: 0 }, plain: { records: 0, ms: 0 }, logRowsWritten: 0, plainRowsWritten: 0 };
  const rows = { log: 0, plain: 0, records: 0 };
  for (let round = 0; round <= rounds; round++) {
    await get(baseUrl, `/bench/queue-source/send?records=${records}&from=${round * records}&partitions=${partitions}`);
    const deadline = Date.now() + CONSUME_TIMEOUT_MS;
    let stats;
    for (;;) {
      stats = await get(baseUrl, "/bench/queue-source/stats");
      const want = (round + 1) * records;
      if ((stats.log?.records ?? 0) >= want && (stats.plain?.records ?? 0) >= want) break;
      if (Date.now() > deadline) throw new Error(`queues not consumed: ${JSON.stringify(stats)}`);
      await sleep(200);
    }
    if (round > 0) {
      // Round 0 warms up (objects created, migrations).
      for (const k of ["log", "plain"]) source[k].push((stats[k].records - before[k].records) / ((stats[k].ms - before[k].ms) / 1000));
      rows.log += stats.logRowsWritten - before.logRowsWritten;
      rows.plain += stats.plainRowsWritten - before.plainRowsWritten;
      rows.records += records;
      note(`connectors: source round ${round}: log ${Math.round(source.log.at(-1))}/s, plain ${Math.round(source.plain.at(-1))}/s`);
    }
    before = stats;
  }

  const sink = { log: [], plain: [] };
  const sinkRefused = { log: 0, plain: 0 };
  const sinkRatios = [];
  for (let round = 0; round <= sinkRounds; round++) {
    const order = round % 2 === 0 ? "log,plain" : "plain,log";
    const r = await get(baseUrl, `/bench/queue-sink?records=${records}&run=${round}&order=${order}`);
    for (const k of ["log", "plain"]) {
      if (r[k].records !== records) throw new Error(`queue sink ${k} delivered ${r[k].records}, expected ${records}`);
      if (round > 0) sink[k].push(records / (r[k].ms / 1000));
    }
    for (const k of ["log", "plain"]) sinkRefused[k] += round > 0 ? r[k].failures : 0;
    if (round > 0) sinkRatios.push(sink.log.at(-1) / sink.plain.at(-1));
    if (round > 0) {
      const refusals = (k) => `${r[k].failures} refused${r[k].errors.length ? `: ${[...new Set(r[k].errors)].join("; ")}` : ""}`;
      note(
        `connectors: sink round ${round}: log ${Math.round(sink.log.at(-1))}/s (${refusals("log")}; drained in ${r.log.drainMs} ms), plain ${Math.round(sink.plain.at(-1))}/s (${refusals("plain")}; drained in ${r.plain.drainMs} ms)`,
      );
    }
  }

  const tiered = { tiered: [], local: [] };
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 0 ? "tiered,local" : "local,tiered";
    const r = await get(baseUrl, `/bench/tiered-fetch?records=${tieredRecords}&run=${round}&order=${order}`);
    for (const k of ["tiered", "local"]) {
      if (r[k].records !== tieredRecords) throw new Error(`tiered fetch ${k} read ${r[k].records}, expected ${tieredRecords}`);
      tiered[k].push(tieredRecords / (r[k].ms / 1000));
    }
    note(
      `connectors: tiered round ${round} (${JSON.stringify(r.filled)}): R2 ${Math.round(tiered.tiered.at(-1))}/s, local ${Math.round(tiered.local.at(-1))}/s`,
    );
  }

  const m = (xs) => Math.round(median(xs));
  const out = {
    queue_source_records_per_s: m(source.log),
    queue_source_baseline_records_per_s: m(source.plain),
    queue_source_rows_written_per_record: Number((rows.log / rows.records).toFixed(4)),
    queue_source_baseline_rows_written_per_record: Number((rows.plain / rows.records).toFixed(4)),
    queue_sink_records_per_s: m(sink.log),
    queue_sink_baseline_records_per_s: m(sink.plain),
    queue_sink_refused_batches: sinkRefused.log,
    queue_sink_baseline_refused_batches: sinkRefused.plain,
    tiered_fetch_records_per_s: m(tiered.tiered),
    tiered_fetch_local_records_per_s: m(tiered.local),
    connectors_records_per_round: records,
    connectors_rounds: rounds,
    queue_sink_rounds: sinkRounds,
  };
  out.queue_source_ratio = Number((out.queue_source_records_per_s / out.queue_source_baseline_records_per_s).toFixed(3));
  // The median of each round's ratio: both sides of a round ran under the same load (the machine is shared).
  out.queue_sink_ratio = Number(median(sinkRatios).toFixed(3));
  out.tiered_fetch_ratio = Number((out.tiered_fetch_records_per_s / out.tiered_fetch_local_records_per_s).toFixed(3));
  return out;
}
