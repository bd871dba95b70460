// `npm test [-- vitest args]`: runs vitest and passes its output through, except workerd's own
// reports of faults the tests inject on purpose. Tests crash objects (`ctx.abort("injected crash…")`,
// `abortAllDurableObjects()`) and make log calls fail ("injected failure…"); workerd then prints an
// "uncaught exception" block for each (a header line, then `stack:` / `    at` lines), hundreds in
// a green run. A block is dropped only when its header names such an injected fault; every other
// line, any other workerd report included, is shown. Vitest's exit code is ours.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const INJECTED = /injected crash|injected failure|Application called abortAllDurableObjects\(\)/;
const HEADER = /^(uncaught exception;|exception = workerd\/)/;
const CONTINUATION = /^(stack: |\s+at )/;

// The preload sends vitest's modules to workerd uncompressed (scripts/plain-pool-socket.mjs).
const preload = ["--import", "./scripts/plain-pool-socket.mjs"];
const child = spawn(process.execPath, [...preload, "node_modules/vitest/vitest.mjs", "run", ...process.argv.slice(2)], {
  stdio: ["inherit", "pipe", "pipe"],
  env: { WRANGLER_SEND_METRICS: "false", ...(process.stdout.isTTY ? { FORCE_COLOR: "1" } : {}), ...process.env },
});

let dropped = 0;
function filter(input, output) {
  let skipping = false;
  createInterface({ input, crlfDelay: Infinity }).on("line", (line) => {
    const plain = line.replace(/\x1b\[[0-9;]*m/g, "");
    if (HEADER.test(plain)) skipping = INJECTED.test(plain);
    else if (!CONTINUATION.test(plain)) skipping = false;
    if (skipping) dropped++;
    else output.write(`${line}\n`);
  });
}
filter(child.stdout, process.stdout);
filter(child.stderr, process.stderr);

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("close", (code, signal) => {
  if (dropped > 0) console.log(`(${dropped} lines of workerd's reports of injected faults left out)`);
  process.exit(code ?? (signal ? 1 : 0));
});
