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
