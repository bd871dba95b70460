/**
 * One vitest run of the model-based randomized test (test/model.test.ts) with a chosen set of
 * seeds: the `workers` project of vitest.config.ts, limited to that file and told its size
 * through vitest's provide/inject. `npm run soak` (test/model/soak.mjs) runs it chunk by chunk.
 *   SOAK_SEEDS (default 20), SOAK_OPS (default 60), SOAK_FIRST_SEED (default 1001).
 * One seed alone: SOAK_FIRST_SEED=1234 SOAK_SEEDS=1 npx vitest run -c test/model/soak.config.ts
 */
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import base from "../../vitest.config";

// Read in Node by vitest (the project's types are the Workers' only).
declare const process: { readonly env: Record<string, string | undefined> };

function count(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

const soak = { seeds: count("SOAK_SEEDS", 20), ops: count("SOAK_OPS", 60), firstSeed: count("SOAK_FIRST_SEED", 1001) };
const workers = (base.test?.projects ?? []).find(
  (p): p is TestProjectInlineConfiguration => typeof p === "object" && "test" in p && p.test?.name === "workers",
);
if (!workers) throw new Error("vitest.config.ts has no workers project");

export default defineConfig({
  test: {
    onUnhandledError: base.test?.onUnhandledError,
    projects: [{ ...workers, test: { ...workers.test, name: "soak", include: ["test/model.test.ts"], provide: { soak } } }],
  },
});
