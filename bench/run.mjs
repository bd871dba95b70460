/**
 * `npm run bench`: starts the bench Worker (bench/worker.ts) in workerd with `wrangler dev`, runs
 * every scenario under bench/scenarios/ in turn, stops the Worker(s), and prints one JSON object as
 * the last line of stdout: the merged key → number maps of the scenarios. Progress goes to stderr.
 *
 * A scenario is a module exporting `name` and `run({ baseUrl, app })`, resolving to a flat object
 * of numbers whose keys no other scenario uses. `baseUrl` is the bench Worker; `app()` starts the
 * example application (root wrangler.toml) in a second `wrangler dev` on first use and resolves to
 * `{ baseUrl, token }` — the same instance for every scenario, stopped at the end; `cachedApp()`
 * likewise starts the example topology with its store cached (bench/cached-app/). Add scenarios to
 * SCENARIOS; routes they need go in bench/worker.ts. Knobs are environment variables, documented
 * in each scenario; BENCH_ONLY=name,… runs only the named scenarios.
 *
 * Scenarios: log-append (the log vs plain SQLite inserts), process (the example topology's
 * throughput on one task, record cache on and off, vs a hand-written Durable Object), e2e (ingest-to-query latency), e2e-load
 * (the same latency while a second client ingests 5,000 orders/s into the app over all four
 * partitions: e2e_p99_under_load_ms, with the loader's offered and accepted rates), push (live
 * subscriptions: ingest-to-event latency at a WebSocket held by the key's subscription hub and at
 * an `edge-streams/client` server-sent event watch, idle and beside the same loader, against the
 * e2e poll in the same run; 1,000 sockets on one key held by the hub, a change at a time and the
 * fan-out of 500 changes to them, each counted per socket, and workerd's memory meanwhile), restore (a wiped
 * task restoring 200,000 changelog records vs plain SQLite inserts), restore-e2e (the app with its
 * default configuration: a task of 13,000 live keys corrupted until GET /tasks shows it RUNNING
 * with lag 0, median of 5, vs inserting 13,000 records into SQLite: restore_e2e_default_ratio),
 * compaction (compaction's
 * throughput, and the records a wiped task replays per live key from a compacted changelog), scale
 * (the example with 256 partitions and a standby each in its own `wrangler dev`, and again with 64:
 * ingest, views, coordinator calls, SQLite rows by table, Durable Object requests and dollars per
 * record, billed storage; the pure reconcile step), cost-load (the example with a standby under
 * 5,000 orders/s for 30 s: rows, requests and dollars per record, then two idle minutes'
 * wake-ups), http (the example through HTTP only beside a hand-written Durable Object: processing,
 * one order to its visible total, a restore bounded by live keys), connectors (on miniflare's
 * local Queues and R2, bench/connectors.ts: the Queue source and sink against a hand-written
 * consumer and producer, rows written per message through the source, a fetch from R2 against a
 * local one). Prices: bench/lib/prices.mjs.
 * A tool beside it, not run by `npm run bench`: bench/profile.mjs (a CPU profile of the app under
 * the process workload, by component).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ingestLinger, startAppWorker, startBenchWorker, stopAll } from "./lib/server.mjs";
import { note } from "./lib/stats.mjs";

const SCENARIOS = [
  "./scenarios/log-append.mjs",
  "./scenarios/process.mjs",
  "./scenarios/e2e.mjs",
  "./scenarios/e2e-load.mjs",
  "./scenarios/push.mjs",
  "./scenarios/restore.mjs",
  "./scenarios/restore-e2e.mjs",
  "./scenarios/compaction.mjs",
  "./scenarios/scale.mjs",
  "./scenarios/cost-load.mjs",
  "./scenarios/http.mjs",
  "./scenarios/connectors.mjs",
];

const root = dirname(dirname(fileURLToPath(import.meta.url)));

async function main() {
  const started = performance.now();
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",")) : undefined;
  const modules = (await Promise.all(SCENARIOS.map((path) => import(path)))).filter((m) => !only || only.has(m.name));
  if (modules.length === 0) throw new Error(`BENCH_ONLY names no scenario`);
  note("starting wrangler dev …");
  const worker = await startBenchWorker({ root });
  const stopOnSignal = (signal) => {
    note(`${signal}: stopping wrangler dev`);
    stopAll().finally(() => process.exit(130));
  };
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);

  let appWorker;
  const app = () =>
    (appWorker ??= (async () => {
      note("starting the example app with wrangler dev …");
      const started = await startAppWorker({ root, vars: ingestLinger() });
      note(`app ready at ${started.baseUrl}`);
      return started;
    })());

  let cachedWorker;
  const cachedApp = () =>
    (cachedWorker ??= (async () => {
      note("starting the example topology with caching on (bench/cached-app) with wrangler dev …");
      const started = await startAppWorker({ root, config: join(root, "bench", "cached-app", "wrangler.toml") });
      note(`cached app ready at ${started.baseUrl}`);
      return started;
    })());

  const result = {};
  try {
    for (const scenario of modules) {
      note(`scenario ${scenario.name}`);
      const scenarioStarted = performance.now();
      const values = await scenario.run({ baseUrl: worker.baseUrl, app, cachedApp });
      note(`scenario ${scenario.name} done in ${((performance.now() - scenarioStarted) / 1000).toFixed(1)} s`);
      for (const [key, value] of Object.entries(values)) {
        if (key in result) throw new Error(`scenario ${scenario.name} repeats the key ${key}`);
        if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`scenario ${scenario.name}: ${key} is not a finite number`);
        result[key] = value;
      }
    }
  } catch (error) {
    note(`bench wrangler output (tail):\n${worker.output().slice(-4000)}`);
    const started = await appWorker?.catch(() => undefined);
    if (started) note(`app wrangler output (tail):\n${started.output().slice(-4000)}`);
    throw error;
  } finally {
    await stopAll();
  }
  note(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  process.stderr.write(`[bench] failed: ${error?.stack ?? error}\n`);
  process.exitCode = 1;
});
