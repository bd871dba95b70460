/**
 * Starts the real `wrangler dev` for Node tests: a free port, a fresh persistence directory, vars
 * given with `--var` (wrangler splits NAME:VALUE at the first colon only, and passes `=` and `,`
 * through, so `TOPICS:a=2,b=3` arrives whole). Waits for `GET /healthz` within a bound, and stops
 * the whole process group afterwards — also when starting fails or the test process exits.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { until } from "../support/until";

export { until };

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface WranglerDev {
  /** The Worker's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly token: string;
  /** Where the Worker's Durable Objects keep their storage. */
  readonly persistTo: string;
  /** The last part of wrangler's output, for failure messages. */
  output(): string;
  /** Stops it and deletes its storage (unless it was given `persistTo`). */
  stop(): Promise<void>;
  /** Kills the whole process group at once (SIGKILL: no clean shutdown); its storage stays. */
  kill(): Promise<void>;
}

export interface WranglerDevOptions {
  /** Topics to declare with the TOPICS var: name → partitions. */
  readonly topics?: Readonly<Record<string, number>>;
  readonly vars?: Readonly<Record<string, string>>;
  readonly readyTimeoutMs?: number;
  /** Storage to reuse (a restart after `kill`); kept on `stop`. Default: a fresh directory, deleted on `stop`. */
  readonly persistTo?: string;
  /** The API token (default: a random one). */
  readonly token?: string;
  /** Another application's wrangler.toml (e.g. `examples/page-views/wrangler.toml`); default the root's. */
  readonly config?: string;
}

/**
 * A port nothing listens on right now. Chosen below Linux's ephemeral range (32768+), where the
 * ports the OS hands out to other processes' outgoing connections and `listen(0)` live, so the
 * moment between this check and wrangler binding it is rarely lost to someone else.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error("no free port between 20000 and 32000");
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Wrangler's words when the port it was given was taken between `freePort` and its own bind. */
const PORT_TAKEN = /Address already in use/;

export async function startWranglerDev(options: WranglerDevOptions = {}): Promise<WranglerDev> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      // Only a lost port race is worth another try; anything else is the test's to see.
      if (attempt >= 3 || !(error instanceof PortTaken)) throw error;
    }
  }
}

class PortTaken extends Error {}

async function startOnce(options: WranglerDevOptions): Promise<WranglerDev> {
  const token = options.token ?? `node-test-${Math.random().toString(36).slice(2)}`;
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const persist = options.persistTo ?? mkdtempSync(`${tmpdir()}/edge-streams-dev-`);
  const topics = Object.entries(options.topics ?? {})
    .map(([name, partitions]) => `${name}=${partitions}`)
    .join(",");
  const vars: Record<string, string> = { API_TOKEN: token, ENVIRONMENT: "test", ...(topics ? { TOPICS: topics } : {}), ...options.vars };
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort), "--persist-to", persist];
  if (options.config) args.push("-c", options.config);
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);

  const child = spawn(`${root}node_modules/.bin/wrangler`, args, {
    cwd: root,
    // Its own process group, so stopping it also stops workerd and esbuild.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let exited = child.exitCode !== null;
  const exit = new Promise<void>((resolve) => child.once("exit", () => ((exited = true), resolve())));

  const killGroup = (signal: NodeJS.Signals) => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  const onExit = () => killGroup("SIGKILL");
  process.once("exit", onExit);

  const stop = async () => {
    process.off("exit", onExit);
    killGroup("SIGTERM");
    const stopped = await Promise.race([exit.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    if (!stopped) killGroup("SIGKILL");
    if (options.persistTo === undefined) rmSync(persist, { recursive: true, force: true });
  };

  const kill = async () => {
    process.off("exit", onExit);
    killGroup("SIGKILL");
    await exit;
  };

  const url = `http://127.0.0.1:${port}`;
  try {
    await until(
      async () => {
        if (exited) throw new Error("wrangler dev exited");
        try {
          return (await fetch(`${url}/healthz`)).status === 200;
        } catch {
          return false;
        }
      },
      options.readyTimeoutMs ?? 90_000,
      `wrangler dev on ${url}`,
    );
  } catch (error) {
    await stop();
    const Failure = PORT_TAKEN.test(log) ? PortTaken : Error;
    throw new Failure(`${error instanceof Error ? error.message : String(error)}\n--- wrangler output ---\n${log}`);
  }
  return { url, token, persistTo: persist, output: () => log, stop, kill };
}
