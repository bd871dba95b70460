/**
 * The second half of the model-based randomized test's CI seeds (test/model.test.ts runs the
 * first): a file of its own so the two halves run at once. Not part of `npm run soak`.
 */
import { describe, it } from "vitest";
import { generateSchedule } from "./model/schedule";
import { CI_SEEDS, FIRST_SEED, OPS, runSchedule, soak } from "./model/run";

const first = Math.ceil(CI_SEEDS / 2);

describe.skipIf(soak !== undefined)(`model-based randomized schedules, seeds ${first + 1}–${CI_SEEDS} × ${OPS} operations`, () => {
  const seeds = Array.from({ length: CI_SEEDS - first }, (_, i) => FIRST_SEED + first + i);
  it.each(seeds)("seed %i", (seed) => runSchedule(`s${seed}`, generateSchedule(seed, OPS)), 120_000);
});
