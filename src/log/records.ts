/**
 * Checks and measures records before they reach storage: a batch is valid as a whole or rejected
 * as a whole, so nothing is half-applied.
 */
import { InvalidRecord, RecordTooLarge } from "./errors";
import type { Header, ProducerRecord } from "./types";

/** Largest record (key + value + headers, UTF-8 bytes) the log accepts, as Kafka's default 1 MiB. */
export const MAX_RECORD_BYTES = 1024 * 1024;

/** Exact UTF-8 length of a string, without allocating. */
export function utf8Length(text: string): number {
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
  return (
    typeof header === "object" &&
    header !== null &&
    typeof (header as Header).key === "string" &&
    typeof (header as Header).value === "string"
  );
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

/**
 * A 53-bit fingerprint of a batch's content (cyrb53), kept with each producer batch so that a
 * sequence number reused for different records is told apart from a genuine retry.
 */
export function batchDigest(records: readonly ProducerRecord[]): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  const mix = (text: string) => {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ 0x1f, 2654435761);
  };
  for (const r of records) {
    mix(r.key === null ? "\u0000null" : `k${r.key}`);
    mix(r.value);
    for (const h of r.headers ?? []) mix(`${h.key}=${h.value}`);
    mix(r.timestamp === undefined ? "-" : String(r.timestamp));
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}
