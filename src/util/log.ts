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
  const text = JSON.stringify(logLine(level, event, fields));
  if (level === "error") console.error(text);
  else if (level === "warn") console.warn(text);
  else console.log(text);
}
