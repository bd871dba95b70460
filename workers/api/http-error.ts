/**
 * The error contract of docs/http-api.md: `{"error": code, "message": text}` with a fitting status, and
 * `Retry-After` on 503 and 429. Log errors map to statuses here, in one place, and so does unavailability
 * (of the log or of an object) met anywhere behind a route. What went wrong inside (another object's
 * error, the log's) is logged, never answered: a 503 or 500 says only what the caller can do.
 */
import { logEvent } from "../../src/util/logging";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ConfigError } from "../../src/config";
import { isMigrationUnderWay } from "../../src/coordinator/migration";
import { isCoordinatorUnavailable } from "../../src/coordinator/unavailable";
import { isNotAssigned } from "../../src/task/not-assigned";
import { isLogUnavailable, LogError, type LogErrorCode } from "../../src/log/errors";

export type ErrorCode =
  | "invalid_input"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "unsupported_media_type"
  | "too_many_requests"
  | "unknown_topic"
  | "conflict"
  | "producer_fenced"
  | "idempotency_key_reused"
  | "too_large"
  | "offset_out_of_range"
  | "unavailable"
  | "misconfigured"
  | "internal";

/** An error that is meant for the caller: its code and message are safe to show. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

const fromLog: Record<LogErrorCode, [ContentfulStatusCode, ErrorCode]> = {
  UNKNOWN_TOPIC_OR_PARTITION: [404, "unknown_topic"],
  OFFSET_OUT_OF_RANGE: [416, "offset_out_of_range"],
  PRODUCER_FENCED: [409, "producer_fenced"],
  OUT_OF_ORDER_SEQUENCE: [409, "conflict"],
  DUPLICATE_SEQUENCE_MISMATCH: [409, "idempotency_key_reused"],
  INVALID_RECORD: [400, "invalid_input"],
  RECORD_TOO_LARGE: [413, "too_large"],
  LOG_UNAVAILABLE: [503, "unavailable"],
};

/**
 * The log or a Durable Object could not be reached, as met behind a route in another object: a
 * 503 the caller may retry. Such errors arrive over RPC without their class: a `LogUnavailable`
 * thrown by a task object or the coordinator (while describing, restoring, assigning) is
 * recognised by its message; the runtime flags its own failures to reach an object (overloaded,
 * reset, or worth a retry).
 */
function unavailable(error: unknown): ApiError | undefined {
  if (isNotAssigned(error)) return new ApiError(503, "unavailable", "the task instance has not taken its assignment yet; retry shortly", 1);
  if (isCoordinatorUnavailable(error)) return new ApiError(503, "unavailable", "the coordinator does not answer; retry shortly", 1);
  if (isMigrationUnderWay(error)) return new ApiError(503, "unavailable", "the move is under way and completes on its own: ask again to see it done", 1);
  if (isLogUnavailable(error)) return new ApiError(503, "unavailable", "the log is unavailable; retry shortly", 1);
  const flags = (error ?? {}) as { overloaded?: unknown; retryable?: unknown; durableObjectReset?: unknown };
  if (flags.overloaded === true || flags.retryable === true || flags.durableObjectReset === true) {
    return new ApiError(503, "unavailable", "a component did not answer; retry shortly", 1);
  }
  return undefined;
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  // Invalid vars: the message names each one and what is wrong (vars are not secrets).
  if (error instanceof ConfigError) return new ApiError(500, "misconfigured", error.message);
  if (error instanceof LogError) {
    const [status, code] = fromLog[error.code];
    // A log error about the request itself (unknown topic, a record refused, the caller's own producer) says why; unavailability says no more than that.
    return status === 503 ? new ApiError(503, code, "the log is unavailable; retry shortly", 1) : new ApiError(status, code, error.message);
  }
  if (error instanceof HTTPException) {
    const status = error.status as ContentfulStatusCode;
    const code: ErrorCode = status === 413 ? "too_large" : status === 401 ? "unauthorized" : status === 404 ? "not_found" : "invalid_input";
    return new ApiError(status, code, error.message || "request refused");
  }
  return unavailable(error) ?? new ApiError(500, "internal", "internal error");
}

/**
 * Logs what a response will not say: the error behind a 500, or behind a 503 made of another
 * component's failure (an ApiError made for the caller needs no line).
 */
export function logHidden(c: Context, error: unknown, apiError: ApiError): void {
  if (apiError.status < 500 || error instanceof ApiError) return;
  const internal = apiError.code === "internal";
  logEvent(internal ? "http.unhandled" : "http.unavailable", { path: c.req.path, error: String(error) }, internal ? "error" : "warn");
}

export function errorResponse(c: Context, error: unknown): Response {
  const apiError = toApiError(error);
  logHidden(c, error, apiError);
  if (apiError.retryAfterSeconds !== undefined) c.header("Retry-After", String(apiError.retryAfterSeconds));
  return c.json({ error: apiError.code, message: apiError.message }, apiError.status);
}
