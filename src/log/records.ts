/**
 * Checks and measures records before they reach storage: a batch is valid as a whole or rejected
 * as a whole, so nothing is half-applied.
 */
import { InvalidRecord, RecordTooLarge } from "./errors";
import type { Header, ProducerRecord } from "./types";

/**
 * Largest record (key + value + headers, UTF-8 bytes) the log accepts: about Kafka's default
 * 1 MiB, less room for its encoding, so that every record fits in one stored row of at most 1 MiB
 * (stored-batch.ts) — Durable Object SQLite refuses rows above 2 MB.
 */
export const MAX_RECORD_BYTES = 1_000_000;

/**
 * Room kept under `MAX_RECORD_BYTES` for the error headers a dead letter adds to a record
 * (src/streams/runtime/dead-letter.ts: Kafka's six `__streams.errors.*` headers, their values
 * bounded so that they take at most 12,967 bytes with their names).
 */
export const DEAD_LETTER_HEADROOM = 16_384;

/**
 * Largest record (key + value + headers, UTF-8 bytes) that may enter a topic the application
 * reads: what ingest and `/kafka` accept, and what a topology may write to a topic it reads
 * itself (a repartition topic). Any such record can still be dead-lettered with its error
 * headers, within `MAX_RECORD_BYTES`.
 */
export const MAX_INPUT_RECORD_BYTES = MAX_RECORD_BYTES - DEAD_LETTER_HEADROOM;

/**
 * Longest key (UTF-8 bytes) accepted from outside, so that every key can be read back through
 * `GET /stores/:store/keys/:key`: percent-encoded, each byte takes at most three characters, and
 * 3 × 4,096 leaves room for the rest of the URL within Cloudflare's 16 KB limit on URLs.
 */
export const MAX_INPUT_KEY_BYTES = 4_096;

const ASCII = /^[\x00-\x7f]*$/;

/** Exact UTF-8 length of a string, without allocating. */
export function utf8Length(text: string): number {
  // Most keys and values are ASCII: one byte per code unit, found by a (native) regex scan.
  if (ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

export function recordBytes(key: string | null, value: string, headers: readonly Header[]): number {
  let bytes = (key === null ? 0 : utf8Length(key)) + utf8Length(value);
  for (const header of headers) bytes += utf8Length(header.key) + utf8Length(header.value);
  return bytes;
}

/** A record ready for storage: validated, measured, timestamped. */
export interface CheckedRecord {
  readonly key: string | null;
  readonly value: string;
  readonly headers: readonly Header[];
  readonly timestamp: number;
  readonly bytes: number;
}

function isHeader(header: unknown): header is Header {
  return typeof header === "object" && header !== null && typeof (header as Header).key === "string" && typeof (header as Header).value === "string";
}

/** Validates a whole batch; throws `InvalidRecord` or `RecordTooLarge` naming the first bad record. */
export function checkBatch(records: readonly ProducerRecord[], now: number, maxRecordBytes = MAX_RECORD_BYTES): CheckedRecord[] {
  if (!Array.isArray(records) || records.length === 0) throw new InvalidRecord("a batch needs at least one record");
  return records.map((record, index) => {
    const where = `record ${index}`;
    if (typeof record !== "object" || record === null) throw new InvalidRecord(`${where} is not an object`);
    const { key, value } = record;
    const headers = record.headers ?? [];
    if (key !== null && typeof key !== "string") throw new InvalidRecord(`${where}: key must be a string or null`);
    if (typeof value !== "string") throw new InvalidRecord(`${where}: value must be a string`);
    if (!Array.isArray(headers) || !headers.every(isHeader)) {
      throw new InvalidRecord(`${where}: headers must be a list of {key, value} strings`);
    }
    const timestamp = record.timestamp ?? now;
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
      throw new InvalidRecord(`${where}: timestamp must be a non-negative integer (milliseconds)`);
    }
    const bytes = recordBytes(key, value, headers);
    if (bytes > maxRecordBytes) throw new RecordTooLarge(`${where} is ${bytes} bytes; the limit is ${maxRecordBytes}`);
    return { key, value, headers: headers.map((h) => ({ key: h.key, value: h.value })), timestamp, bytes };
  });
}
