/**
 * The log: topics of fixed partition counts, each partition an append-only sequence of records
 * with dense offsets. Everything above it (ingest, tasks, restoration) depends on this interface
 * only; the embedded `LogPartition` objects (`DurableLog`) and `@upstash/kafka` (`UpstashLog`,
 * src/kafka-rest/upstash-log.ts) implement it, each saying what it can do (`LogCapabilities`).
 */
export interface Header {
  readonly key: string;
  readonly value: string;
}

/** A record as a producer sends it. Keys and values are already serialized (see serdes). */
export interface ProducerRecord {
  readonly key: string | null;
  readonly value: string;
  readonly headers?: readonly Header[];
  /** Milliseconds since the epoch; the log assigns the append time when absent. */
  readonly timestamp?: number;
}

/** A record as the log stores and returns it. */
export interface LogRecord {
  readonly offset: number;
  readonly key: string | null;
  readonly value: string;
  readonly headers: readonly Header[];
  readonly timestamp: number;
}

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/**
 * Who is appending, for idempotence and fencing: a retried batch (same producer, epoch and
 * sequence) is answered with its original offsets and not written again; a batch from an epoch
 * older than the newest the partition has seen for that producer is rejected.
 * Sequences count batches per producer and partition, starting at 0 in every epoch.
 */
export interface ProducerId {
  readonly producerId: string;
  readonly epoch: number;
  readonly sequence: number;
}

export interface AppendResult {
  /** Offset of the first record of the batch; the batch occupies `baseOffset … baseOffset+count-1`. */
  readonly baseOffset: number;
  readonly count: number;
  /** True when this was a retry of a batch already written: nothing new was appended. */
  readonly duplicate: boolean;
  /**
   * True when live subscribers wait on the partition's appends (a subscription hub: a store watch
   * or a topic tail): a producer that lingers should not (src/task/send-schedule.ts). Absent: none,
   * or a log that cannot tell.
   */
  readonly watched?: boolean;
}

/** What `appendUnseen` did: `AppendResult` of the records appended, and how many it left out as seen already. */
export interface UnseenAppendResult extends AppendResult {
  readonly duplicates: number;
}

export interface FetchBounds {
  /** At most this many records. */
  readonly maxRecords: number;
  /**
   * At most about this many bytes of keys, values and headers (UTF-8). As in Kafka, the first
   * record is returned even when it alone is larger, so a consumer always makes progress.
   */
  readonly maxBytes: number;
  /**
   * Who fetches, when it is a subscriber the partition wakes by name (a restore worker): the
   * partition then knows it read since its last wake-up (src/log/wake-ups.ts). Optional; a log
   * that wakes no one ignores it.
   */
  readonly reader?: string;
  /**
   * `fetchEncoded` only: a stored batch the bounds cut (or the fetch starts inside) comes as it is
   * stored, with the stretch of it the fetch returns (`EncodedBatch.from`, `count`), rather than
   * parsed and encoded again at the log. For a reader that parses each stored batch once however
   * many fetches cut it (a restore window); what crosses may then exceed the bytes bound by the
   * cut batches' other records. A log that ignores it cuts them as before.
   */
  readonly uncut?: boolean;
}

export interface FetchResult {
  readonly records: LogRecord[];
  /** The offset the next fetch should start from. */
  readonly nextOffset: number;
  readonly earliest: number;
  /** The end offset (the offset the next appended record will get). */
  readonly latest: number;
}

/** A stretch of consecutive records of one stored batch, encoded. */
export interface EncodedBatch {
  /** Offset of the first entry of `records`. */
  readonly base: number;
  /** The timestamp of entries whose timestamp is null (the batch's append time). */
  readonly appendTime: number;
  /** The entries, as a JSON array. */
  readonly records: string;
  /** Each entry's offset, when they are not `base`, `base + 1`, …: compaction removed some between them. */
  readonly offsets?: readonly number[];
  /**
   * A stored batch sent uncut (`FetchBounds.uncut`): the batch is entries `from` … `from + count - 1`
   * of `records` (`base` and `offsets` are theirs); the others are not part of the fetch.
   */
  readonly from?: number;
  readonly count?: number;
  /**
   * Uncut fetches only: each of the batch's records' size as the log measured it when appended
   * (key, value and headers in UTF-8 bytes, as `recordBytes`), so the reader need not measure them again.
   */
  readonly sizes?: Uint32Array;
}

/** A fetch, encoded: `FetchResult` with batches in place of records. */
export interface EncodedFetch {
  readonly batches: EncodedBatch[];
  readonly nextOffset: number;
  readonly earliest: number;
  readonly latest: number;
}

export interface OffsetRange {
  /** Offset of the first record still kept (advances with retention). */
  readonly earliest: number;
  /** End offset: one past the last record. */
  readonly latest: number;
}

