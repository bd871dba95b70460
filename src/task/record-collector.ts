/**
 * The record collector of one task instance. During a commit it gathers what the topology sends
 * (changelog and output records) per partition, in order; at the end of the commit it writes them
 * to the outbox, in the commit's transaction. It keeps no acknowledged offsets at all: the
 * checkpoint moves only inside the transaction that removes an acknowledged batch from the
 * outbox, and only for the incarnation that wrote it (see checkpoint.ts). So no offset can
 * survive a close or a wipe — the KAFKA-16017 bug is impossible by construction.
 */
import { partitionForKey } from "../log/partitioner";
import { TOMBSTONE_HEADER } from "../log/stored-batch";
import type { ProducerRecord, TopicPartition } from "../log/types";
import type { OutgoingRecord, RecordSink } from "../streams/runtime/types";
import type { Outbox } from "./outbox";
import { CHANGELOG_PHASE, ENTRY_OVERHEAD_CHARS, OUTPUT_PHASE } from "./outbox";

/** Header marking a changelog or output record as a delete (the log keeps string values only). */
export { TOMBSTONE_HEADER };

export type { InputPositions } from "./task-storage";

interface PendingBatch {
  readonly tp: TopicPartition;
  readonly changelog: boolean;
  readonly records: ProducerRecord[];
  /** The records' `estimatedChars`, summed as they come (the outbox then need not go over them for it). */
  chars: number;
}

export class RecordCollector implements RecordSink {
  /** Per topic, per partition: looked up without building a name or an object per record. */
  private pending = new Map<string, PendingBatch[]>();
  /** The batches in the order their partitions were first sent to this commit (the order they go to the outbox). */
  private order: PendingBatch[] = [];
  private roundRobin = 0;

  constructor(
    /** Partition counts of every topic the task may send to. */
    private readonly partitions: (topic: string) => number,
    /** Changelog topics of the task's stores. */
    private readonly changelogTopics: ReadonlySet<string>,
  ) {}

  /** Buffers a record for the current commit; keyed records without a partition use murmur2. */
  send(record: OutgoingRecord): void {
    const partition = record.partition ?? this.partitionFor(record.topic, record.key);
    let byPartition = this.pending.get(record.topic);
    if (!byPartition) {
      byPartition = [];
      this.pending.set(record.topic, byPartition);
    }
    let batch = byPartition[partition];
    if (!batch) {
      batch = { tp: { topic: record.topic, partition }, changelog: this.changelogTopics.has(record.topic), records: [], chars: 0 };
      byPartition[partition] = batch;
      this.order.push(batch);
    }
    const headers = record.value === null ? [...record.headers, { key: TOMBSTONE_HEADER, value: "1" }] : record.headers;
    const { key } = record;
    const value = record.value ?? "";
    batch.records.push({ key, value, timestamp: record.timestamp, headers });
    // `estimatedChars` of that record, counted here where its fields are at hand.
    let chars = ENTRY_OVERHEAD_CHARS + (typeof key === "string" ? key.length : 0) + (typeof value === "string" ? value.length : 0);
    if (Array.isArray(headers)) for (let i = 0; i < headers.length; i++) chars += (headers[i]?.key?.length ?? 0) + (headers[i]?.value?.length ?? 0) + 6;
    batch.chars += chars;
  }

  private partitionFor(topic: string, key: string | null): number {
    const count = this.partitions(topic);
    return key === null ? this.roundRobin++ % count : partitionForKey(key, count);
  }

  /**
   * Ends the commit: writes the buffered batches to the outbox, changelog phase first. Returns the
   * number of records written. Call inside the commit's transaction.
   */
  writeTo(outbox: Outbox, commitId: number): number {
    let written = 0;
    const joined = outbox.joinableCommit(commitId);
    for (const { tp, changelog, records, chars } of this.order) {
      outbox.add(joined, changelog ? CHANGELOG_PHASE : OUTPUT_PHASE, tp, records, chars);
      written += records.length;
    }
    this.discard();
    return written;
  }

  /** Forgets what the current commit buffered (the commit was rolled back). */
  discard(): void {
    this.pending.clear();
    this.order = [];
  }
}
