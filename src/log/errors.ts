/**
 * Typed log errors. Durable Object RPC does not carry error classes, so errors cross it as
 * `LogFailure` values (a code and a message) and are turned back into these classes by the client.
 */

export type LogErrorCode =
  | "UNKNOWN_TOPIC_OR_PARTITION"
  | "OFFSET_OUT_OF_RANGE"
  | "PRODUCER_FENCED"
  | "OUT_OF_ORDER_SEQUENCE"
  | "DUPLICATE_SEQUENCE_MISMATCH"
  | "INVALID_RECORD"
  | "RECORD_TOO_LARGE"
  | "LOG_UNAVAILABLE";

/** The serializable form of a log error. */
export interface LogFailure {
  readonly code: LogErrorCode;
  readonly message: string;
}

export class LogError extends Error {
  constructor(
    readonly code: LogErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }

  toFailure(): LogFailure {
    return { code: this.code, message: this.message };
  }
}

export class UnknownTopicOrPartition extends LogError {
  constructor(message: string) {
    super("UNKNOWN_TOPIC_OR_PARTITION", message);
  }
}

/** The requested offset is below the earliest kept record or beyond the end of the partition. */
export class OffsetOutOfRange extends LogError {
  constructor(message: string) {
    super("OFFSET_OUT_OF_RANGE", message);
  }
}

/** A newer epoch of this producer has appended to the partition: this one is a zombie. */
export class ProducerFenced extends LogError {
  constructor(message: string) {
    super("PRODUCER_FENCED", message);
  }
}

/** The batch skips sequence numbers: an earlier batch of this producer is missing. */
export class OutOfOrderSequence extends LogError {
  constructor(message: string) {
    super("OUT_OF_ORDER_SEQUENCE", message);
  }
}

/** A batch reuses a producer's sequence number with different records. */
export class DuplicateSequenceMismatch extends LogError {
  constructor(message: string) {
    super("DUPLICATE_SEQUENCE_MISMATCH", message);
  }
}

export class InvalidRecord extends LogError {
  constructor(message: string) {
    super("INVALID_RECORD", message);
  }
}

export class RecordTooLarge extends LogError {
  constructor(message: string) {
    super("RECORD_TOO_LARGE", message);
  }
}

/** The log could not be reached (network failure, retry budget spent). Safe to retry. */
export class LogUnavailable extends LogError {
  constructor(message: string) {
    super("LOG_UNAVAILABLE", message);
  }
}

const classes: Record<LogErrorCode, new (message: string) => LogError> = {
  UNKNOWN_TOPIC_OR_PARTITION: UnknownTopicOrPartition,
  OFFSET_OUT_OF_RANGE: OffsetOutOfRange,
  PRODUCER_FENCED: ProducerFenced,
  OUT_OF_ORDER_SEQUENCE: OutOfOrderSequence,
  DUPLICATE_SEQUENCE_MISMATCH: DuplicateSequenceMismatch,
  INVALID_RECORD: InvalidRecord,
  RECORD_TOO_LARGE: RecordTooLarge,
  LOG_UNAVAILABLE: LogUnavailable,
};

/**
 * Whether `error` means the log could not be reached: a `LogUnavailable` thrown here, or one thrown
 * in another Durable Object (a task object, the coordinator) and received over RPC. RPC delivers a
 * plain `Error` whose message starts with the class name ("LogUnavailable: …"), so that is what is
 * recognised there, or the code.
 */
export function isLogUnavailable(error: unknown): boolean {
  if (error instanceof LogUnavailable) return true;
  return error instanceof Error && /^(LogUnavailable|LOG_UNAVAILABLE): /.test(error.message);
}

export function logErrorFrom(failure: LogFailure): LogError {
  return new classes[failure.code](failure.message);
}

/** Either a value or a log failure: what a `LogPartition` RPC returns. */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: LogFailure };

/** Runs `fn`, returning its log errors as values (other errors still throw). */
export function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (error instanceof LogError) return { ok: false, failure: error.toFailure() };
    throw error;
  }
}

export function unwrap<T>(result: Outcome<T>): T {
  if (result.ok) return result.value;
  throw logErrorFrom(result.failure);
}
