/**
 * `node bench/profile.mjs`: a CPU profile of the example application
 * while it ingests and processes the process scenario's workload (orders on partition 0, batches
 * of 1000). Starts the bench Worker (for the keys) and the app with `--inspector-port`, warms the
 * app up, then records a V8 CPU profile of the app's isolate (the Worker and every Durable Object
 * of the app run in it) over the timed part, and prints where the time went: self time per
 * function, inclusive time of chosen functions, and idle time. Not part of `npm run bench`.
 *
 * PROFILE_RECORDS (50000), PROFILE_BATCH (1000), PROFILE_OUT (write the .cpuprofile there, to
 * open in Chrome DevTools), PROFILE_CACHED=1 (profile bench/cached-app, the store behind the record
 * cache) tune it. PROFILE_LOAD_RATE=5000 profiles the e2e-load scenario's load instead (its loader:
 * that many orders/s in batches of 100 over all four partitions, for PROFILE_LOAD_SECONDS, 10);
 * PROFILE_HEAP=file.json also samples the heap over the same span (what is still live at its end,
 * after a collection, by allocating stack; V8's sampling heap profile format; PROFILE_HEAP_ALL=1 counts
 * every allocation, the collected ones too). PROFILE_CUSTOMERS=2000
 * PROFILE_CONCURRENCY=4 profile the http scenario's processing shape instead: that many customers
 * over every partition, that many requests at a time (PROFILE_READS=2000 then profiles that many point
 * reads of one of their keys instead). PROFILE_RESTORE_KEYS=13000 profiles the http
 * scenario's restore instead: per round a task of its own (0_1, 0_2, 0_3; PROFILE_RESTORE_ROUNDS, 3)
 * gets PROFILE_RECORDS orders over that many customers of its partition, and the profile covers
 * only the corruption of each until `GET /tasks` shows it RUNNING with lag 0. PROFILE_E2E=200
 * profiles the http scenario's one-order shape instead: that many orders one at a time over 10
 * customers, each read back (`GET /stores/totals/keys/:key`) until it shows (figures per order).
 * PROFILE_SOURCE=prefix writes each profiled script's source to `prefix.<scriptId>.js`, to read a
 * profile's line numbers against the bundle.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws"; // a dependency of wrangler; Node 20 has no WebSocket client of its own
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { activeTask, corruptAndRestore } from "./lib/app.mjs";
import { call } from "./lib/client.mjs";
import { freePort, startAppWorker, startBenchWorker, stopAll } from "./lib/server.mjs";
import { envInt, note, percentile, waitFor } from "./lib/stats.mjs";
import { loaderKeys, startLoader } from "./scenarios/e2e-load.mjs";

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * CPU time (user + system, ms) the app's workerd has used so far: every process of wrangler's
 * process group (`pgid`) named workerd, from /proc (Linux; undefined elsewhere). Unlike the
 * profile's sampled time, which counts a thread the machine did not run as busy, it counts only
 * the CPU the app got: the figure to compare on a loaded machine.
 */
async function workerdCpuMs(pgid) {
  try {
    let ticks = 0;
    for (const pid of await readdir("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // Fields after the name: state, ppid, pgrp, …; utime and stime are the 14th and 15th of the line.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (!name.startsWith("workerd") || Number(fields[2]) !== pgid) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return (ticks * 1000) / 100; // USER_HZ: 100 on Linux
  } catch {
    return undefined;
  }
}

/** Commits of input so far over every task instance (`task_commit_latency_seconds_count` of GET /metrics). */
async function commitCount(app) {
  const response = await fetch(`${app.baseUrl}/metrics`, { headers: { Authorization: `Bearer ${app.token}` } });
  let count = 0;
  for (const line of (await response.text()).split("\n")) {
    if (/^[a-z_]*task_commit_latency_seconds_count\{/.test(line)) count += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return count;
}

async function inspector(port) {
  const targets = await waitFor(
    "the inspector's targets",
    async () => {
      try {
        const list = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
        return list.length ? list : undefined;
      } catch {
        return undefined;
      }
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  note(`inspector targets: ${targets.map((t) => `${t.title ?? t.id} ${t.webSocketDebuggerUrl}`).join(", ")}`);
  // The inspector proxy of wrangler dev wants an Origin it knows (localhost).
  const socket = new WebSocket(targets[0].webSocketDebuggerUrl, { headers: { Origin: "http://localhost" }, maxPayload: 1 << 30 });
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = (event) => reject(event.error ?? new Error(String(event.message)));
  });
  let id = 0;
  const pending = new Map();
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.id && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(JSON.stringify(message.error)));
      else resolve(message.result);
    }
  };
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const n = ++id;
      pending.set(n, { resolve, reject });
      socket.send(JSON.stringify({ id: n, method, params }));
    });
  return { send, close: () => socket.close() };
}

