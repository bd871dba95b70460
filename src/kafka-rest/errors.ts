/**
 * Errors in the dialect: `{"error": "<message>", "status": <code>}`, which `@upstash/kafka` turns
 * into an `UpstashError`. That class keeps only `error` and `status`, so a log error's code rides
 * at the front of the message — `"OFFSET_OUT_OF_RANGE: offset 9 is outside …"` — and also in an
 * extra `code` field for plain HTTP callers. `logErrorFromDialect` reads it back on the client side.
 */
import {
  InvalidRecord,
  type LogError,
  LogUnavailable,
  OffsetOutOfRange,
  RecordTooLarge,
  UnknownTopicOrPartition,
  logErrorFrom,
  type LogErrorCode,
} from "../log/errors";

export interface DialectErrorBody {
  readonly error: string;
  readonly status: number;
  readonly code?: LogErrorCode;
}

const codes: ReadonlySet<string> = new Set<LogErrorCode>([
  "UNKNOWN_TOPIC_OR_PARTITION",
  "OFFSET_OUT_OF_RANGE",
  "PRODUCER_FENCED",
  "OUT_OF_ORDER_SEQUENCE",
  "DUPLICATE_SEQUENCE_MISMATCH",
  "INVALID_RECORD",
  "RECORD_TOO_LARGE",
  "LOG_UNAVAILABLE",
]);

export function dialectErrorBody(status: number, message: string, code?: LogErrorCode): DialectErrorBody {
  return code ? { error: `${code}: ${message}`, status, code } : { error: message, status };
}

/**
 * The typed log error for a dialect failure. The code prefix of an Edge Streams endpoint wins;
 * a plain Kafka REST endpoint is judged by its status alone, so its errors map more coarsely.
 * Credentials refused (401/403) is `LogUnavailable`: the log cannot be used as configured.
 */
export function logErrorFromDialect(status: number, message: string): LogError {
  const match = /^([A-Z_]+): ([\s\S]*)$/.exec(message);
  if (match && codes.has(match[1]!)) return logErrorFrom({ code: match[1] as LogErrorCode, message: match[2]! });
  const text = `Kafka REST endpoint answered ${status}: ${message}`;
  if (status === 401 || status === 403) return new LogUnavailable(`credentials refused: ${text}`);
  if (status === 404) return new UnknownTopicOrPartition(text);
  if (status === 413) return new RecordTooLarge(text);
  if (status === 416) return new OffsetOutOfRange(text);
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new InvalidRecord(text);
  return new LogUnavailable(text);
}
