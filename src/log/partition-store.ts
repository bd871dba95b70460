/**
 * One log partition kept in a Durable Object's SQLite storage, as the object's RPC methods see
 * it: a façade composing the parts Kafka names (src/log/partition/):
 *
 * - `LocalLog` (local-log.ts): the kept range and the stored batches — append, fetch, the log start;
 * - `ProducerStateManager` (producer-state-manager.ts): idempotent producers' epochs and sequences;
 * - `LogRetention` (log-retention.ts) and `LogCleaner` (log-cleaner.ts), scheduled by
 *   log-cleaner-manager.ts, with their checkpoint (cleaner-checkpoint.ts), compaction's index
 *   (offset-map.ts) and the freshly appended rows kept parsed for it (fresh-rows.ts);
 * - `GroupOffsets` (group-offsets.ts): consumer groups' committed offsets, fenced by epoch;
 * - `TopicConfigStore` (topic-config-store.ts): the topic's configuration;
 * - `TieredLog` (tiered-log.ts) and `RemoteSegments` (remote-segments.ts): tiered storage's
 *   segments in R2, what moves there next, and retention over them (R2 itself is reached by
 *   src/log/remote-log-manager.ts);
 * - `RecentSourceIds` (source-ids.ts): the message ids of an at-least-once source (a Queue)
 *   appended recently, so that `appendUnseen` appends a redelivered message once;
 * - the schema (migrations.ts) and the transactions every part writes in (transactions.ts).
 *
 * Every write is a single storage transaction, so a batch is in the log whole or not at all.
 */
import { migrate } from "../storage/migrations";
import type { StorageLike } from "../storage/sql";
import { InvalidRecord, LogUnavailable, OffsetOutOfRange } from "./errors";
import { checkBatch } from "./records";
import { arrivingBatch, checkedBatch, type AppendBatch } from "./append-batch";
import { decodeFetch, toEntry, type BatchMeasure, type EncodedFetch, type Entry } from "./record-batch";
import { RecentSourceIds, SOURCE_ID_HEADER, sourceIdOf, type SourceIdWindow } from "./partition/source-ids";
import { compacts, deletes, localRetention, tiers, type TopicConfig } from "./topic-config";
import type {
  AppendResult,
  CommittedOffset,
  UnseenAppendResult,
  FetchBounds,
  FetchResult,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
} from "./types";
import { CleanerCheckpoint } from "./partition/cleaner-checkpoint";
import { FreshRows } from "./partition/fresh-rows";
import { checkCommit, checkGroup, GroupOffsets } from "./partition/group-offsets";
import { checkOffset, LocalLog, type AppendedRow } from "./partition/local-log";
import { LogCleaner, type CleanerBudget } from "./partition/log-cleaner";
import { compactionDueAt, maintenanceDueAt, QUIET_COMPACTION_MS, tieringDueAt, type RowsExpireAt } from "./partition/log-cleaner-manager";
import { LogRetention } from "./partition/log-retention";
import { partitionMigrations } from "./partition/migrations";
import { OffsetMap } from "./partition/offset-map";
import { checkProducerId, ProducerStateManager } from "./partition/producer-state-manager";
import { TopicConfigStore } from "./partition/topic-config-store";
import { PartitionTransactions } from "./partition/transactions";
import { RemoteSegments, type RemoteSegment } from "./partition/remote-segments";
import { TieredLog, type SegmentToTier } from "./partition/tiered-log";
import { segmentBaseOf } from "./partition/segment-format";

export { PRODUCER_EXPIRY_MS } from "./partition/producer-state-manager";
export { QUIET_COMPACTION_MS, RETENTION_CHECK_MS } from "./partition/log-cleaner-manager";
export { Subscribers } from "./partition/subscribers";

/** Work one maintenance call does at most: records read into compaction's index, and rows rewritten. */
export const MAINTENANCE_BUDGET = { indexRecords: 20_000, sweepRows: 200 } as const;
/**
 * The partition alarm's share per invocation (a fifth), more work arming it again at once: a
 * slice runs synchronously and holds the object (and, under wrangler dev, every object of the
 * Worker) meanwhile. A full budget took 30 ms under load, longer than a query waits for anything
 * else. A partition that has been quiet for QUIET_COMPACTION_MS holds up no append: it takes the
 * full budget, so that going quiet costs a few alarms, not dozens (`alarmBudget`).
 */
