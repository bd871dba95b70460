/** Small helpers shared by the scenarios. */

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A positive integer from the environment, or the default. */
export function envInt(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** Progress for humans, on stderr: stdout's last line is reserved for the JSON result. */
export function note(message) {
  process.stderr.write(`[bench] ${message}\n`);
}

/** The p-th percentile (0..100) of the values, nearest rank. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

/**
 * Polls `probe` until it returns something other than undefined, with `intervalMs` between
 * attempts, and fails after `timeoutMs` saying what it waited for (and the last value seen).
 */
export async function waitFor(what, probe, { timeoutMs = 60_000, intervalMs = 10, last = () => "" } = {}) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${last()}`);
    if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
