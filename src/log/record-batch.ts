/**
 * The encoded form of a batch of records, as the embedded log stores it (one row per appended
 * batch) and as it travels between `DurableLog` and its `LogPartition` objects: a JSON array with
 * one entry per record, `[key, value, timestamp]` or `[key, value, timestamp, headers]`, where
 * `timestamp` is null when the producer gave none (the log's append time applies, kept once per
 * batch) and `headers` is flattened to `[key0, value0, key1, value1, …]`.
 *
 * One string crosses RPC instead of an object per record, and a batch that arrives valid is stored
 * as it arrived, without being taken apart and put together again; a fetch of whole batches
 * returns the stored strings as they are. Records are decoded only where they are used.
 */
import { InvalidRecord, RecordTooLarge } from "./errors";
import { MAX_RECORD_BYTES, recordBytes, utf8Length } from "./records";
import type { BatchMeasure, EncodedBatch, EncodedFetch, FetchResult, Header, LogRecord, ProducerRecord } from "./types";

export type { BatchMeasure, EncodedBatch, EncodedFetch };

export type Entry =
  | [key: string | null, value: string, timestamp: number | null]
  | [key: string | null, value: string, timestamp: number | null, headers: string[]];

/** The entries of `records` an encoded batch holds: all of them, or the stretch an uncut one names. */
export function batchEntries(batch: EncodedBatch, entries: readonly Entry[]): { first: number; end: number } {
  const first = batch.from ?? 0;
  return { first, end: batch.count === undefined ? entries.length : first + batch.count };
}

/** The entry of a producer's record (not validated: see `checkEntries`). */
export function toEntry(record: ProducerRecord): Entry {
  const timestamp = record.timestamp ?? null;
  const headers = record.headers;
  if (!headers || headers.length === 0) return [record.key, record.value, timestamp];
  // Sized at once: pushed, a short array would get room for many more (a changelog record's one header, per record).
  const flat: string[] = new Array(headers.length * 2);
  for (let i = 0; i < headers.length; i++) {
    flat[2 * i] = headers[i]!.key;
    flat[2 * i + 1] = headers[i]!.value;
  }
  return [record.key, record.value, timestamp, flat];
}

/** A batch encoded for the log, and its measure when the partition would accept it as it is. */
export interface EncodedRecords {
  readonly text: string;
  /** Undefined when a record breaks one of the log's rules (`checkEntries`): the partition must see it to refuse it. */
  readonly measure: BatchMeasure | undefined;
  /**
   * The UTF-8 bytes of `text`, when known without scanning it again (an ASCII text: one byte per
   * character, found by the scan `encodeBatch` makes anyway); undefined otherwise.
   */
  readonly bytes?: number;
}

/**
 * The encoded batch of producer records, for the sending side, measured as the partition would
 * measure it (see `BatchMeasure`). Undefined when a record is not of a shape JSON keeps exactly
 * (the receiver must then see the records themselves to reject them as `checkBatch` does).
 */
export function encodeBatch(records: readonly ProducerRecord[]): EncodedRecords | undefined {
  if (!Array.isArray(records)) return undefined;
  const entries: Entry[] = new Array(records.length);
  // UTF-16 lengths first: the UTF-8 sizes of a plain ASCII batch, found without scanning each string.
  const sizes = new Uint32Array(records.length);
  let valid = records.length > 0;
  let maxTimestamp = -1;
  let untimed = false;
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    if (typeof record !== "object" || record === null) return undefined;
    const { key, value, timestamp, headers } = record;
    if ((key !== null && typeof key !== "string") || typeof value !== "string") return undefined;
    if (timestamp !== undefined && !Number.isSafeInteger(timestamp)) return undefined;
    let size = (key === null ? 0 : key.length) + value.length;
    if (headers !== undefined) {
      if (!Array.isArray(headers)) return undefined;
      for (const h of headers) {
        if (typeof h !== "object" || h === null || typeof h.key !== "string" || typeof h.value !== "string") return undefined;
        size += h.key.length + h.value.length;
      }
    }
    if (timestamp === undefined) untimed = true;
    else if (timestamp < 0) valid = false;
    else if (timestamp > maxTimestamp) maxTimestamp = timestamp;
    sizes[i] = size;
    entries[i] = toEntry(record);
  }
  const text = JSON.stringify(entries);
  if (!valid) return { text, measure: undefined };
  const ascii = ASCII.test(text);
  const bytes = ascii ? text.length : undefined;
  // The strings an ASCII text decodes to are ASCII too, unless a `\u` escape stands for another character.
  if (!ascii || text.includes("\\u"))
    for (let i = 0; i < records.length; i++) sizes[i] = recordBytes(records[i]!.key, records[i]!.value, records[i]!.headers ?? []);
  for (const size of sizes) if (size > MAX_RECORD_BYTES) return { text, measure: undefined, bytes };
  return { text, measure: { sizes, maxTimestamp, untimed }, bytes };
}

/** The UTF-8 bytes of an encoded batch's text: as `encodeBatch` found them, else counted now. */
export function encodedBytes(encoded: Pick<EncodedRecords, "text" | "bytes">): number {
  return encoded.bytes ?? utf8Length(encoded.text);
}

/** Two encoded batches joined into one, in order: the entries of both, measured when both were. */
export function joinEncoded(first: EncodedRecords, second: EncodedRecords): EncodedRecords {
  const text = `${first.text.slice(0, -1)},${second.text.slice(1)}`;
  // One "]" and one "[" give way to one ",": a byte less than both.
  const bytes = first.bytes !== undefined && second.bytes !== undefined ? first.bytes + second.bytes - 1 : undefined;
  if (!first.measure || !second.measure) return { text, measure: undefined, bytes };
  const sizes = new Uint32Array(first.measure.sizes.length + second.measure.sizes.length);
  sizes.set(first.measure.sizes);
  sizes.set(second.measure.sizes, first.measure.sizes.length);
  const maxTimestamp = Math.max(first.measure.maxTimestamp, second.measure.maxTimestamp);
  return { text, measure: { sizes, maxTimestamp, untimed: first.measure.untimed || second.measure.untimed }, bytes };
}