export const ALARM_MAINTENANCE_BUDGET = { indexRecords: 4_000, sweepRows: 40 } as const;

/** What a partition keeps now. */
export interface PartitionStats extends OffsetRange {
  readonly records: number;
  readonly bytes: number;
  /** With tiered storage: what of it is in R2 (a segment the log start cuts counts whole). */
  readonly remote?: { readonly segments: number; readonly records: number; readonly bytes: number };
  /** The partition's subscription hub is subscribed to it (the partition's object adds it: GET /metrics lists that hub). */
  readonly hub?: boolean;
}

/** What a maintenance call did, and whether more is due at once or when. */
export interface MaintenanceResult {
  readonly deleted: number;
  readonly compacted: number;
  readonly indexed: number;
  /** More work is waiting now (the budget ran out). */
  readonly more: boolean;
  /** When maintenance is next due, if ever. */
  readonly nextAt: number | undefined;
}

export class PartitionStore {
  private readonly tx: PartitionTransactions;
  private readonly log: LocalLog;
  private readonly producers: ProducerStateManager;
  private readonly groups: GroupOffsets;
  private readonly configs: TopicConfigStore;
  private readonly checkpoint: CleanerCheckpoint;
  private readonly fresh = new FreshRows();
  private readonly retention: LogRetention;
  private readonly cleaner: LogCleaner;
  private readonly sourceIds: RecentSourceIds;
  private readonly tiered: TieredLog;
  /** When the oldest local row a tiering may move is past local.retention.ms (as `expiresAt`, for tiered storage). */
  private localExpiresAt: RowsExpireAt;
  /** When this object last appended (in memory: after a restart, unknown). */
  private lastAppendAt: number | undefined;
  /** When the object started: the quiet a compaction waits for counts from here while `lastAppendAt` is unknown. */
  private readonly startedAt: number;
  /** When the oldest row time retention may remove is past retention.ms (see `RowsExpireAt`); learnt at each check. */
  private expiresAt: RowsExpireAt;

  constructor(
    storage: StorageLike,
    private readonly clock: () => number = Date.now,
    sourceIdWindow?: SourceIdWindow,
  ) {
    this.startedAt = clock();
    const tx = new PartitionTransactions(storage);
    storage.transactionSync(() => migrate(tx.db, partitionMigrations));
    const index = new OffsetMap(tx);
    const segments = new RemoteSegments(tx);
    this.tx = tx;
    this.log = new LocalLog(
      tx,
      (offset) => {
        index.forgetBelow(offset);
        segments.dropBelow(offset);
      },
      (offset, logEnd) => this.producers.beforeRemovingBelow(offset, logEnd),
    );
    this.producers = new ProducerStateManager(tx, (from, to) => this.log.storedEntries(from, to));
    this.groups = new GroupOffsets(tx);
    this.configs = new TopicConfigStore(tx);
    this.checkpoint = new CleanerCheckpoint(tx);
    tx.onRollback(() => this.fresh.clear());
    this.retention = new LogRetention(tx, this.log, this.checkpoint);
    this.cleaner = new LogCleaner(tx, this.checkpoint, index, this.fresh, (upTo, logEnd) => this.producers.coverBelow(upTo, logEnd));
    this.sourceIds = new RecentSourceIds(tx, sourceIdWindow);
    this.tiered = new TieredLog(tx, this.log, segments);
  }

  /** The partition this object holds, once it holds one. */
  boundPartition(): TopicPartition | undefined {
    return this.log.boundPartition();
  }