/**
 * For each script of the profile, a function from a 0-based line to the bundled module it is in
 * (esbuild marks each module with a `// path` comment line) — so labels name source files.
 */
async function moduleMaps(devtools, profile) {
  const ids = new Set(profile.nodes.map((n) => n.callFrame.scriptId).filter((id) => id && id !== "0"));
  await devtools.send("Debugger.enable");
  const maps = new Map();
  for (const scriptId of ids) {
    try {
      const { scriptSource } = await devtools.send("Debugger.getScriptSource", { scriptId });
      if (process.env.PROFILE_SOURCE) await writeFile(`${process.env.PROFILE_SOURCE}.${scriptId}.js`, scriptSource);
      const lines = scriptSource.split("\n");
      const starts = [];
      lines.forEach((line, i) => {
        const m = /^\/\/ ((?:\.\.\/)*[\w@./-]+\.(?:ts|js|mjs))$/.exec(line);
        if (m) starts.push([i, m[1].replace(/^(\.\.\/)+/, "")]);
      });
      maps.set(scriptId, (line) => {
        let found = "";
        for (const [start, path] of starts) {
          if (start > line) break;
          found = path;
        }
        return found ? `${found} "${(lines[line] ?? "").trim().slice(0, 60)}"` : "";
      });
    } catch {
      // a script without source: keep the bundle's line number
    }
  }
  await devtools.send("Debugger.disable");
  return maps;
}

