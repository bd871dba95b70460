/**
 * The sink port (docs/connectors.md#sinks): what delivers a batch of a topic partition's records
 * outside — a Cloudflare Queue (queue-sink.ts), a webhook (webhook-sink.ts). One delivery
 * machinery (sink-delivery.ts) reads the partition, forms batches within the sink's limits,
 * delivers, commits the position and backs off; a new kind of sink is one class implementing
 * `Sink`.
 */
import type { LogRecord, TopicPartition } from "../log/types";
import { recordId } from "../names";
import { utf8Length } from "../log/records";
import type { Message } from "../kafka-rest/dialect";
import { toMessage } from "../kafka-rest/fetch";

/**
 * A record as a sink delivers it: the record as `/kafka` renders it (topic, partition, offset,
 * timestamp, key, value, headers), with `id`, `<topic>/<partition>/<offset>`: the same for every
 * delivery of that record, so a consumer that remembers ids applies each record once.
 */
export interface SinkRecord extends Message {
  readonly id: string;
}

export function sinkRecord(tp: TopicPartition, record: LogRecord): SinkRecord {
  return { id: recordId(tp, record.offset), ...toMessage(tp, record) };
}

/** Strings JSON writes as they are: printable ASCII without `"` or `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7f]*$/;

/** The UTF-8 bytes of a string as JSON (quoted, escaped). */
function jsonStringBytes(text: string): number {
  return VERBATIM.test(text) ? text.length + 2 : utf8Length(JSON.stringify(text));
}

/** The punctuation and names of a record's JSON: `{"id":,"topic":,"partition":,"offset":,"timestamp":,"key":,"value":,"headers":[]}`. */
const RECORD_FRAME = 81;
/** … and of a header's: `{"key":,"value":}`. */
const HEADER_FRAME = 17;

/**
 * The bytes of a record as JSON (UTF-8) — exactly `utf8Length(JSON.stringify(record))`, without
 * writing the JSON: what it adds to a message or a request body, counted against the sink's limits
 * while the one serialization is the delivery's own (`sendBatch`, the request body).
 */
export function sinkRecordBytes(record: SinkRecord): number {
  let bytes =
    RECORD_FRAME +
    jsonStringBytes(record.id) +
    jsonStringBytes(record.topic) +
    String(record.partition).length +
    String(record.offset).length +
    String(record.timestamp).length +
    (record.key === null ? 4 : jsonStringBytes(record.key)) +
    jsonStringBytes(record.value);
  for (let i = 0; i < record.headers.length; i++) {
    const header = record.headers[i]!;
    bytes += HEADER_FRAME + (i > 0 ? 1 : 0) + jsonStringBytes(header.key) + jsonStringBytes(header.value);
  }
  return bytes;
}

/** What one delivery came to. */
export type Delivery =
  | { readonly ok: true }
  /** Try the same batch again later (back-off): the endpoint or the queue could not take it now. */
  | { readonly ok: false; readonly retryable: true; readonly error: string }
  /** The batch itself is refused (not worth retrying as it is): delivered again record by record, a record refused alone is dead-lettered. */
  | { readonly ok: false; readonly retryable: false; readonly error: string };

/** A sink's batches: at most `maxRecords` records and `maxBatchBytes` bytes, each record at most `maxRecordBytes` (else dead-lettered). */
export interface SinkLimits {
  readonly maxRecords: number;
  readonly maxBatchBytes: number;
  readonly maxRecordBytes: number;
}

export interface Sink {
  /** What it is, for views and logs: `queue` or `webhook`. */
  readonly kind: string;
  /** Where it delivers, for views and logs (a binding's name, a URL's origin): never a secret. */
  readonly target: string;
  readonly limits: SinkLimits;
  /** The bytes a record counts for against the limits (its JSON, plus what the sink adds per record). */
  recordBytes(record: SinkRecord): number;
  /** Delivers a batch (in offset order). Never throws: a failure is a `Delivery`. */
  deliver(records: readonly SinkRecord[]): Promise<Delivery>;
}

/**
 * A sink whose configuration is wrong where it runs (a binding or a var missing): every delivery
 * fails, retryably, with the reason — visible in `/sinks` and `/metrics` while nothing is lost.
 */
export class MisconfiguredSink implements Sink {
  readonly limits: SinkLimits = { maxRecords: 1, maxBatchBytes: Number.MAX_SAFE_INTEGER, maxRecordBytes: Number.MAX_SAFE_INTEGER };

  constructor(
    readonly kind: string,
    readonly target: string,
    private readonly reason: string,
  ) {}

  recordBytes(record: SinkRecord): number {
    return sinkRecordBytes(record);
  }

  async deliver(): Promise<Delivery> {
    return { ok: false, retryable: true, error: this.reason };
  }
}