  append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): AppendResult {
    const now = this.clock();
    const checked = checkBatch(records, now);
    const sizes = Uint32Array.from(checked, (r) => r.bytes);
    return this.appendBatch(tp, checkedBatch({ entries: records.map(toEntry), sizes }, undefined), producer, now);
  }

  /**
   * `append` of an encoded batch (see record-batch.ts), stored as it came when it is valid: parsed
   * and checked first, unless its sender measured it (`encodeBatch`) and vouches for it.
   */
  appendEncoded(tp: TopicPartition, records: string, producer?: ProducerId, measure?: BatchMeasure): AppendResult {
    const now = this.clock();
    return this.appendBatch(tp, arrivingBatch(records, measure), producer, now);
  }

  /**
   * `appendEncoded` of records from an at-least-once source (a Queue), each carrying its message's
   * id (partition/source-ids.ts): those whose id this partition appended within its window, or
   * that repeat an id earlier in the batch, are left out; the rest are appended as one batch. When
   * all are left out nothing is written (`duplicate`). Synchronous from the check to the append,
   * so a redelivery arriving meanwhile sees the ids.
   */
  appendUnseen(tp: TopicPartition, records: string, measure?: BatchMeasure): UnseenAppendResult {
    const now = this.clock();
    const arriving = arrivingBatch(records, measure);
    const entries = arriving.entries();
    const ids: string[] = [];
    const keep: number[] = [];
    const inBatch = new Set<string>();
    entries.forEach((entry, index) => {
      const id = sourceIdOf(entry);
      if (id === undefined) throw new InvalidRecord(`record ${index} carries no ${SOURCE_ID_HEADER} header`);
      if (inBatch.has(id) || this.sourceIds.has(id, now)) return;
      inBatch.add(id);
      ids.push(id);
      keep.push(index);
    });
    const duplicates = entries.length - keep.length;
    if (keep.length === 0) return { baseOffset: this.tx.run(() => this.log.range(tp).logEnd), count: 0, duplicate: true, duplicates };
    const batch =
      duplicates === 0
        ? arriving
        : checkedBatch({ entries: keep.map((i) => entries[i]!), sizes: Uint32Array.from(keep, (i) => arriving.sizes[i]!) }, undefined);
    const result = this.appendBatch(tp, batch, undefined, now);
    this.sourceIds.remember(ids, now);
    return { ...result, duplicates };
  }

  private appendBatch(tp: TopicPartition, batch: AppendBatch, producer: ProducerId | undefined, now: number): AppendResult {
    if (producer) checkProducerId(producer);
    let appended: AppendedRow[] = [];
    const result = this.tx.run((): AppendResult => {
      const range = this.log.range(tp);
      if (producer) {
        const retry = this.producers.admit(producer, batch, range.logStart, now);
        if (retry) return retry;
      }
      const baseOffset = range.logEnd;
      appended = this.log.append(range, batch, now, producer);
      this.producers.appended(producer, baseOffset, batch.count, appended.length, now, range.logEnd);
      this.producers.maybePrune(now, range.logEnd);
      this.lastAppendAt = now;
      this.appendedRows(now);
      return { baseOffset, count: batch.count, duplicate: false };
    });
    const config = this.configs.current();
    if (!result.duplicate && config && compacts(config)) {
      for (const { base, row } of appended) this.fresh.remember(base, row.records, row.entries ?? (JSON.parse(row.records) as Entry[]));
    }
    return result;
  }

  /**
   * Rows appended at `now` are past retention.ms no sooner than `now` + retention.ms. On a
   * compacted topic the row that was newest may go now too, whose time is not known here: the
   * next check learns it.
   */
  private appendedRows(now: number): void {
    const config = this.configs.current();
    const local = config && localRetention(config);
    if (local && local.ms >= 0 && this.localExpiresAt !== undefined) this.localExpiresAt = Math.min(this.localExpiresAt ?? Infinity, now + local.ms + 1);
    if (this.expiresAt === undefined || !config) return;
    if (compacts(config)) this.expiresAt = undefined;
    else this.expiresAt = Math.min(this.expiresAt ?? Infinity, now + config["retention.ms"] + 1);
  }

  fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): FetchResult {
    return decodeFetch(this.fetchEncoded(tp, offset, bounds));
  }

  /**
   * `fetch`, encoded: stored batches the bounds take whole go as they are stored (see LocalLog).
   * Local only: an offset that remote storage holds is read through RemoteLogManager.
   */
  fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): EncodedFetch {
    if (this.remoteSegmentFor(tp, offset)) throw new LogUnavailable(`offset ${offset} is in remote storage: read it through the remote log`);
    return this.log.fetchEncoded(tp, offset, bounds);
  }

  /** The remote segment holding `offset`, when the log keeps it and it is below the local part. */
  remoteSegmentFor(tp: TopicPartition, offset: number): RemoteSegment | undefined {
    return this.tiered.segmentFor(this.log.range(tp), offset);
  }

  /** The first remote segment with a record at or after `timestamp` (offsetForTimestamp below the local part). */
  remoteSegmentForTimestamp(tp: TopicPartition, timestamp: number): RemoteSegment | undefined {
    const { logStart } = this.log.range(tp);
    for (const segment of this.tiered.segments.from(logStart)) if (segment.max_timestamp >= timestamp) return segment;
    return undefined;
  }

  /** The oldest local rows beyond local.retention.*, to write as one remote segment; undefined: none (or no tiered storage). */
  segmentToTier(tp: TopicPartition, now: number): SegmentToTier | undefined {
    const config = this.configs.current();
    if (!config || !tiers(config)) return undefined;
    return this.tiered.next(this.log.range(tp), config, now);
  }

  /**
   * Records a segment whose object `key` is in R2, in one transaction: its row in, its local rows
   * out (one row written per segment, plus the deletes). False when the rows changed meanwhile: the
   * object is then left to delete.
   */
  segmentTiered(tp: TopicPartition, segment: SegmentToTier, key: string): boolean {
    const config = this.configs.current();
    return this.tx.run(() => {
      const range = this.log.range(tp);
      const done = this.tiered.record(range, segment, key);
      if (config) this.localExpiresAt = this.tiered.localExpiresAt(range, config);
      return done;
    });
  }

  /**
   * Notes the object `key` a tiering is about to put, before the put (one row; `segmentTiered`
   * drops it in its transaction): a crash between the put and that transaction leaves the note, so
   * an object no segment row names is deleted unless the retry records it (Kafka's COPY_SEGMENT_STARTED).
   */
  segmentUploading(key: string): void {
    this.tx.run(() => this.tiered.segments.toDelete(key));
  }

  /** Objects in R2 whose segment went, still to delete (at most `limit`). */
  remoteDeletions(limit: number): string[] {
    return this.tiered.segments.deletions(limit);
  }

  /** The object `key` is gone from R2. */
  remoteDeleted(key: string): void {
    this.tx.run(() => this.tiered.segments.deleted(key));
  }

  /** For the orphan sweep: whether the partition uses R2 (its topic tiers, or segments are there), and whether an object of its prefix is a segment's or noted. */
  usesRemoteStorage(): boolean {
    const config = this.configs.current();
    return (!!config && tiers(config)) || this.tiered.segments.any();
  }

  remoteObjectKnown(key: string): boolean {
    return this.tiered.segments.knows(key, segmentBaseOf(key));
  }

  offsets(tp: TopicPartition): OffsetRange {
    return this.log.offsets(tp);
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): number {
    return this.log.offsetForTimestamp(tp, timestamp);
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): OffsetRange {
    checkOffset(offset);
    return this.tx.run(() => {
      const range = this.log.range(tp);
      const { logEnd } = range;
      if (offset > logEnd) throw new OffsetOutOfRange(`cannot delete below ${offset}: the end offset is ${logEnd}`);
      this.log.advanceStart(range, offset);
      return { earliest: range.logStart, latest: logEnd };
    });
  }

  /** What the partition keeps now: its range, and the records and bytes in it. */
  stats(tp: TopicPartition): PartitionStats {
    const { logStart, logEnd } = this.log.range(tp);
    const local = this.log.kept(this.tiered.segments.localStart(logStart));
    const remote = this.tiered.segments.totals(logStart);
    if (remote.segments === 0) return { earliest: logStart, latest: logEnd, ...local };
    return { earliest: logStart, latest: logEnd, records: local.records + remote.records, bytes: local.bytes + remote.bytes, remote };
  }

  /** Whether the partition's task readers are behind its end (see GroupOffsets' `readers`). */
  readers(tp: TopicPartition): "behind" | "unknown" | "caught-up" {
    return this.groups.readers(this.log.range(tp).logEnd);
  }

  /** The topic's configuration as last given (by the producers' side: see `configure`); null before any. */
  config(): TopicConfig | null {
    return this.configs.current();
  }

  /** Records the topic's configuration (written only when it changed). */
  configure(tp: TopicPartition, config: TopicConfig): void {
    this.configs.configure(config, () => this.log.range(tp));
  }

  /**
   * When maintenance (retention, compaction) is next due for this partition, from what is in
   * memory: cheap enough to ask after every append. Undefined: never, as things stand.
   */
  maintenanceDueAt(now: number): number | undefined {
    const config = this.configs.current();
    const range = this.log.cachedRange();
    if (!config || !range) return undefined;
    // Objects left to delete in R2 are deleted at once (a crash left them, or retention just did).
    if (this.tiered.segments.deletionsPending()) return now;
    if (range.logEnd === range.logStart) return undefined;
    const state = this.checkpoint.read(range.logStart);
    const due = maintenanceDueAt(config, range, state, this.scheduleInputs(), now);
    const tiering = tieringDueAt(config, state.lastRetention, this.localExpiresAt, this.lastAppendAt === undefined || this.lastAppendAt >= state.lastRetention);
    return due === undefined ? tiering : tiering === undefined ? due : Math.min(due, tiering);
  }

  private scheduleInputs() {
    return { lastAppendAt: this.lastAppendAt, quietSince: this.lastAppendAt ?? this.startedAt, expiresAt: this.expiresAt };
  }

  /** The budget of a maintenance step run by the partition's alarm at `now` (see ALARM_MAINTENANCE_BUDGET). */
  alarmBudget(now: number): CleanerBudget {
    return now >= (this.lastAppendAt ?? this.startedAt) + QUIET_COMPACTION_MS ? MAINTENANCE_BUDGET : ALARM_MAINTENANCE_BUDGET;
  }

  /**
   * Applies the topic's retention and compaction, within `budget`: records past `retention.ms`
   * or beyond `retention.bytes` go (whole rows, oldest first), and compaction reads more records
   * into its index and thins the rows below it. Every step is a transaction of its own, so a
   * crash anywhere loses nothing and leaves a readable partition; the next call goes on. Without
   * `force` (the partition's alarm), compaction runs only when due (see log-cleaner-manager.ts).
   */
  maintain(tp: TopicPartition, now: number, budget: CleanerBudget = MAINTENANCE_BUDGET, force = true): MaintenanceResult {
    const config = this.configs.current();
    if (!config) return { deleted: 0, compacted: 0, indexed: 0, more: false, nextAt: undefined };
    let deleted = 0;
    if (deletes(config)) {
      deleted = this.tx.run(() => {
        const range = this.log.range(tp);
        // Remote segments hold the oldest records: while some remain, the younger local rows stay.
        const remote = this.tiered.applyRetention(range, config, now);
        if (!remote.remaining) return remote.deleted + this.retention.apply(range, config, now);
        this.checkpoint.note({ ...this.checkpoint.read(range.logStart), lastRetention: now });
        return remote.deleted;
      });
      const range = this.log.range(tp);
      const remoteAt = this.tiered.segments.oldestTime(range.logStart);
      const localAt = this.retention.expiresAt(range, config);
      const remoteDue = remoteAt === null || config["retention.ms"] < 0 ? null : remoteAt + config["retention.ms"] + 1;
      this.expiresAt = remoteDue ?? localAt;
      if (tiers(config)) this.localExpiresAt = this.tiered.localExpiresAt(range, config);
    }
    let indexed = 0;
    let compacted = 0;
    let more = false;
    const range = this.log.range(tp);
    const due =
      compacts(config) &&
      (force || (compactionDueAt(config, range, this.checkpoint.read(range.logStart), this.lastAppendAt ?? this.startedAt, now) ?? Infinity) <= now);
    if (due) ({ indexed, compacted, more } = this.cleaner.compact(range, config, now, budget));
    return { deleted, compacted, indexed, more, nextAt: more ? now : this.maintenanceDueAt(now) };
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): void {
    checkCommit(group, committed);
    this.tx.run(() => {
      const range = this.log.range(tp);
      this.groups.commit(group, committed, range.logEnd, this.clock());
      // Kafka Streams' repartition purge: what the reading task has committed past is not read again.
      if ((committed.epoch ?? null) !== null && this.configs.current()?.["purge.on.commit"]) this.log.advanceStart(range, committed.offset);
    });
  }

  committedOffset(group: string, tp: TopicPartition): CommittedOffset | null {
    checkGroup(group);
    this.log.range(tp);
    return this.groups.committed(group);
  }
}