/** Components of the pipeline: inclusive time of any frame matching (a sample counts once per component). */
const COMPONENTS = [
  ["ingest route (Hono, validation, partitioning; not the append)", /^\(anonymous\) workers\/api\/routes\/ingest\.ts|^#dispatch node_modules\/hono/],
  ["log appends at the partitions (input, changelog, output)", /^append(Encoded)? (durable-objects\/)?log-partition\.ts/],
  ["  of which parse + check", /^parseEntries /],
  ["task fetch (read at the partition, decode at the task)", /^read(Encoded)? (durable-objects\/)?log-partition\.ts|^decodeBatches /],
  ["processing (per-record process())", /^process src\/streams\/runtime\/task-processor\.ts/],
  ["  store reads (cache, SQLite)", /^get(WithTimestamp)? (src\/task\/|)sqlite-stores\.ts/],
  ["  changelog and output records (collector)", /^send src\/task\/record-collector\.ts/],
  ["store writes at commit (multi-row upserts)", /^flushWrites /],
  ["outbox write at commit (encode + INSERT)", /^writeTo /],
  ["send outbox (encode, append RPCs)", /^flush src\/task\/outbox-sender\.ts/],
  ["acknowledgements recorded", /^writeAcks /],
  ["offset commits (task and partition)", /^commitInputOffsets |^commitOffset (durable-objects\/)?log-partition\.ts/],
  ["changelog compaction (partition alarm)", /^compact src\/log\/partition-store\.ts/],
  ["GET /tasks (describe)", /^describeTask /],
  ["SQL statements (all, self time)", /^exec $/],
  ["garbage collector", /^\(garbage collector\)/],
  ["idle", /^\(idle\)/],
];

/** Self and inclusive sample time per function of a V8 CPU profile. */
function summarize(profile, maps = new Map()) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map(); // node id → µs
  profile.samples.forEach((sample, i) => self.set(sample, (self.get(sample) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const label = (n) => {
    const f = n.callFrame;
    const where = maps.get(f.scriptId)?.(f.lineNumber) || (f.url ? `${f.url.split("/").slice(-1)[0]}:${f.lineNumber + 1}` : "");
    return `${f.functionName || "(anonymous)"} ${where}`;
  };
  const selfBy = new Map();
  const inclusiveBy = new Map();
  const componentBy = new Map(COMPONENTS.map(([name]) => [name, 0]));
  let total = 0;
  for (const [nodeId, us] of self) {
    total += us;
    const node = byId.get(nodeId);
    const stack = [];
    for (let id = nodeId; id !== undefined; id = parent.get(id)) stack.push(label(byId.get(id)));
    for (const [name, pattern] of COMPONENTS) if (stack.some((l) => pattern.test(l))) componentBy.set(name, componentBy.get(name) + us);
    selfBy.set(label(node), (selfBy.get(label(node)) ?? 0) + us);
    // inclusive: once per distinct function on the stack
    const seen = new Set();
    for (let id = nodeId; id !== undefined; id = parent.get(id)) {
      const l = label(byId.get(id));
      if (seen.has(l)) continue;
      seen.add(l);
      inclusiveBy.set(l, (inclusiveBy.get(l) ?? 0) + us);
    }
  }
  return { total, selfBy, inclusiveBy, componentBy };
}

/** The http scenario's restore, profiled: only from each corruption until RUNNING with lag 0 (see the header). */
async function profileRestore(bench, app, devtools, { records, keys, rounds }) {
  const tasks = [];
  for (let round = 1; round <= rounds; round++) {
    const customers = (await call(bench.baseUrl, "GET", `/bench/keys?partitions=4&partition=${round}&count=${keys}&prefix=pr-`)).body.keys;
    for (let start = 0; start < records; start += 1000) {
      const batch = [];
      for (let n = start; n < Math.min(records, start + 1000); n++) batch.push({ key: customers[n % keys], value: { amount: 1 + (n % 97) } });
      await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: { records: batch } });
    }
    tasks.push(`0_${round}`);
  }
  for (const taskId of tasks)
    await waitFor(
      `${taskId} to process its orders`,
      async () => {
        const t = await activeTask(app, taskId);
        return t.state === "RUNNING" && t.lag === 0 && t.pendingBatches === 0 ? t : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 100 },
    );
  await devtools.send("Profiler.enable");
  await devtools.send("Profiler.setSamplingInterval", { interval: 100 });
  await devtools.send("Profiler.start");
  let wall = 0;
  for (const taskId of tasks) {
    const { ms } = await corruptAndRestore(app, taskId, (t) => t.lag === 0, { what: `${taskId} to restore`, timeoutMs: 120_000, intervalMs: 5 });
    note(`restore of ${taskId}: RUNNING with lag 0 in ${ms.toFixed(0)} ms`);
    wall += ms;
  }
  const { profile } = await devtools.send("Profiler.stop");
  return { profile, wall };
}

async function main() {
  let records = envInt("PROFILE_RECORDS", 50_000);
  const loadRate = envInt("PROFILE_LOAD_RATE", 0);
  const loadSeconds = envInt("PROFILE_LOAD_SECONDS", 10);
  const batch = envInt("PROFILE_BATCH", 1000);
  const customers = envInt("PROFILE_CUSTOMERS", 0);
  const concurrency = envInt("PROFILE_CONCURRENCY", 1);
  const e2e = envInt("PROFILE_E2E", 0);
  const reads = envInt("PROFILE_READS", 0);
  const bench = await startBenchWorker({ root });
  const inspectorPort = await freePort();
  // PROFILE_CACHED=1: the example topology with its store cached (bench/cached-app), as the bench's cached run.
  const config = process.env.PROFILE_CACHED === "1" ? join(root, "bench", "cached-app", "wrangler.toml") : undefined;
  const restoreKeys = envInt("PROFILE_RESTORE_KEYS", 0);
  const app = await startAppWorker({ root, inspectorPort, config, ...(restoreKeys > 0 && { vars: { FAULT_INJECTION: "on" } }) });
  try {
    if (restoreKeys > 0) {
      const devtools = await inspector(inspectorPort);
      const rounds = envInt("PROFILE_RESTORE_ROUNDS", 3);
      const { profile, wall } = await profileRestore(bench, app, devtools, { records, keys: restoreKeys, rounds });
      const maps = await moduleMaps(devtools, profile);
      devtools.close();
      if (process.env.PROFILE_OUT) await writeFile(process.env.PROFILE_OUT, JSON.stringify(profile));
      const { total, selfBy, inclusiveBy } = summarize(profile, maps);
      const ms = (us) => (us / 1000).toFixed(1).padStart(7);
      const pct = (us) => ((100 * us) / total).toFixed(1).padStart(5);
      console.log(`profiled ${ms(total)} ms over ${rounds} restores (wall ${wall.toFixed(0)} ms)`);
      console.log("\n-- self time, top 50 --");
      for (const [l, us] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, 50)) console.log(`${ms(us)} ms ${pct(us)}%  ${l}`);
      console.log("\n-- inclusive time, top 100 --");
      for (const [l, us] of [...inclusiveBy].sort((a, b) => b[1] - a[1]).slice(0, 100)) console.log(`${ms(us)} ms ${pct(us)}%  ${l}`);
      return;
    }
    const keys =
      customers > 0
        ? Array.from({ length: customers }, (_, n) => `profile-${n}`)
        : (await call(bench.baseUrl, "GET", "/bench/keys?partitions=4&partition=0&count=1000&prefix=customer-")).body.keys;
    const bodies = [];
    for (let start = 0; start < records; start += batch) {
      const orders = [];
      for (let i = start; i < Math.min(records, start + batch); i++) orders.push({ key: keys[i % keys.length], value: { amount: 1 + (i % 97) } });
      bodies.push(JSON.stringify({ records: orders }));
    }
    const lagZero = () =>
      waitFor(
        "lag 0",
        async () => {
          const { body } = await call(app.baseUrl, "GET", "/tasks", { token: app.token });
          const active = body.tasks.filter((t) => t.role === "active");
          return active.length > 0 && active.every((t) => t.lag === 0) ? active : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 5 },
      );
    for (const body of bodies.slice(0, 5)) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body });
    await lagZero();

    const devtools = await inspector(inspectorPort);
    await devtools.send("Profiler.enable");
    await devtools.send("Profiler.setSamplingInterval", { interval: 200 });
    await devtools.send("Profiler.start");
    if (process.env.PROFILE_HEAP) {
      await devtools.send("HeapProfiler.enable");
      // PROFILE_HEAP_ALL=1: every allocation sampled, the ones collected since included.
      const all = process.env.PROFILE_HEAP_ALL === "1";
      await devtools.send("HeapProfiler.startSampling", {
        samplingInterval: 16_384,
        ...(all ? { includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } : {}),
      });
    }
    const commitsBefore = await commitCount(app);
    const cpuBefore = await workerdCpuMs(app.pid);
    const started = performance.now();
    if (loadRate > 0) {
      const loader = startLoader(app, await loaderKeys(bench.baseUrl), { rate: loadRate, batch: 100 });
      await sleep(loadSeconds * 1000); // the span of the load, not a wait for an outcome
      const load = await loader.stop();
      records = load.accepted;
      note(
        `load: ${load.accepted} orders accepted at ${loadRate}/s; ingest requests p50 ${percentile(load.requestMs, 50).toFixed(1)} ms, p99 ${percentile(load.requestMs, 99).toFixed(1)} ms`,
      );
    } else if (reads > 0) {
      // Point reads alone, of a key that exists (the e2e shape's GET without the order before it).
      for (let i = 0; i < reads; i++) await call(app.baseUrl, "GET", "/stores/totals/keys/profile-0", { token: app.token, expect: [200] });
      records = reads;
    } else if (e2e > 0) {
      const e2eKeys = Array.from({ length: 10 }, (_, n) => `profile-e2e-${Date.now()}-${n}`);
      const counts = new Map();
      for (let i = 0; i < e2e; i++) {
        const key = e2eKeys[i % e2eKeys.length];
        const want = (counts.get(key) ?? 0) + 1;
        counts.set(key, want);
        await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: JSON.stringify({ records: [{ key, value: { amount: 1 } }] }) });
        await waitFor(
          `${key} to reach ${want}`,
          async () => {
            const r = await call(app.baseUrl, "GET", `/stores/totals/keys/${key}`, { token: app.token, expect: [200, 404] });
            return r.status === 200 && r.body.value.count === want ? true : undefined;
          },
          { timeoutMs: 10_000, intervalMs: 0 },
        );
      }
      records = e2e;
    } else {
      let next = 0;
      const poster = async () => {
        while (next < bodies.length) await call(app.baseUrl, "POST", "/topics/orders/records", { token: app.token, body: bodies[next++] });
      };
      await Promise.all(Array.from({ length: concurrency }, poster));
    }
    const ingested = performance.now();
    await lagZero();
    const done = performance.now();
    const cpuAfter = await workerdCpuMs(app.pid);
    const { profile } = await devtools.send("Profiler.stop");
    const commitsAfter = await commitCount(app);
    if (process.env.PROFILE_HEAP) {
      await devtools.send("HeapProfiler.collectGarbage");
      const { profile: heap } = await devtools.send("HeapProfiler.getSamplingProfile");
      await writeFile(process.env.PROFILE_HEAP, JSON.stringify(heap));
      note(`heap after a collection: ${JSON.stringify(await devtools.send("Runtime.getHeapUsage"))}`);
    }
    const maps = await moduleMaps(devtools, profile);
    devtools.close();
    note(
      `${records} records: ingest ${(ingested - started).toFixed(0)} ms, lag 0 at ${(done - started).toFixed(0)} ms → ${Math.round(records / ((done - started) / 1000))}/s`,
    );
    if (process.env.PROFILE_OUT) await writeFile(process.env.PROFILE_OUT, JSON.stringify(profile));

    const { total, selfBy, inclusiveBy, componentBy } = summarize(profile, maps);
    const ms = (us) => (us / 1000).toFixed(0).padStart(6);
    const pct = (us) => ((100 * us) / total).toFixed(1).padStart(5);
    const perRecord = (us) => (us / records).toFixed(1).padStart(5);
    console.log(`profiled ${ms(total)} ms in total (wall ${(done - started).toFixed(0)} ms), ${(total / records).toFixed(1)} µs per record`);
    note(
      `commits of input: ${commitsAfter - commitsBefore} (active tasks, from GET /metrics), ${(records / (commitsAfter - commitsBefore)).toFixed(0)} orders each`,
    );
    if (cpuBefore !== undefined && cpuAfter !== undefined) {
      const cpu = cpuAfter - cpuBefore;
      console.log(`workerd CPU ${cpu.toFixed(0)} ms (all its threads, profiler included), ${((cpu * 1000) / records).toFixed(1)} µs per record`);
    }
    console.log("\n-- by component (inclusive) --");
    for (const [name, us] of componentBy) console.log(`${ms(us)} ms ${pct(us)}% ${perRecord(us)} µs/rec  ${name}`);
    console.log("\n-- self time, top 45 --");
    for (const [l, us] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(`${ms(us)} ms ${pct(us)}%  ${l}`);
    console.log("\n-- inclusive time, top 80 --");
    for (const [l, us] of [...inclusiveBy].sort((a, b) => b[1] - a[1]).slice(0, 80)) console.log(`${ms(us)} ms ${pct(us)}%  ${l}`);
  } finally {
    await stopAll();
  }
}

main().catch(async (error) => {
  process.stderr.write(`[profile] failed: ${error?.stack ?? error}\n`);
  await stopAll();
  process.exitCode = 1;
});
