/**
 * Model-based randomized test (the machinery and what it checks: test/model/run.ts): seeded
 * schedules of produces, corruptions, crashes, migrations, log failures, restore pauses and
 * cluster restarts against the real Durable Objects, I1 and I5 checked after every operation and
 * exact totals at the end. In CI this file runs the first half of the seeds and the minimal
 * schedules, test/model-more-seeds.test.ts the second half (two files run at once); under `npm run
 * soak` (test/model/soak.config.ts) this file runs every seed it is given.
 */
import { describe, it } from "vitest";
import { generateSchedule, type PlannedOrder } from "./model/schedule";
import { CI_SEEDS, FIRST_SEED, OPS, runSchedule, SEEDS, soak } from "./model/run";

const count = soak ? SEEDS : Math.ceil(CI_SEEDS / 2);

describe(`model-based randomized schedules (${count} of ${SEEDS} seeds × ${OPS} operations)`, () => {
  const seeds = Array.from({ length: count }, (_, i) => FIRST_SEED + i);
  it.each(seeds)("seed %i", (seed) => runSchedule(`s${seed}`, generateSchedule(seed, OPS)), 120_000);
});

/** Schedules the randomized runs failed on, minimised: each once broke an invariant. */
describe.skipIf(soak !== undefined)("minimal schedules found by the randomized runs", () => {
  const order = (key: number, amount: number): PlannedOrder => ({ key, amount });
  it(
    "a crash mid-send, then corruption: the commit's output still follows its changelog",
    () =>
      runSchedule("min-midsend", [
        { kind: "crash-at", task: 1, step: "mid-send", orders: [order(1, 30)] },
        { kind: "corrupt", task: 1 },
      ]),
    30_000,
  );
  it(
    "a revocation whose reply fails: the coordinator does not keep an active that suspended",
    () =>
      runSchedule("min-revoke", [
        { kind: "log-fail", log: "changelog", partition: 0, times: 1 },
        { kind: "migrate", task: 0 },
      ]),
    30_000,
  );
});
