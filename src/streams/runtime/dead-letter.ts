/**
 * Dead letters as Kafka Streams builds them (KIP-1034, `ExceptionHandlerUtils`): the failed record
 * unchanged — key, value, timestamp and its own headers — followed by six headers naming the
 * error and where the record came from. Their values are bounded (`DEAD_LETTER_BOUNDS`), so that
 * a dead letter of any record the application may read (`MAX_INPUT_RECORD_BYTES`) fits in a
 * record (`MAX_RECORD_BYTES`); for a larger record the message and stack trace are cut further to
 * fit, and one that cannot fit even so is refused here (`RecordTooLarge`), where its handler is
 * decided, never at the log.
 */
import { InvalidRecord, RecordTooLarge } from "../../log/errors";
import { MAX_RECORD_BYTES, recordBytes, utf8Length } from "../../log/records";
import { TOMBSTONE_HEADER } from "../../log/stored-batch";
import type { ErrorHandlerContext } from "../error-handlers";
import type { Header } from "../record";
import type { OutgoingRecord } from "./types";
import { topicPartition } from "../../names";

/** Kafka's names (`ExceptionHandlerUtils.HEADER_ERRORS_*_NAME`), added after the record's own headers in this order. */
export const DEAD_LETTER_HEADERS = {
  /** The error's class name (`TypeError`, `SyntaxError`, a class of the application's own). */
  exception: "__streams.errors.exception",
  message: "__streams.errors.message",
  /** The error's stack, then each `cause`'s, as Java prints them ("Caused by: …"). */
  stacktrace: "__streams.errors.stacktrace",
  /** Where the failed record was read: the source record's topic (empty without one), partition and offset (-1 without one). */
  topic: "__streams.errors.topic",
  partition: "__streams.errors.partition",
  offset: "__streams.errors.offset",
} as const;

/**
 * Most UTF-8 bytes of each header value that is not bounded by nature (topic names have at most
 * 249 characters, partitions and offsets at most 16 digits). A longer value is cut, ending with
 * "…". With the header names, the six headers take at most 12,967 bytes, within
 * `DEAD_LETTER_HEADROOM` (16,384).
 */
export const DEAD_LETTER_BOUNDS = { exception: 256, message: 4_096, stacktrace: 8_192 } as const;

/** Causes followed in a stack trace, at most. */
const MAX_CAUSES = 8;
const ELLIPSIS = "…";

/** `text` cut at a character boundary to at most `maxBytes` UTF-8 bytes, ending with "…" when it was cut. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3 || utf8Length(text) <= maxBytes) return text;
  const budget = maxBytes - utf8Length(ELLIPSIS);
  if (budget < 0) return "";
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const c = text.charCodeAt(end);
    const pair = c >= 0xd800 && c <= 0xdbff && end + 1 < text.length && (text.charCodeAt(end + 1) & 0xfc00) === 0xdc00;
    const size = pair ? 4 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    if (bytes + size > budget) break;
    bytes += size;
    end += pair ? 2 : 1;
  }
  return text.slice(0, end) + ELLIPSIS;
}

/** An error's class name, as Java's `getClass().getName()`: its `name` when set, else its constructor's. */
export function errorClassName(error: Error): string {
  if (error.name && error.name !== "Error") return error.name;
  const constructorName = (error.constructor as { name?: unknown } | undefined)?.name;
  return typeof constructorName === "string" && constructorName !== "" ? constructorName : "Error";
}

/** The error's stack trace and its causes', as Java's `printStackTrace`. */
export function stackTraceOf(error: Error): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth <= MAX_CAUSES; depth++) {
    const text = current instanceof Error ? (current.stack ?? `${errorClassName(current)}: ${current.message}`) : String(current);
    parts.push(depth === 0 ? text : `Caused by: ${text}`);
    current = current instanceof Error ? (current as { cause?: unknown }).cause : undefined;
  }
  return parts.join("\n");
}

/**
 * The dead letter of a failed record (Kafka's `buildDeadLetterQueueRecord`): `key` and `value`
 * (the source record's raw ones, or the record that failed), the context's timestamp and headers,
 * then the error headers. Throws `RecordTooLarge` (or `InvalidRecord`, for a timestamp the log
 * would refuse) when it cannot be written.
 */
