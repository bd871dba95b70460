/**
 * `npm run bench`: starts the bench Worker (bench/worker.ts) in workerd with `wrangler dev`, runs
 * every scenario under bench/scenarios/ in turn, stops the Worker, and prints one JSON object as
 * the last line of stdout: the merged key → number maps of the scenarios. Progress goes to stderr.
 *
 * A scenario is a module exporting `name` and `run({ baseUrl })`, resolving to a flat object of
 * numbers whose keys no other scenario uses. Add new ones to SCENARIOS; routes they need go in
 * bench/worker.ts. Knobs are environment variables, documented in each scenario.
 *
 *   npm run bench                      # default run
 *   BENCH_VARIANTS=1 npm run bench     # also the multi-row INSERT variants
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startBenchWorker } from "./lib/server.mjs";
import { note } from "./lib/stats.mjs";

const SCENARIOS = ["./scenarios/log-append.mjs"];

const root = dirname(dirname(fileURLToPath(import.meta.url)));

async function main() {
  const started = performance.now();
  const modules = await Promise.all(SCENARIOS.map((path) => import(path)));
  note("starting wrangler dev …");
  const worker = await startBenchWorker({ root });
  const stopOnSignal = (signal) => {
    note(`${signal}: stopping wrangler dev`);
    worker.stop().finally(() => process.exit(130));
  };
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);

  const result = {};
  try {
    for (const scenario of modules) {
      note(`scenario ${scenario.name}`);
      const values = await scenario.run({ baseUrl: worker.baseUrl });
      for (const [key, value] of Object.entries(values)) {
        if (key in result) throw new Error(`scenario ${scenario.name} repeats the key ${key}`);
        if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`scenario ${scenario.name}: ${key} is not a finite number`);
        result[key] = value;
      }
    }
  } catch (error) {
    note(`wrangler output (tail):\n${worker.output().slice(-4000)}`);
    throw error;
  } finally {
    await worker.stop();
  }
  note(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  process.stderr.write(`[bench] failed: ${error?.stack ?? error}\n`);
  process.exitCode = 1;
});
