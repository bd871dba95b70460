/**
 * Structured logs: one JSON object per line (what Workers Logs and `wrangler tail` index), with
 * an `event` name and flat fields. Lifecycle events of task instances carry `task`, `placement`,
 * `epoch` and `incarnation`, so one instance's history can be followed across objects.
 *
 * Secrets never belong in a log line; as a last guard, fields whose name says they hold one
 * (token, password, secret, authorization, cookie) are written as `"[redacted]"`.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogValue = string | number | boolean | null | undefined;
export type LogFields = Readonly<Record<string, LogValue>>;

const SECRET_FIELD = /token|password|secret|authorization|cookie/i;

const RANK: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3 };
/** The least severe level written: the `LOG_LEVEL` var (set when the configuration is read). */
let threshold: LogLevel = "info";
/** A test's own threshold, over the configured one (see `overrideLogLevel`). */
let override: LogLevel | undefined;

/** Sets the threshold from configuration (`LOG_LEVEL`). */
export function setLogLevel(level: LogLevel): void {
  threshold = level;
}

/** For tests that check what is logged: a threshold of their own until they pass undefined. */
export function overrideLogLevel(level: LogLevel | undefined): void {
  override = level;
}

export function logs(level: LogLevel): boolean {
  return RANK[level] >= RANK[override ?? threshold];
}

/** The line `logEvent` writes, as an object (exported for tests). */
export function logLine(level: LogLevel, event: string, fields: LogFields = {}): Record<string, LogValue> {
  const line: Record<string, LogValue> = { level, event, time: new Date().toISOString() };
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    line[name] = SECRET_FIELD.test(name) ? "[redacted]" : value;
  }
  return line;
}

/** Writes one structured log line. */
export function logEvent(event: string, fields: LogFields = {}, level: LogLevel = "info"): void {
  if (!logs(level)) return;
  const text = JSON.stringify(logLine(level, event, fields));
  if (level === "error") console.error(text);
  else if (level === "warn") console.warn(text);
  else console.log(text);
}