export function deadLetterRecord(topic: string, context: ErrorHandlerContext, key: string | null, value: string | null, error: Error): OutgoingRecord {
  const where = context.topic === null ? "" : ` of ${topicPartition({ topic: context.topic, partition: context.partition })} offset ${context.offset}`;
  const timestamp = context.timestamp;
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new InvalidRecord(`the dead letter${where} would have timestamp ${timestamp}`);
  const exception = truncateUtf8(errorClassName(error), DEAD_LETTER_BOUNDS.exception);
  const origin: Header[] = [
    { key: DEAD_LETTER_HEADERS.topic, value: context.topic ?? "" },
    { key: DEAD_LETTER_HEADERS.partition, value: String(context.partition) },
    { key: DEAD_LETTER_HEADERS.offset, value: String(context.offset) },
  ];
  // Everything but the message and the stack trace, whose room is what is left.
  const fixed = [
    ...context.headers,
    { key: DEAD_LETTER_HEADERS.exception, value: exception },
    { key: DEAD_LETTER_HEADERS.message, value: "" },
    { key: DEAD_LETTER_HEADERS.stacktrace, value: "" },
    ...origin,
    ...(value === null ? [{ key: TOMBSTONE_HEADER, value: "1" }] : []),
  ];
  let room = MAX_RECORD_BYTES - recordBytes(key, value ?? "", fixed);
  if (room < 0) throw new RecordTooLarge(`the dead letter${where} would be ${MAX_RECORD_BYTES - room} bytes; a record holds at most ${MAX_RECORD_BYTES}`);
  const message = truncateUtf8(error.message, Math.min(DEAD_LETTER_BOUNDS.message, room));
  room -= utf8Length(message);
  const stacktrace = truncateUtf8(stackTraceOf(error), Math.min(DEAD_LETTER_BOUNDS.stacktrace, room));
  return {
    topic,
    key,
    value,
    timestamp,
    headers: [
      ...context.headers,
      { key: DEAD_LETTER_HEADERS.exception, value: exception },
      { key: DEAD_LETTER_HEADERS.message, value: message },
      { key: DEAD_LETTER_HEADERS.stacktrace, value: stacktrace },
      ...origin,
    ],
  };
}

/** The headers of dead letters written before they took Kafka's names: such records may still wait in an outbox. */
const EARLIER_HEADERS = {
  error: "edge-streams.dlq.error",
  topic: "edge-streams.dlq.topic",
  partition: "edge-streams.dlq.partition",
  offset: "edge-streams.dlq.offset",
};

/** Where a dead letter's record came from, by its error headers; undefined for any other record. */
export function deadLetterOrigin(headers: readonly Header[]): { topic: string; partition: number; offset: number } | undefined {
  const last = (key: string) => {
    for (let i = headers.length - 1; i >= 0; i--) if (headers[i]!.key === key) return headers[i]!.value;
    return undefined;
  };
  const earlier = last(EARLIER_HEADERS.error) !== undefined && last(DEAD_LETTER_HEADERS.exception) === undefined;
  const names = earlier ? EARLIER_HEADERS : DEAD_LETTER_HEADERS;
  const topic = last(names.topic);
  const partition = Number(last(names.partition));
  const offset = Number(last(names.offset));
  if (!topic || !Number.isSafeInteger(partition) || partition < 0 || !Number.isSafeInteger(offset) || offset < 0) return undefined;
  return { topic, partition, offset };
}

/** Whether a record is a dead letter (it carries Kafka's error headers, or the earlier ones). */
export function isDeadLetter(headers: readonly Header[]): boolean {
  return headers.some((h) => h.key === DEAD_LETTER_HEADERS.exception || h.key === EARLIER_HEADERS.error);
}

/**
 * Builds a dead letter and hands it to the collector, in the commit being made. Throws when it
 * cannot be written: a topic the topology does not declare (a handler function may name any),
 * or a record too large even with its error headers cut (see `deadLetterRecord`).
 */
export function sendDeadLetter(
  collector: { send(record: OutgoingRecord): void },
  declared: (topic: string) => boolean,
  topic: string,
  context: ErrorHandlerContext,
  key: string | null,
  value: string | null,
  error: Error,
): void {
  if (!declared(topic)) throw new InvalidRecord(`dead letter topic ${JSON.stringify(topic)} is not declared: give its partition count in build({ topics })`);
  collector.send(deadLetterRecord(topic, context, key, value, error));
}
