/**
 * Errors of the consumer group protocol (as opposed to the log's): an unknown instance, or no
 * committed offset with `auto.offset.reset=none`. Like log errors they cross Durable Object RPC
 * as values, because RPC does not keep error classes.
 */
import { LogError, logErrorFrom, type LogFailure } from "../log/errors";

export class GroupError extends Error {
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
    this.name = "GroupError";
  }
}

export type GroupFailure =
  | { readonly kind: "log"; readonly failure: LogFailure }
  | { readonly kind: "group"; readonly status: 404 | 409; readonly message: string };

export type GroupOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: GroupFailure };

/** Runs `fn`, returning log and group errors as values (anything else still throws). */
export async function groupOutcome<T>(fn: () => Promise<T>): Promise<GroupOutcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    if (error instanceof LogError) return { ok: false, failure: { kind: "log", failure: error.toFailure() } };
    if (error instanceof GroupError) return { ok: false, failure: { kind: "group", status: error.status, message: error.message } };
    throw error;
  }
}

export function unwrapGroup<T>(result: GroupOutcome<T>): T {
  if (result.ok) return result.value;
  const { failure } = result;
  if (failure.kind === "log") throw logErrorFrom(failure.failure);
  throw new GroupError(failure.status, failure.message);
}