export interface CommittedOffset {
  readonly offset: number;
  readonly metadata: string;
  /**
   * The committer's epoch, when it has one (a task instance's producer epoch). A commit carrying
   * an epoch older than one already recorded for the group and partition is `ProducerFenced` (I3).
   */
  readonly epoch?: number;
}

/**
 * Batches a log remembers per producer and partition to answer retries (Kafka keeps five): a
 * producer must not have more unacknowledged batches than this in one partition, or a resend of
 * the oldest is refused as out of order.
 */
export const REMEMBERED_BATCHES = 5;

/**
 * What the encoding side measured of a batch it encoded (`encodeBatch`, record-batch.ts): what the partition
 * otherwise parses the batch again for. A partition given it stores the batch as it is, unparsed:
 * the caller vouches that it is `encodeBatch`'s measure of exactly that text.
 */
export interface BatchMeasure {
  /** Each record's size (UTF-8 bytes of key, value and headers), as `checkEntries` counts it. */
  readonly sizes: Uint32Array;
  /** The greatest timestamp a record gave; -1 when none gave one. */
  readonly maxTimestamp: number;
  /** Whether some record gave no timestamp (the log's append time stands for it). */
  readonly untimed: boolean;
}

/**
 * What a backend does beyond the calls every log answers. The runtime adapts to these, never to a
 * backend's name or class; every field is required, so a new backend must say each one (a log
 * taken to wake readers when it does not would leave them waiting forever).
 */
export interface LogCapabilities {
  /**
   * An append wakes the readers subscribed to its partition (task instances, restore workers).
   * Without it, readers poll: a running task its input, a restore worker its standbys' changelogs.
   */
  readonly wakesReaders: boolean;
  /**
   * The application's first append to a partition its tasks read makes those tasks (the partition
   * tells the coordinator). Without it, an appender gets the assignment first, which makes them:
   * tasks made after their first records would not process them.
   */
  readonly startsTasks: boolean;
  /** `deleteRecordsBefore` deletes (else it throws): retention can be asked of the log. */
  readonly deletesRecords: boolean;
}

/** The log, as the rest of Edge Streams sees it. */
export interface Log {
  readonly capabilities: LogCapabilities;
  /**
   * The same log, its appends made for producers outside the application (the Kafka REST
   * endpoint): they never start the application's tasks, as a producer outside may be another
   * deployment using this one as its log, whose tasks read these partitions under the same group.
   * A log whose appends never start tasks answers itself.
   */
  forExternalProducers(): Log;
  /** The declared topics and their partition counts. */
  topics(): Promise<ReadonlyMap<string, number>>;
  /** Appends a batch to one partition atomically: all of it or none of it. */
  append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): Promise<AppendResult>;
  /**
   * Optional: `append` of a batch encoded by `encodeBatch` (record-batch.ts), for a caller that
   * keeps its batches encoded anyway (a task's outbox), so that they need not be encoded again;
   * with `encodeBatch`'s measure of it, so that the log need not parse it again either.
   */
  appendEncoded?(tp: TopicPartition, records: string, producer?: ProducerId, measure?: BatchMeasure): Promise<AppendResult>;
  /**
   * Optional: appends the records of an at-least-once source (a Queue), each carrying its
   * message's id in the `edge-streams.source-id` header, leaving out those whose id the partition
   * appended recently (src/log/partition/source-ids.ts): a redelivered message is appended once.
   * A log without it appends redeliveries again.
   */
  appendUnseen?(tp: TopicPartition, records: readonly ProducerRecord[]): Promise<UnseenAppendResult>;
  /** Reads from `offset` within the bounds; an offset outside the kept range is `OffsetOutOfRange`. */
  fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<FetchResult>;
  /**
   * Optional: `fetch`, its records left as the stored batches they cross as (record-batch.ts), for
   * a reader that keeps few of the records it reads (a restore window keeps each key's latest):
   * it decodes only what it keeps.
   */
  fetchEncoded?(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<EncodedFetch>;
  offsets(tp: TopicPartition): Promise<OffsetRange>;
  /** The first offset whose timestamp is at or after `timestamp`, or the end offset when none is. */
  offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number>;
  /** Retention: drops the records below `offset` (at most the end offset). Returns the new range. */
  deleteRecordsBefore(tp: TopicPartition, offset: number): Promise<OffsetRange>;
  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<void>;
  /** The group's committed offset for the partition, or null when it never committed one. */
  committedOffset(group: string, tp: TopicPartition): Promise<CommittedOffset | null>;
  /** Optional: what a partition keeps now, its records and bytes (after retention and compaction). */
  stats?(tp: TopicPartition): Promise<
    OffsetRange & {
      readonly records: number;
      readonly bytes: number;
      readonly remote?: { readonly segments: number; readonly records: number; readonly bytes: number };
      /** The partition's subscription hub is subscribed to it (it holds sockets: a tail's, a store watch's); the embedded log only. */
      readonly hub?: boolean;
    }
  >;
}
