/**
 * The resident memory of a Worker under `wrangler dev`, as Linux counts it: the sum of VmRSS over
 * the `workerd` processes of wrangler's process group (bench/lib/server.mjs starts each wrangler as
 * a group leader; `pid` is its id). A Worker's own heap is not observable from outside, so this
 * is the bound a scenario can check: the whole runtime's memory. Linux only (/proc); undefined
 * elsewhere.
 */
import { readdir, readFile } from "node:fs/promises";

/** Bytes resident in the workerd processes of process group `pgid`, or undefined without /proc or workerd. */
export async function workerdRssBytes(pgid) {
  let pids;
  try {
    pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  let total = 0;
  let found = false;
  for (const pid of pids) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8");
      // pid (comm) state ppid pgrp …: comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (pgrp !== pgid || !comm.startsWith("workerd")) continue;
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
      if (Number.isFinite(kb)) {
        total += kb * 1024;
        found = true;
      }
    } catch {
      // gone meanwhile
    }
  }
  return found ? total : undefined;
}
