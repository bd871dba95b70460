/**
 * A remote segment: consecutive `record_batches` rows of one partition written as one object in
 * R2 (Kafka's tiered storage copies a closed log segment whole). Text, so that it can be read with
 * any tool:
 *
 * ```
 * {"format":"edge-streams-segment","version":1,"topic":"orders","partition":0,"base":0,"last":99,"batches":2}
 * {"base_offset":0,"count":60,"span":60,"append_time":…,"max_timestamp":…,"sizes":[…],"offsets":null,"producer":null,"length":1234}
 * <the batch's records exactly as stored: `length` UTF-16 code units, then a newline>
 * {"base_offset":60,…}
 * …
 * ```
 *
 * Each batch is its row as stored: its records (record-batch.ts' encoding) verbatim, each record's
 * size, the offsets of a thinned row, the producer (id, epoch, base sequence). The records'
 * `length` frames them, so they may hold any character.
 */
import type { BatchRow } from "./batch-rows";

export const SEGMENT_FORMAT = "edge-streams-segment";
export const SEGMENT_VERSION = 1;

/** A stored row with its producer columns, as a segment carries it. */
export type SegmentBatch = BatchRow & {
  bytes: number;
  producer_id: string | null;
  producer_epoch: number | null;
  base_sequence: number | null;
};

/** What a segment holds, as its first line says. */
export interface SegmentHeader {
  readonly topic: string;
  readonly partition: number;
  /** The first offset of its first batch. */
  readonly base: number;
  /** The last offset of its last batch. */
  readonly last: number;
  readonly batches: number;
}

/** Where a partition's segments are: `<application>/<topic>/<partition>/`. */
export function partitionPrefix(prefix: string, topic: string, partition: number): string {
  return `${prefix}/${topic}/${partition}/`;
}

/**
 * The object key of a partition's segment: `<application>/<topic>/<partition>/<base offset, 20
 * digits>-<upload>.segment`, `upload` naming the attempt (Kafka names a remote segment by its
 * base offset and a fresh id per copy, RemoteLogSegmentId). Every upload writes its own object: a
 * put that lands late (after a crash, after its note was processed) never overwrites a segment a
 * row names; it leaves an object no row names, which the orphan sweep deletes. Keys written before
 * uploads were named (`<base>.segment`) are read and swept alike.
 */
export function segmentKey(prefix: string, topic: string, partition: number, base: number, upload: string): string {
  return `${partitionPrefix(prefix, topic, partition)}${String(base).padStart(20, "0")}-${upload}.segment`;
}

const SEGMENT_NAME = /\/(\d{20})(?:-[0-9A-Za-z-]{1,64})?\.segment$/;

/** The base offset a segment's key names; undefined for a key that is not a segment's. */
export function segmentBaseOf(key: string): number | undefined {
  const digits = SEGMENT_NAME.exec(key)?.[1];
  return digits === undefined ? undefined : Number(digits);
}

export function encodeSegment(header: Omit<SegmentHeader, "batches">, batches: readonly SegmentBatch[]): string {
  const lines = [JSON.stringify({ format: SEGMENT_FORMAT, version: SEGMENT_VERSION, ...header, batches: batches.length })];
  for (const b of batches) {
    const meta = {
      base_offset: b.base_offset,
      count: b.count,
      span: b.span,
      append_time: b.append_time,
      max_timestamp: b.max_timestamp,
      bytes: b.bytes,
      sizes: Array.from(new Uint32Array(b.sizes)),
      offsets: b.offsets ? Array.from(new Uint32Array(b.offsets)) : null,
      producer: b.producer_id === null ? null : [b.producer_id, b.producer_epoch, b.base_sequence],
      length: b.records.length,
    };
    lines.push(JSON.stringify(meta), b.records);
  }
  return `${lines.join("\n")}\n`;
}

export class SegmentFormatError extends Error {
  override name = "SegmentFormatError";
}

export function decodeSegment(text: string): { header: SegmentHeader; batches: SegmentBatch[] } {
  let at = 0;
  const line = (): string => {
    const end = text.indexOf("\n", at);
    if (end < 0) throw new SegmentFormatError("segment ends inside a line");
    const result = text.slice(at, end);
    at = end + 1;
    return result;
  };
  const first = JSON.parse(line()) as SegmentHeader & { format?: unknown; version?: unknown };
  if (first.format !== SEGMENT_FORMAT || first.version !== SEGMENT_VERSION) {
    throw new SegmentFormatError(`not a version ${SEGMENT_VERSION} ${SEGMENT_FORMAT}`);
  }
  const batches: SegmentBatch[] = [];
  for (let i = 0; i < first.batches; i++) {
    const meta = JSON.parse(line()) as {
      base_offset: number;
      count: number;
      span: number;
      append_time: number;
      max_timestamp: number;
      bytes: number;
      sizes: number[];
      offsets: number[] | null;
      producer: [string, number, number] | null;
      length: number;
    };
    const records = text.slice(at, at + meta.length);
    if (records.length !== meta.length || text[at + meta.length] !== "\n") throw new SegmentFormatError(`batch at ${meta.base_offset} is cut short`);
    at += meta.length + 1;
    batches.push({
      base_offset: meta.base_offset,
      count: meta.count,
      span: meta.span,
      append_time: meta.append_time,
      max_timestamp: meta.max_timestamp,
      bytes: meta.bytes,
      sizes: Uint32Array.from(meta.sizes).buffer as ArrayBuffer,
      offsets: meta.offsets ? (Uint32Array.from(meta.offsets).buffer as ArrayBuffer) : null,
      records,
      producer_id: meta.producer?.[0] ?? null,
      producer_epoch: meta.producer?.[1] ?? null,
      base_sequence: meta.producer?.[2] ?? null,
    });
  }
  const { topic, partition, base, last } = first;
  return { header: { topic, partition, base, last, batches: first.batches }, batches };
}
