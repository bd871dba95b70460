/**
 * `node bench/task-path.mjs`: bundles bench/task-path.ts with esbuild and runs it in this Node
 * (TASK_PATH_RECORDS, 40000; TASK_PATH_ROUNDS, 8). TASK_PATH_HEAP=file.json samples every
 * allocation of the rounds (V8's sampling heap profile, the collected objects included). See that file.
 */
import { build } from "esbuild";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dir = await mkdtemp(join(tmpdir(), "task-path-"));
try {
  const outfile = join(dir, "task-path.mjs");
  await build({ entryPoints: [join(root, "bench", "task-path.ts")], bundle: true, platform: "node", format: "esm", outfile, logLevel: "warning" });
  const { run } = await import(pathToFileURL(outfile).href);
  const heap = process.env.TASK_PATH_HEAP;
  const session = heap ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  const { min, median } = run(Number(process.env.TASK_PATH_RECORDS ?? 40_000), 125, 500, Number(process.env.TASK_PATH_ROUNDS ?? 12));
  console.log(`after the warm-up: ${min.toFixed(0)} ns per record at best, ${median.toFixed(0)} median`);
  if (session) {
    const { profile } = await session.post("HeapProfiler.stopSampling");
    await writeFile(heap, JSON.stringify(profile));
    session.disconnect();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