/**
 * The producer records of a batch encoded by `encodeBatch` — or of a JSON array of producer
 * records themselves (what the task outbox stored before it stored encoded batches).
 */
export function decodeRecords(text: string): ProducerRecord[] {
  const parsed = JSON.parse(text) as (Entry | ProducerRecord)[];
  return parsed.map((item) => {
    if (!Array.isArray(item)) return item;
    const [key, value, timestamp] = item;
    const headers = headersOf(item);
    return { key, value, ...(timestamp === null ? {} : { timestamp }), ...(headers.length ? { headers } : {}) };
  });
}

/** A validated batch: its entries, each record's size (UTF-8 bytes of key, value and headers) and their sum. */
export interface CheckedEntries {
  readonly entries: Entry[];
  readonly sizes: Uint32Array;
  readonly bytes: number;
}

/**
 * Validates entries as `checkBatch` validates records (same rules, same messages): the whole batch
 * or nothing. Works on entries parsed from any string, so it trusts nothing about their shape.
 */
export function checkEntries(entries: unknown, maxRecordBytes = MAX_RECORD_BYTES, ascii = false): CheckedEntries {
  // Every string of an all-ASCII batch is one UTF-8 byte per code unit: no need to scan each one.
  const bytesOf = ascii ? (text: string) => text.length : utf8Length;
  if (!Array.isArray(entries) || entries.length === 0) throw new InvalidRecord("a batch needs at least one record");
  const sizes = new Uint32Array(entries.length);
  let bytes = 0;
  for (let index = 0; index < entries.length; index++) {
    const where = `record ${index}`;
    const entry: unknown = entries[index];
    if (!Array.isArray(entry) || entry.length < 3 || entry.length > 4) throw new InvalidRecord(`${where} is not an object`);
    const [key, value, timestamp, headers] = entry as unknown[];
    if (key !== null && typeof key !== "string") throw new InvalidRecord(`${where}: key must be a string or null`);
    if (typeof value !== "string") throw new InvalidRecord(`${where}: value must be a string`);
    let size = (key === null ? 0 : bytesOf(key)) + bytesOf(value);
    if (entry.length === 4) {
      if (!Array.isArray(headers) || headers.length % 2 !== 0) throw new InvalidRecord(`${where}: headers must be a list of {key, value} strings`);
      for (const text of headers) {
        if (typeof text !== "string") throw new InvalidRecord(`${where}: headers must be a list of {key, value} strings`);
        size += bytesOf(text);
      }
    }
    if (timestamp !== null && (typeof timestamp !== "number" || !Number.isSafeInteger(timestamp) || timestamp < 0)) {
      throw new InvalidRecord(`${where}: timestamp must be a non-negative integer (milliseconds)`);
    }
    if (size > maxRecordBytes) throw new RecordTooLarge(`${where} is ${size} bytes; the limit is ${maxRecordBytes}`);
    sizes[index] = size;
    bytes += size;
  }
  return { entries: entries as Entry[], sizes, bytes };
}

/** Parses and validates an encoded batch as it arrives; `InvalidRecord` if it is not one. */
export function parseEntries(records: string, maxRecordBytes = MAX_RECORD_BYTES): CheckedEntries {
  let entries: unknown;
  try {
    entries = JSON.parse(records);
  } catch {
    throw new InvalidRecord("a batch must be a JSON array of records");
  }
  return checkEntries(entries, maxRecordBytes, isPlainAscii(records));
}

const ASCII = /^[\x00-\x7f]*$/;

/**
 * Whether every string JSON `text` decodes to is ASCII: the text is, and holds no `\u` escape
 * (which may stand for any character; a `\\u` that is not one only costs the slower path).
 */
function isPlainAscii(text: string): boolean {
  return !text.includes("\\u") && ASCII.test(text);
}

/** Whether two entries are the same record: key, value, headers, and timestamp (or the lack of one). */
export function sameEntry(a: Entry, b: Entry): boolean {
  if (a[0] !== b[0] || a[1] !== b[1] || a[2] !== b[2]) return false;
  const x = a[3] ?? [];
  const y = b[3] ?? [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function headersOf(entry: Entry): Header[] {
  const flat = entry[3];
  if (!flat) return [];
  const headers: Header[] = new Array(flat.length / 2);
  for (let i = 0; i < flat.length; i += 2) headers[i / 2] = { key: flat[i]!, value: flat[i + 1]! };
  return headers;
}

/** The records of encoded batches, in order. */
export function decodeBatches(batches: readonly EncodedBatch[]): LogRecord[] {
  const records: LogRecord[] = [];
  for (const batch of batches) {
    const entries = JSON.parse(batch.records) as Entry[];
    const { first, end } = batchEntries(batch, entries);
    for (let i = first; i < end; i++) {
      const entry = entries[i]!;
      records.push({
        offset: batch.offsets ? batch.offsets[i - first]! : batch.base + i - first,
        key: entry[0],
        value: entry[1],
        headers: headersOf(entry),
        timestamp: entry[2] ?? batch.appendTime,
      });
    }
  }
  return records;
}

/** An encoded fetch with its records decoded. */
export function decodeFetch({ batches, ...rest }: EncodedFetch): FetchResult {
  return { records: decodeBatches(batches), ...rest };
}
