/**
 * The topology's uncaught-error policy (Kafka's `StreamsUncaughtExceptionHandler`) as a task
 * applies it to an error that rolled a commit back. A record the log refuses (too large, invalid)
 * fails the same way on every attempt, so retrying cannot help: `"retry"` becomes `"fail"` for it.
 * Pure.
 */
import { InvalidRecord, RecordTooLarge } from "../log/errors";
import type { Topology, UncaughtErrorPolicy } from "../streams/topology/topology";

/** The policy for `error`: the topology's choice, except a retry that could never succeed. */
export function uncaughtErrorPolicy(topology: Topology, error: unknown): UncaughtErrorPolicy {
  const chosen = topology.uncaughtErrorPolicy(error);
  return chosen === "retry" && (causedBy(error, RecordTooLarge) || causedBy(error, InvalidRecord)) ? "fail" : chosen;
}

/** The reason a task stopped by `error` gives. */
export function processingFailure(error: unknown): string {
  return `processing failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** Whether `error`, or an error it was caused by, is a `kind`. */
function causedBy(error: unknown, kind: abstract new (...args: never[]) => Error): boolean {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof kind) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
