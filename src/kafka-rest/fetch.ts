/**
 * Bounded reads for `fetch` and `consume`: partitions are read one after another from a shared
 * budget (records and bytes), so one call never holds more than the budget, whatever the number
 * of partitions. As in Kafka, the first record is returned even when it alone is over the bytes.
 */
import type { Log, LogRecord, TopicPartition } from "../log/types";
import { recordBytes } from "../log/records";
import { FETCH_MAX_BYTES, FETCH_MAX_RECORDS, type Message } from "./dialect";
import { topicPartition } from "../names";

export interface PartitionRead extends TopicPartition {
  readonly offset: number;
}

export interface ReadResult {
  readonly messages: Message[];
  /** Where each read partition continues (only partitions that were read). */
  readonly next: Map<string, number>;
}

export function toMessage(tp: TopicPartition, record: LogRecord): Message {
  return {
    topic: tp.topic,
    partition: tp.partition,
    offset: record.offset,
    timestamp: record.timestamp,
    key: record.key,
    value: record.value,
    headers: record.headers.map((h) => ({ key: h.key, value: h.value })),
  };
}

/** Reads the partitions in order until the budget is spent; log errors propagate. */
export async function readBounded(
  log: Log,
  reads: readonly PartitionRead[],
  budget = { maxRecords: FETCH_MAX_RECORDS, maxBytes: FETCH_MAX_BYTES },
): Promise<ReadResult> {
  const messages: Message[] = [];
  const next = new Map<string, number>();
  let records = budget.maxRecords;
  let bytes = budget.maxBytes;
  for (const read of reads) {
    if (records <= 0 || bytes <= 0) break;
    const tp = { topic: read.topic, partition: read.partition };
    const page = await log.fetch(tp, read.offset, { maxRecords: records, maxBytes: bytes });
    for (const record of page.records) {
      messages.push(toMessage(tp, record));
      bytes -= recordBytes(record.key, record.value, record.headers);
    }
    records -= page.records.length;
    next.set(topicPartition(tp), page.nextOffset);
  }
  return { messages, next };
}
