/**
 * A webhook as the output of a topic (docs/connectors.md#webhook-sinks): each batch of a
 * partition's records one HTTP POST of JSON `{"sink": <name>, "records": [SinkRecord…]}` (in
 * offset order, each record as `/kafka` renders it, with its id), and the headers
 *
 * - `Idempotency-Key: <topic>/<partition>/<first offset>-<last offset>`: the same for every retry
 *   of the batch (a batch is always cut at the same first offset; after a refusal it is retried
 *   record by record, then each key names one offset);
 * - `Edge-Streams-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (webhook-signature.ts).
 *
 * A 2xx answer delivered the batch. 400, 413 and 422 refuse it (retried record by record, a record
 * refused alone is dead-lettered); anything else — another status, a network error, no answer
 * within the timeout — is retried with back-off, the same batch again.
 */
import { utf8Length } from "../log/records";
import { topicPartition } from "../names";
import { messageOf } from "../streams/errors";
import { withTimeout } from "../util/timeout";
import type { Delivery, Sink, SinkLimits, SinkRecord } from "./sink";
import { sinkRecordBytes } from "./sink";
import { SIGNATURE_HEADER, signWebhook } from "./webhook-signature";

/** An HTTP client: `fetch` where the sink runs (the core states only what it calls). */
export type HttpPost = (
  url: string,
  init: { method: "POST"; headers: Record<string, string>; body: string },
) => Promise<{ readonly status: number; text(): Promise<string> }>;

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** Statuses that refuse the batch itself: retrying it unchanged would be refused again. */
const REFUSING = new Set([400, 413, 422]);
/** The default bounds of a webhook's batch. */
export const WEBHOOK_DEFAULT_MAX_RECORDS = 100;
export const WEBHOOK_DEFAULT_MAX_BYTES = 1_000_000;
export const WEBHOOK_DEFAULT_TIMEOUT_MS = 10_000;

export interface WebhookOptions {
  readonly sink: string;
  readonly url: string;
  readonly secret: string;
  readonly maxRecords?: number;
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
}

export class WebhookSink implements Sink {
  readonly kind = "webhook";
  readonly target: string;
  readonly limits: SinkLimits;
  private readonly timeoutMs: number;

  constructor(
    private readonly options: WebhookOptions,
    private readonly post: HttpPost,
    private readonly clock: () => number = Date.now,
  ) {
    // Without its query string or fragment (they may hold a token).
    this.target = options.url.split(/[?#]/, 1)[0]!;
    // The body is `{"sink":<name>,"records":[…]}`: the records (each counted with a comma, one
    // more than there are) within what the envelope leaves of maxBytes.
    const room = (options.maxBytes ?? WEBHOOK_DEFAULT_MAX_BYTES) - (utf8Length(JSON.stringify({ sink: options.sink, records: [] })) - 1);
    this.limits = { maxRecords: options.maxRecords ?? WEBHOOK_DEFAULT_MAX_RECORDS, maxBatchBytes: room, maxRecordBytes: room };
    this.timeoutMs = options.timeoutMs ?? WEBHOOK_DEFAULT_TIMEOUT_MS;
  }

  recordBytes(record: SinkRecord): number {
    // The record's JSON and its comma in the array.
    return sinkRecordBytes(record) + 1;
  }

  async deliver(records: readonly SinkRecord[]): Promise<Delivery> {
    const first = records[0]!;
    const last = records[records.length - 1]!;
    const body = JSON.stringify({ sink: this.options.sink, records });
    const headers = {
      "Content-Type": "application/json",
      [IDEMPOTENCY_HEADER]: `${topicPartition(first)}/${first.offset}-${last.offset}`,
      [SIGNATURE_HEADER]: await signWebhook(this.options.secret, body, this.clock()),
    };
    const request = this.post(this.options.url, { method: "POST", headers, body }).then(
      async (response) => ({ response, text: await response.text().catch(() => "") }),
      (error: unknown) => ({ error: messageOf(error) }),
    );
    const answer = await withTimeout(request, this.timeoutMs, { error: `no answer within ${this.timeoutMs} ms` });
    if ("error" in answer) return { ok: false, retryable: true, error: answer.error };
    const { status } = answer.response;
    if (status >= 200 && status < 300) return { ok: true };
    const error = `${this.target} answered ${status}${answer.text ? `: ${answer.text.slice(0, 200)}` : ""}`;
    return { ok: false, retryable: !REFUSING.has(status), error };
  }
}
