/**
 * `node bench/prototype/compare.mjs`: the process scenario's workload against several builds of
 * the example application at once — the real one (root wrangler.toml) and the prototype build
 * (bench/prototype) with chosen `PROTO` flag sets — and the hand-written baseline, round by round
 * in rotating order so that machine drift hits them alike. Prints per variant the median rate,
 * its ratio to the baseline, and (prototype builds) commits, records per commit and log calls.
 *
 * COMPARE_VARIANTS: `;`-separated flag sets, `app` for the real build, `proto:` prefix optional
 *   (default: "app;proto:;proto:cache;proto:cache,outbox,digest;proto:cache,outbox,digest,coalesce;proto:cache,outbox,digest,coalesce,coalesce-out")
 * COMPARE_RECORDS (50000), COMPARE_ROUNDS (3), COMPARE_CUSTOMERS (1000), COMPARE_BATCH (1000).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call } from "../lib/client.mjs";
import { startAppWorker, startBenchWorker, stopAll } from "../lib/server.mjs";
import { envInt, median, note } from "../lib/stats.mjs";
import { runApp, runBaseline, workload } from "../scenarios/process.mjs";

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const DEFAULT_VARIANTS = "app;proto:;proto:cache;proto:cache,outbox,digest;proto:cache,outbox,digest,coalesce;proto:cache,outbox,digest,coalesce,coalesce-out";

async function main() {
  const records = envInt("COMPARE_RECORDS", 50_000);
  const rounds = envInt("COMPARE_ROUNDS", 3);
  const customers = envInt("COMPARE_CUSTOMERS", 1000);
  const batch = envInt("COMPARE_BATCH", 1000);
  const specs = (process.env.COMPARE_VARIANTS ?? DEFAULT_VARIANTS).split(";").map((v) => v.trim()).filter((v) => v !== "" || true);

  try {
    const bench = await startBenchWorker({ root });
    const keysOf = async (prefix, count) => (await call(bench.baseUrl, "GET", `/bench/keys?partitions=4&partition=0&count=${count}&prefix=${prefix}`)).body.keys;
    const keys = await keysOf("customer-", customers);
    const work = workload(keys, records, batch);
    const warmKeys = await keysOf("warm-", 100);
    const warm = workload(warmKeys, 5 * batch, batch);

    const variants = [];
    for (const spec of specs) {
      const proto = spec !== "app";
      const flags = proto ? spec.replace(/^proto:/, "") : "";
      note(`starting ${spec} …`);
      const app = await startAppWorker({
        root,
        ...(proto ? { config: join(root, "bench", "prototype", "wrangler.toml"), vars: { PROTO: flags || "none" } } : {}),
      });
      await runApp(app, warm, warmKeys[0]);
      variants.push({ spec, proto, app, rates: [], stats: undefined });
    }
    await runBaseline(bench.baseUrl, "warm", warm, warmKeys[0]);
    const baseline = { spec: "baseline", rates: [] };

    const all = [baseline, ...variants];
    for (let round = 1; round <= rounds; round++) {
      for (let k = 0; k < all.length; k++) {
        const v = all[(round + k) % all.length];
        if (v === baseline) {
          const b = await runBaseline(bench.baseUrl, `r${round}`, work, keys[0]);
          v.rates.push(records / (b.ms / 1000));
        } else {
          const a = await runApp(v.app, work, keys[0]);
          v.rates.push(records / (a.ms / 1000));
        }
        note(`round ${round} ${v.spec.padEnd(52)} ${Math.round(v.rates.at(-1)).toString().padStart(7)}/s`);
      }
    }
    for (const v of variants) if (v.proto) v.stats = (await call(v.app.baseUrl, "GET", "/proto/stats?task=0_0")).body;

    const base = median(baseline.rates);
    console.log(`\n${"variant".padEnd(54)} ${"rec/s".padStart(7)} ${"ratio".padStart(6)}   per commit (timed + warm-up, this instance)`);
    console.log(`${"baseline".padEnd(54)} ${Math.round(base).toString().padStart(7)}  1.000`);
    for (const v of variants) {
      const rate = median(v.rates);
      const s = v.stats;
      const detail = s ? `${s.commits} commits, ${(s.records / s.commits).toFixed(0)} rec/commit, ${s.fetches} fetches, ${s.appends} appends, ${s.commitOffsets} offset commits` : "";
      console.log(`${v.spec.padEnd(54)} ${Math.round(rate).toString().padStart(7)} ${(rate / base).toFixed(3).padStart(6)}   ${detail}`);
    }
  } finally {
    await stopAll();
  }
}

main().catch(async (error) => {
  process.stderr.write(`[compare] failed: ${error?.stack ?? error}\n`);
  await stopAll();
  process.exitCode = 1;
});
