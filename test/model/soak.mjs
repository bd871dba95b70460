/**
 * `npm run soak`: the model-based randomized test (test/model.test.ts) over many seeds and longer
 * schedules, run as consecutive vitest processes of SOAK_CHUNK seeds each (test/model/soak.config.ts).
 * One long-lived workerd gets slower as a run goes on (every call costs more after thousands of
 * Durable Object resets), so a fresh one per chunk keeps each seed's cost flat.
 *
 *   SOAK_SEEDS (default 200)  SOAK_OPS (default 60)  SOAK_FIRST_SEED (default 1001)  SOAK_CHUNK (default 20)
 */
import { spawnSync } from "node:child_process";

function count(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

const seeds = count("SOAK_SEEDS", 200);
const ops = count("SOAK_OPS", 60);
const first = count("SOAK_FIRST_SEED", 1001);
const chunk = count("SOAK_CHUNK", 20);

const started = Date.now();
const failed = [];
for (let from = first; from < first + seeds; from += chunk) {
  const n = Math.min(chunk, first + seeds - from);
  console.log(`soak: seeds ${from}..${from + n - 1} × ${ops} operations`);
  const run = spawnSync("node_modules/.bin/vitest", ["run", "-c", "test/model/soak.config.ts", "--silent=passed-only"], {
    stdio: "inherit",
    env: { ...process.env, SOAK_FIRST_SEED: String(from), SOAK_SEEDS: String(n), SOAK_OPS: String(ops) },
  });
  if (run.status !== 0) failed.push(`${from}..${from + n - 1}`);
}
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`soak: ${seeds} seeds × ${ops} operations in ${seconds} s: ${failed.length === 0 ? "all passed" : `failures in seeds ${failed.join(", ")}`}`);
process.exit(failed.length === 0 ? 0 : 1);
