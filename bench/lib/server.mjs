/**
 * Starts Workers with the real `wrangler dev` on a free local port and a fresh persistence
 * directory, and stops them again: the whole process group (wrangler, its esbuild and workerd
 * children), also when the bench fails or is interrupted (`stopAll`, and a last-resort kill when
 * the Node process exits).
 *
 *   startBenchWorker  the bench Worker (bench/wrangler.toml, bench/worker.ts)
 *   startAppWorker    the example application (the root wrangler.toml), with a known API token
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const READY_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 5_000;

/** Thrown by a readiness check when waiting longer cannot help. */
class NotUsable extends Error {}

/** Every Worker started and not yet stopped, so that `stopAll` can end them whatever happened. */
const running = new Set();

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * @param {{ root: string, config: string, script?: string, vars?: Record<string, string>, extraArgs?: string[], ready: (baseUrl: string) => Promise<boolean> }} options
 * @returns {Promise<{ baseUrl: string, output: () => string, stop: () => Promise<void>, persistDir: string, pid: number }>}
 * (`pid`: wrangler's, the leader of the process group that holds its workerd)
 */
async function startWrangler({ root, config, script, vars = {}, extraArgs = [], ready }) {
  const persistDir = await mkdtemp(join(tmpdir(), "edge-streams-bench-"));
  const port = await freePort();
  const wrangler = join(root, "node_modules", ".bin", "wrangler");
  const args = [
    "dev",
    ...(script ? [script] : []),
    "-c",
    config,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--persist-to",
    persistDir,
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ...extraArgs,
  ];
  const child = spawn(wrangler, args, {
    cwd: root,
    detached: true, // its own process group, so it can be stopped whole
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" },
  });
  let log = "";
  const keep = (chunk) => {
    log = (log + chunk).slice(-20_000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = null;
  const exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve((exited = { code, signal }))));

  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  // Last resort if this process ends without calling stop().
  const onExit = () => killGroup("SIGKILL");
  process.on("exit", onExit);

  let stopping;
  const stop = () =>
    (stopping ??= (async () => {
      killGroup("SIGTERM");
      await Promise.race([exit, sleep(STOP_GRACE_MS)]);
      killGroup("SIGKILL"); // workerd children may outlive wrangler's own exit
      await Promise.race([exit, sleep(STOP_GRACE_MS)]);
      process.off("exit", onExit);
      running.delete(stop);
      await rm(persistDir, { recursive: true, force: true });
    })());
  running.add(stop);

  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  try {
    for (;;) {
      if (exited) throw new Error(`wrangler dev exited (${JSON.stringify(exited)}) before it was ready`);
      try {
        if (await ready(baseUrl)) break;
      } catch (error) {
        if (error instanceof NotUsable) throw error;
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`wrangler dev was not ready within ${READY_TIMEOUT_MS / 1000}s`);
      await sleep(250);
    }
  } catch (error) {
    await stop();
    throw new Error(`${error.message}\n--- wrangler output ---\n${log}`);
  }
  return { baseUrl, output: () => log, stop, persistDir, pid: child.pid };
}

/** The bench Worker: the project's LogPartition and the baseline Durable Objects. */
export function startBenchWorker({ root }) {
  return startWrangler({
    root,
    config: join(root, "bench", "wrangler.toml"),
    ready: async (baseUrl) => {
      const response = await fetch(`${baseUrl}/bench/ping`);
      return response.ok && (await response.text()) === "ok";
    },
  });
}

/**
 * The example application (orders → totals) from the root wrangler.toml, with API_TOKEN `token`
 * (overriding .dev.vars). Ready once an authenticated route answers, so the token is in force.
 * `config` and `vars` start it from another configuration or with other variables; `script`
 * with another Worker module than the configuration's `main` (bench/counting-app.ts).
 */
/** BENCH_INGEST_LINGER_MS, when set, is the app's INGEST_LINGER_MS (to compare lingers in one tree; unset: the default). */
export function ingestLinger() {
  const ms = process.env.BENCH_INGEST_LINGER_MS;
  return ms === undefined || ms === "" ? {} : { INGEST_LINGER_MS: ms };
}

export async function startAppWorker({ root, token = "bench", inspectorPort, config = join(root, "wrangler.toml"), script, vars = {} }) {
  const worker = await startWrangler({
    root,
    config,
    script,
    vars: { ...vars, API_TOKEN: token, ENVIRONMENT: "test" },
    extraArgs: inspectorPort ? ["--inspector-port", String(inspectorPort)] : [],
    ready: async (baseUrl) => {
      const response = await fetch(`${baseUrl}/stores/totals/keys/bench-ready`, { headers: { Authorization: `Bearer ${token}` } });
      await response.body?.cancel();
      if (response.status === 401) throw new NotUsable("the app refuses the bench token (is API_TOKEN overridden?)");
      return response.status === 404; // authenticated, and no such key
    },
  });
  return { ...worker, token };
}

/** Stops every Worker still running (on failure or interruption). */
export async function stopAll() {
  await Promise.allSettled([...running].map((stop) => stop()));
}
