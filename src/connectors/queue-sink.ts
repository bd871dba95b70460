/**
 * A Cloudflare Queue as the output of a topic (docs/connectors.md#a-queue-as-an-output): each
 * record one message, its body the record as JSON (`SinkRecord`: the record as `/kafka` renders
 * it, with its id `<topic>/<partition>/<offset>`), `contentType: "json"`, sent with `sendBatch`
 * within Queues' limits — at most 100 messages and 256 KB a batch, 128 KB a message (1 KB =
 * 1,000 bytes), each message counting about 100 bytes of Queues' own metadata besides its body.
 * A record whose message would be larger is dead-lettered by the delivery machinery.
 */
import { messageOf } from "../streams/errors";
import type { Delivery, Sink, SinkLimits, SinkRecord } from "./sink";
import { sinkRecordBytes } from "./sink";

/** The part of a Workers `Queue` producer binding a sink uses. */
export interface QueueProducer {
  sendBatch(messages: Iterable<{ body: unknown; contentType?: "json" }>): Promise<unknown>;
}

/** Queues' limits (developers.cloudflare.com/queues/platform/limits): messages and bytes per `sendBatch`, bytes per message. */
export const QUEUE_MAX_BATCH_MESSAGES = 100;
export const QUEUE_MAX_BATCH_BYTES = 256_000;
export const QUEUE_MAX_MESSAGE_BYTES = 128_000;
/** What Queues adds to each message, counted against its limits ("up to ~100 bytes of internal metadata"). */
export const QUEUE_MESSAGE_OVERHEAD_BYTES = 100;

export class QueueSink implements Sink {
  readonly kind = "queue";
  readonly limits: SinkLimits;

  /** `maxMessageBytes` lowers the per-message limit (tests; a consumer with a smaller limit of its own). */
  constructor(
    readonly target: string,
    private readonly queue: QueueProducer,
    maxMessageBytes = QUEUE_MAX_MESSAGE_BYTES,
  ) {
    this.limits = {
      maxRecords: QUEUE_MAX_BATCH_MESSAGES,
      maxBatchBytes: QUEUE_MAX_BATCH_BYTES,
      maxRecordBytes: Math.min(maxMessageBytes, QUEUE_MAX_MESSAGE_BYTES),
    };
  }

  recordBytes(record: SinkRecord): number {
    return sinkRecordBytes(record) + QUEUE_MESSAGE_OVERHEAD_BYTES;
  }

  async deliver(records: readonly SinkRecord[]): Promise<Delivery> {
    try {
      await this.queue.sendBatch(records.map((body) => ({ body, contentType: "json" as const })));
      return { ok: true };
    } catch (error) {
      // Queues refuses whole batches for reasons that pass (throughput, backlog, an outage): retried.
      return { ok: false, retryable: true, error: messageOf(error) };
    }
  }
}
