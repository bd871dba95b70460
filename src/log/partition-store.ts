/**
 * One log partition kept in a Durable Object's SQLite storage: records with dense offsets, the
 * kept range, idempotent-producer state and consumer groups' committed offsets. Every write is a
 * single storage transaction, so a batch is in the log whole or not at all.
 *
 * Records are stored as Kafka stores them: one row per appended batch (`record_batches`), the
 * batch's records encoded together (see record-batch.ts) with each record's size beside them. A
 * fetch returns the stored batches its bounds take whole as they are, and parses and slices only a
 * batch it takes part of; retention drops whole batches and keeps the exact start offset in
 * `partition_meta`.
 */
import type { Migration } from "../storage/migrations";
import { migrate } from "../storage/migrations";
import { Sql, sql, type StorageLike } from "../storage/sql";
import { DuplicateSequenceMismatch, InvalidRecord, OffsetOutOfRange, OutOfOrderSequence, ProducerFenced, UnknownTopicOrPartition } from "./errors";
import { compactionDue, survivors, type LatestRecord } from "./compaction";
import { checkBatch } from "./records";
import { arrivingBatch, checkedBatch, rowsOf, type AppendBatch, type AppendRow } from "./append-batch";
import { decodeFetch, sameEntry, toEntry, type BatchMeasure, type EncodedBatch, type EncodedFetch, type Entry } from "./record-batch";
import { entryOffset, firstEntryAt, isTombstone, type StoredRow } from "./stored-batch";
import { compacts, deletes, type TopicConfig } from "./topic-config";
import {
  REMEMBERED_BATCHES,
  type AppendResult,
  type CommittedOffset,
  type FetchBounds,
  type FetchResult,
  type Header,
  type OffsetRange,
  type ProducerId,
  type ProducerRecord,
  type TopicPartition,
} from "./types";

/** A producer not heard from for this long is forgotten (Kafka's producer id expiration). */
export const PRODUCER_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

const migrations: Migration[] = [
  {
    id: 1,
    description: "records, kept range, producers, committed offsets",
    up: (db) =>
      db.script(`
        CREATE TABLE partition_meta (
          only INTEGER PRIMARY KEY CHECK (only = 1),
          topic TEXT NOT NULL, partition INTEGER NOT NULL,
          log_start INTEGER NOT NULL, log_end INTEGER NOT NULL);
        CREATE TABLE records (
          offset INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, headers TEXT,
          timestamp INTEGER NOT NULL, bytes INTEGER NOT NULL);
        CREATE TABLE producers (
          producer_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, last_seen INTEGER NOT NULL);
        CREATE TABLE producer_batches (
          producer_id TEXT NOT NULL, sequence INTEGER NOT NULL, base_offset INTEGER NOT NULL,
          count INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (producer_id, sequence));
        CREATE TABLE committed_offsets (
          group_id TEXT PRIMARY KEY, offset INTEGER NOT NULL, metadata TEXT NOT NULL,
          committed_at INTEGER NOT NULL);
      `),
  },
  {
    id: 2,
    description: "subscribers woken after appends",
    up: (db) => db.script(`CREATE TABLE subscribers (name TEXT PRIMARY KEY, since INTEGER NOT NULL);`),
  },
  {
    id: 3,
    description: "the epoch of the last committer of each group, for fencing",
    up: (db) => db.script(`ALTER TABLE committed_offsets ADD COLUMN epoch INTEGER;`),
  },
  {
    id: 4,
    description: "one row per appended batch instead of one per record; retries compared with the stored records",
    up: (db) => {
      db.script(`
        CREATE TABLE record_batches (
          base_offset INTEGER PRIMARY KEY, count INTEGER NOT NULL, bytes INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL, append_time INTEGER NOT NULL,
          sizes BLOB NOT NULL, records TEXT NOT NULL);
        ALTER TABLE producer_batches DROP COLUMN digest;
      `);
      // Records kept so far become batches of one (their appends' boundaries were not kept).
      for (let from = 0; ; ) {
        const rows = db.all<{ offset: number; key: string | null; value: string; headers: string | null; timestamp: number; bytes: number }>(
          sql`SELECT offset, key, value, headers, timestamp, bytes FROM records WHERE offset >= ${from} ORDER BY offset LIMIT 256`,
        );
        for (const row of rows) {
          const headers = row.headers ? (JSON.parse(row.headers) as Header[]) : [];
          const entry = toEntry({ key: row.key, value: row.value, headers, timestamp: row.timestamp });
          db.run(sql`INSERT INTO record_batches (base_offset, count, bytes, max_timestamp, append_time, sizes, records)
                     VALUES (${row.offset}, 1, ${row.bytes}, ${row.timestamp}, ${row.timestamp}, ${new Uint32Array([row.bytes]).buffer},
                             ${JSON.stringify([entry])})`);
        }
        if (rows.length < 256) break;
        from = rows[rows.length - 1]!.offset + 1;
      }
      db.script(`DROP TABLE records;`);
    },
  },
  {
    id: 5,
    description: "rows that compaction thinned (span, offsets), the topic's configuration, compaction's index and progress",
    up: (db) =>
      db.script(`
        ALTER TABLE record_batches ADD COLUMN span INTEGER;
        UPDATE record_batches SET span = count;
        ALTER TABLE record_batches ADD COLUMN offsets BLOB;
        ALTER TABLE partition_meta ADD COLUMN config TEXT;
        CREATE TABLE compaction (
          only INTEGER PRIMARY KEY CHECK (only = 1),
          indexed_to INTEGER NOT NULL, sweep_cursor INTEGER, sweep_to INTEGER NOT NULL,
          tombstones_due INTEGER, last_retention INTEGER NOT NULL, clean_records INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE latest_keys (key TEXT PRIMARY KEY, offset INTEGER NOT NULL, tombstone INTEGER NOT NULL) WITHOUT ROWID;
      `),
  },
];

/**
 * A compacted partition that took no append for this long is compacted whatever its dirty ratio:
 * a quiet changelog ends up holding one record per key, so a restore after a quiet period replays
 * the state, not its recent history.
 */
export const QUIET_COMPACTION_MS = 10_000;
/** How often time and size retention are checked at most (Kafka's log.retention.check.interval.ms). */
export const RETENTION_CHECK_MS = 5 * 60 * 1000;
/** Rows per upsert into compaction's index: 3 parameters each, under the 100 bound parameters per statement. */
const LATEST_KEYS_PER_STATEMENT = 33;
/** Keys per look-up in compaction's index (one bound parameter each). */
const KEYS_PER_LOOKUP = 100;
/** Work one maintenance call does at most: records read into compaction's index, and rows rewritten. */
export const MAINTENANCE_BUDGET = { indexRecords: 20_000, sweepRows: 200 } as const;
/**
 * The partition alarm's share per invocation (a fifth), more work arming it again at once: a
 * slice runs synchronously and holds the object (and, under wrangler dev, every object of the
 * Worker) meanwhile. A full budget took 30 ms under load, longer than a query waits for anything else.
 */
export const ALARM_MAINTENANCE_BUDGET = { indexRecords: 4_000, sweepRows: 40 } as const;
/** Most entries of freshly appended rows kept parsed for compaction's index (a pass's worth and more). */
const FRESH_ROWS_MAX_ENTRIES = 50_000;

/** Compaction's progress: the index covers offsets below `indexedTo`; a sweep of rows below `sweepTo` stands at `sweepCursor`. */
type CompactionState = {
  indexedTo: number;
  sweepCursor: number | null;
  sweepTo: number;
  tombstonesDue: number | null;
  lastRetention: number;
  /** Records kept below `sweepTo` after the last sweep: the compacted size the dirty section is weighed against. */
  cleanRecords: number;
};

/** What a partition keeps now. */
export interface PartitionStats extends OffsetRange {
  readonly records: number;
  readonly bytes: number;
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

/**
 * A stored batch: `records` as record-batch.ts encodes them, `sizes` each record's size (key, value
 * and headers in UTF-8 bytes) as a Uint32Array in the host's byte order, `append_time` the
 * timestamp of records stored without one, `max_timestamp` the largest timestamp in the batch.
 */
type BatchRow = {
  base_offset: number;
  count: number;
  span: number;
  append_time: number;
  max_timestamp: number;
  sizes: ArrayBuffer;
  offsets: ArrayBuffer | null;
  records: string;
};

function storedRow(row: BatchRow): StoredRow {
  return {
    base: row.base_offset,
    span: row.span,
    count: row.count,
    appendTime: row.append_time,
    sizes: new Uint32Array(row.sizes),
    offsets: row.offsets ? new Uint32Array(row.offsets) : undefined,
  };
}

/** The partition an object holds and its kept range: the `partition_meta` row. */
type Meta = { readonly topic: string; readonly partition: number; logStart: number; logEnd: number };

export class PartitionStore {
  private readonly db: Sql;
  private lastPrune = 0;
  /**
   * The `partition_meta` row as this object last read or wrote it (it is the row's only writer),
   * so that appends and fetches do not read it again. Dropped when a transaction fails, since
   * what it wrote there is then undone.
   */
  private cachedMeta: Meta | undefined;
  /**
   * The entries of rows appended to a compacted partition since its index last read them, as the
   * append parsed them, so that compaction does not parse them again (see FRESH_ROWS_MAX_ENTRIES).
   * In memory only; a row is used only while its stored text is the one appended.
   */
  private readonly freshRows = new Map<number, { readonly text: string; readonly entries: Entry[] }>();
  private freshEntries = 0;

  constructor(
    private readonly storage: StorageLike,
    private readonly clock: () => number = Date.now,
  ) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() => migrate(this.db, migrations));
  }

  /** A storage transaction; a failed one also drops the cached meta row (see `cachedMeta`). */
  private transaction<T>(fn: () => T): T {
    try {
      return this.storage.transactionSync(fn);
    } catch (error) {
      this.cachedMeta = undefined;
      this.cachedCompaction = undefined;
      this.cachedConfig = undefined;
      this.forgetFreshRows();
      throw error;
    }
  }

  /** The partition this object holds, once it holds one. */
  boundPartition(): TopicPartition | undefined {
    if (this.cachedMeta) return { topic: this.cachedMeta.topic, partition: this.cachedMeta.partition };
    const row = this.db.one<{ topic: string; partition: number }>(sql`SELECT topic, partition FROM partition_meta WHERE only = 1`);
    return row && { topic: row.topic, partition: row.partition };
  }

  /** Binds the object to its partition on first use and refuses any other afterwards. */
  private meta(tp: TopicPartition): Meta {
    let meta = this.cachedMeta;
    if (!meta) {
      const row = this.db.one<{ topic: string; partition: number; log_start: number; log_end: number }>(
        sql`SELECT topic, partition, log_start, log_end FROM partition_meta WHERE only = 1`,
      );
      if (row) meta = { topic: row.topic, partition: row.partition, logStart: row.log_start, logEnd: row.log_end };
      else {
        this.db.run(sql`INSERT INTO partition_meta (only, topic, partition, log_start, log_end)
                        VALUES (1, ${tp.topic}, ${tp.partition}, 0, 0)`);
        meta = { topic: tp.topic, partition: tp.partition, logStart: 0, logEnd: 0 };
      }
      this.cachedMeta = meta;
    }
    if (meta.topic !== tp.topic || meta.partition !== tp.partition) {
      throw new UnknownTopicOrPartition(`this object holds ${meta.topic}/${meta.partition}, not ${tp.topic}/${tp.partition}`);
    }
    return meta;
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

  private appendBatch(tp: TopicPartition, batch: AppendBatch, producer: ProducerId | undefined, now: number): AppendResult {
    if (producer) checkProducerId(producer);
    const appended: { base: number; row: AppendRow }[] = [];
    const result = this.transaction(() => {
      const meta = this.meta(tp);
      const { logStart, logEnd } = meta;
      if (producer) {
        const retry = this.admitProducerBatch(producer, batch, logStart, now);
        if (retry) return retry;
      }
      // A batch too big for one row becomes several: its offsets stay one contiguous range.
      let base = logEnd;
      for (const row of rowsOf(batch, now)) {
        let rowBytes = 0;
        for (const size of row.sizes) rowBytes += size;
        this.db.run(sql`INSERT INTO record_batches (base_offset, count, span, bytes, max_timestamp, append_time, sizes, records)
                        VALUES (${base}, ${row.count}, ${row.count}, ${rowBytes}, ${row.maxTimestamp}, ${now},
                                ${row.sizes.slice().buffer as ArrayBuffer}, ${row.records})`);
        appended.push({ base, row });
        base += row.count;
      }
      this.db.run(sql`UPDATE partition_meta SET log_end = ${logEnd + batch.count} WHERE only = 1`);
      meta.logEnd = logEnd + batch.count;
      if (producer) {
        this.db.run(sql`INSERT INTO producer_batches (producer_id, sequence, base_offset, count)
                        VALUES (${producer.producerId}, ${producer.sequence}, ${logEnd}, ${batch.count})`);
        this.db.run(sql`DELETE FROM producer_batches
                        WHERE producer_id = ${producer.producerId} AND sequence <= ${producer.sequence - REMEMBERED_BATCHES}`);
      }
      this.maybePruneProducers(now);
      this.lastAppendAt = now;
      return { baseOffset: logEnd, count: batch.count, duplicate: false };
    });
    const config = this.config();
    if (!result.duplicate && config && compacts(config)) {
      for (const { base, row } of appended) this.rememberFreshRow(base, row.records, row.entries ?? (JSON.parse(row.records) as Entry[]));
    }
    return result;
  }

  private rememberFreshRow(base: number, text: string, entries: Entry[]): void {
    this.freshRows.set(base, { text, entries });
    this.freshEntries += entries.length;
    // Oldest first: a partition whose compaction lags keeps only its newest rows parsed.
    for (const [oldest, row] of this.freshRows) {
      if (this.freshEntries <= FRESH_ROWS_MAX_ENTRIES) break;
      this.freshRows.delete(oldest);
      this.freshEntries -= row.entries.length;
    }
  }

  /** A stored row's entries: as its append parsed them when that is the row stored, else parsed from its text. */
  private takeFreshRow(base: number, text: string): Entry[] {
    const fresh = this.freshRows.get(base);
    if (fresh) {
      this.freshRows.delete(base);
      this.freshEntries -= fresh.entries.length;
      if (fresh.text === text) return fresh.entries;
    }
    return JSON.parse(text) as Entry[];
  }

  private forgetFreshRows(): void {
    this.freshRows.clear();
    this.freshEntries = 0;
  }

  /**
   * Applies the idempotent-producer rules. Returns the original result for a retried batch,
   * undefined when the batch is new and may be appended; throws when it must be rejected.
   * A retry is told from a reused sequence by comparing it with the records the log holds (only
   * on this rare path, so appends pay nothing for it): same keys, values, headers, and the same
   * timestamps, or none where the first attempt had none. Records retention already dropped
   * cannot be compared; the rest still are.
   */
  private admitProducerBatch(producer: ProducerId, batch: AppendBatch, logStart: number, now: number): AppendResult | undefined {
    const { producerId, epoch, sequence } = producer;
    const known = this.db.one<{ epoch: number }>(sql`SELECT epoch FROM producers WHERE producer_id = ${producerId}`);
    if (known && epoch < known.epoch) {
      throw new ProducerFenced(`producer ${producerId} epoch ${epoch} is fenced: epoch ${known.epoch} has appended`);
    }
    this.db.run(sql`INSERT INTO producers (producer_id, epoch, last_seen) VALUES (${producerId}, ${epoch}, ${now})
                    ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_seen = excluded.last_seen`);
    if (!known || epoch > known.epoch) {
      // A new epoch starts its sequences afresh; the old epoch's batches can no longer be retried.
      this.db.run(sql`DELETE FROM producer_batches WHERE producer_id = ${producerId}`);
      if (sequence !== 0) throw new OutOfOrderSequence(`producer ${producerId} epoch ${epoch} must start at sequence 0, got ${sequence}`);
      return undefined;
    }
    const last = this.db.one<{ last: number | null }>(sql`SELECT MAX(sequence) AS last FROM producer_batches WHERE producer_id = ${producerId}`)?.last;
    const expected = last === null || last === undefined ? 0 : last + 1;
    if (sequence === expected) return undefined;
    if (sequence > expected) {
      throw new OutOfOrderSequence(`producer ${producerId} sent sequence ${sequence}, expected ${expected}`);
    }
    const earlier = this.db.one<{ base_offset: number; count: number }>(
      sql`SELECT base_offset, count FROM producer_batches WHERE producer_id = ${producerId} AND sequence = ${sequence}`,
    );
    if (!earlier) {
      throw new OutOfOrderSequence(`producer ${producerId} sequence ${sequence} is older than the ${REMEMBERED_BATCHES} batches remembered`);
    }
    const mismatch = () => new DuplicateSequenceMismatch(`producer ${producerId} sequence ${sequence} was already used for other records`);
    if (earlier.count !== batch.count) throw mismatch();
    const entries = batch.entries();
    const from = Math.max(earlier.base_offset, logStart);
    for (const { offset, entry } of this.storedEntries(from, earlier.base_offset + earlier.count)) {
      if (!sameEntry(entries[offset - earlier.base_offset]!, entry)) throw mismatch();
    }
    return { baseOffset: earlier.base_offset, count: earlier.count, duplicate: true };
  }

  /**
   * The stored entries of offsets `from` (at least the log start) up to `to` (exclusive), in
   * order, parsing one batch at a time as the caller goes on.
   */
  private *storedEntries(from: number, to: number): Generator<{ offset: number; entry: Entry }> {
    if (from >= to) return;
    const rows = this.db.cursor<BatchRow>(
      sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
          WHERE base_offset >= COALESCE((SELECT MAX(base_offset) FROM record_batches WHERE base_offset <= ${from}), ${from}) AND base_offset < ${to}
          ORDER BY base_offset`,
    );
    for (const batch of rows) {
      const row = storedRow(batch);
      const entries = JSON.parse(batch.records) as Entry[];
      for (let i = firstEntryAt(row, from); i < row.count; i++) {
        const offset = entryOffset(row, i);
        if (offset >= to) return;
        yield { offset, entry: entries[i]! };
      }
    }
  }

  private maybePruneProducers(now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    const cutoff = now - PRODUCER_EXPIRY_MS;
    this.db.run(sql`DELETE FROM producer_batches WHERE producer_id IN
                    (SELECT producer_id FROM producers WHERE last_seen < ${cutoff})`);
    this.db.run(sql`DELETE FROM producers WHERE last_seen < ${cutoff}`);
  }

  fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): FetchResult {
    return decodeFetch(this.fetchEncoded(tp, offset, bounds));
  }

  /**
   * `fetch`, encoded: the stored batches the bounds take whole go as they are stored; only a batch
   * the bounds cut (or the fetch starts inside) is parsed and sliced. No batch is read beyond the
   * first one a bound stops in, so a fetch holds little more than it returns.
   */
  fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): EncodedFetch {
    checkOffset(offset);
    const maxRecords = positiveInteger(bounds.maxRecords, "maxRecords");
    const maxBytes = positiveInteger(bounds.maxBytes, "maxBytes");
    const { logStart, logEnd } = this.meta(tp);
    if (offset < logStart || offset > logEnd) {
      throw new OffsetOutOfRange(`offset ${offset} is outside ${tp.topic}/${tp.partition} [${logStart}, ${logEnd}]`);
    }
    const batches: EncodedBatch[] = [];
    let records = 0;
    let bytes = 0;
    let nextOffset = offset;
    if (offset < logEnd) {
      // The row holding `offset` (or the last one before it), then the next ones, read lazily.
      const rows = this.db.cursor<BatchRow>(
        sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
            WHERE base_offset >= COALESCE((SELECT MAX(base_offset) FROM record_batches WHERE base_offset <= ${offset}), ${offset})
            ORDER BY base_offset`,
      );
      let stopped = false;
      for (const batch of rows) {
        const row = storedRow(batch);
        const start = firstEntryAt(row, offset);
        let end = start;
        while (end < row.count && records < maxRecords && (records === 0 || bytes + row.sizes[end]! <= maxBytes)) {
          bytes += row.sizes[end]!;
          records++;
          end++;
        }
        if (end === start && start < row.count) {
          stopped = true;
          break;
        }
        if (end > start) {
          const whole = start === 0 && end === row.count;
          const text = whole ? batch.records : JSON.stringify((JSON.parse(batch.records) as Entry[]).slice(start, end));
          const base = entryOffset(row, start);
          const sparse = row.offsets !== undefined && entryOffset(row, end - 1) - base !== end - 1 - start;
          const offsets = sparse ? Array.from({ length: end - start }, (_, i) => entryOffset(row, start + i)) : undefined;
          batches.push({ base, appendTime: row.appendTime, records: text, ...(offsets ? { offsets } : {}) });
        }
        // Offsets compaction removed after the last record taken are skipped too.
        nextOffset = end < row.count ? entryOffset(row, end) : row.base + row.span;
        if (end < row.count || records >= maxRecords) {
          stopped = true;
          break;
        }
      }
      if (!stopped) nextOffset = logEnd;
    }
    return { batches, nextOffset, earliest: logStart, latest: logEnd };
  }

  offsets(tp: TopicPartition): OffsetRange {
    const { logStart, logEnd } = this.meta(tp);
    return { earliest: logStart, latest: logEnd };
  }

  offsetForTimestamp(tp: TopicPartition, timestamp: number): number {
    if (!Number.isSafeInteger(timestamp)) throw new InvalidRecord("timestamp must be an integer");
    const { logStart, logEnd } = this.meta(tp);
    // Only batches holding a timestamp at or after it are parsed; the first such record wins.
    const rows = this.db.cursor<BatchRow>(
      sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
          WHERE max_timestamp >= ${timestamp} AND base_offset + span > ${logStart} ORDER BY base_offset`,
    );
    for (const batch of rows) {
      const row = storedRow(batch);
      const entries = JSON.parse(batch.records) as Entry[];
      for (let i = firstEntryAt(row, logStart); i < row.count; i++) {
        if ((entries[i]![2] ?? row.appendTime) >= timestamp) return entryOffset(row, i);
      }
    }
    return logEnd;
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): OffsetRange {
    checkOffset(offset);
    return this.transaction(() => {
      const meta = this.meta(tp);
      const { logEnd } = meta;
      if (offset > logEnd) throw new OffsetOutOfRange(`cannot delete below ${offset}: the end offset is ${logEnd}`);
      this.advanceStart(meta, offset);
      return { earliest: meta.logStart, latest: logEnd };
    });
  }

  /**
   * Moves the log start up to `offset` (never down): whole rows below it go; one straddling it
   * stays, and its records below the start are never served (reads begin at the start offset).
   * Returns the records that went. Call inside a transaction.
   */
  private advanceStart(meta: Meta, offset: number): number {
    if (offset <= meta.logStart) return 0;
    const before = this.kept(meta.logStart).records;
    this.db.run(sql`DELETE FROM record_batches WHERE base_offset < ${offset} AND base_offset + span <= ${offset}`);
    this.db.run(sql`UPDATE partition_meta SET log_start = ${offset} WHERE only = 1`);
    this.db.run(sql`DELETE FROM latest_keys WHERE offset < ${offset}`);
    meta.logStart = offset;
    return before - this.kept(offset).records;
  }

  /** Records and bytes kept at or after `from` (rows are whole but for the one holding `from`). */
  private kept(from: number): { records: number; bytes: number } {
    const totals = this.db.one<{ records: number | null; bytes: number | null }>(
      sql`SELECT SUM(count) AS records, SUM(bytes) AS bytes FROM record_batches WHERE base_offset + span > ${from}`,
    );
    let records = totals?.records ?? 0;
    let bytes = totals?.bytes ?? 0;
    const first = this.db.one<BatchRow>(
      sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
          WHERE base_offset <= ${from} AND base_offset + span > ${from} ORDER BY base_offset DESC LIMIT 1`,
    );
    if (first) {
      const row = storedRow(first);
      const below = firstEntryAt(row, from);
      records -= below;
      for (let i = 0; i < below; i++) bytes -= row.sizes[i]!;
    }
    return { records, bytes };
  }

  /** What the partition keeps now: its range, and the records and bytes in it. */
  stats(tp: TopicPartition): PartitionStats {
    const { logStart, logEnd } = this.meta(tp);
    return { earliest: logStart, latest: logEnd, ...this.kept(logStart) };
  }

  /**
   * Whether the partition's task readers are behind its end (their lag is what a lost wake-up
   * would leave): "behind" when the committer with an epoch (a task instance) has not committed
   * the end offset, "unknown" when no such committer has committed at all (a changelog, or input
   * not yet read), else "caught-up".
   */
  readers(tp: TopicPartition): "behind" | "unknown" | "caught-up" {
    const { logEnd } = this.meta(tp);
    const committed = this.db.one<{ offset: number | null }>(sql`SELECT MAX(offset) AS offset FROM committed_offsets WHERE epoch IS NOT NULL`)?.offset;
    if (committed === null || committed === undefined) return "unknown";
    return committed < logEnd ? "behind" : "caught-up";
  }

  // ---- the topic's configuration, retention and compaction ----

  private cachedConfig: TopicConfig | null | undefined;

  /** The topic's configuration as last given (by the producers' side: see `configure`); null before any. */
  config(): TopicConfig | null {
    if (this.cachedConfig === undefined) {
      const text = this.db.one<{ config: string | null }>(sql`SELECT config FROM partition_meta WHERE only = 1`)?.config ?? null;
      this.cachedConfig = text === null ? null : (JSON.parse(text) as TopicConfig);
    }
    return this.cachedConfig;
  }

  /** Records the topic's configuration (written only when it changed). */
  configure(tp: TopicPartition, config: TopicConfig): void {
    const text = JSON.stringify(config);
    if (this.cachedConfig !== undefined && JSON.stringify(this.cachedConfig) === text) return;
    this.transaction(() => {
      this.meta(tp);
      this.db.run(sql`UPDATE partition_meta SET config = ${text} WHERE only = 1`);
    });
    this.cachedConfig = config;
  }

  private cachedCompaction: CompactionState | undefined;
  /** When this object last appended (in memory: after a restart, unknown). */
  private lastAppendAt: number | undefined;

  private compactionState(logStart: number): CompactionState {
    if (!this.cachedCompaction) {
      const row = this.db.one<{
        indexed_to: number;
        sweep_cursor: number | null;
        sweep_to: number;
        tombstones_due: number | null;
        last_retention: number;
        clean_records: number;
      }>(sql`SELECT indexed_to, sweep_cursor, sweep_to, tombstones_due, last_retention, clean_records FROM compaction WHERE only = 1`);
      this.cachedCompaction = row
        ? {
            indexedTo: row.indexed_to,
            sweepCursor: row.sweep_cursor,
            sweepTo: row.sweep_to,
            tombstonesDue: row.tombstones_due,
            lastRetention: row.last_retention,
            cleanRecords: row.clean_records,
          }
        : { indexedTo: logStart, sweepCursor: null, sweepTo: logStart, tombstonesDue: null, lastRetention: 0, cleanRecords: 0 };
    }
    return this.cachedCompaction;
  }

  private writeCompactionState(state: CompactionState): void {
    this.db.run(sql`INSERT INTO compaction (only, indexed_to, sweep_cursor, sweep_to, tombstones_due, last_retention, clean_records)
                    VALUES (1, ${state.indexedTo}, ${state.sweepCursor}, ${state.sweepTo}, ${state.tombstonesDue}, ${state.lastRetention}, ${state.cleanRecords})
                    ON CONFLICT (only) DO UPDATE SET indexed_to = excluded.indexed_to, sweep_cursor = excluded.sweep_cursor,
                      sweep_to = excluded.sweep_to, tombstones_due = excluded.tombstones_due, last_retention = excluded.last_retention,
                      clean_records = excluded.clean_records`);
    this.cachedCompaction = { ...state };
  }

  /**
   * When maintenance (retention, compaction) is next due for this partition, from what is in
   * memory: cheap enough to ask after every append. Undefined: never, as things stand.
   */
  maintenanceDueAt(now: number): number | undefined {
    const config = this.config();
    const meta = this.cachedMeta;
    if (!config || !meta || meta.logEnd === meta.logStart) return undefined;
    const state = this.compactionState(meta.logStart);
    let due: number | undefined;
    const sooner = (at: number | undefined) => (due = at === undefined ? due : due === undefined ? at : Math.min(due, at));
    if (deletes(config) && (config["retention.ms"] >= 0 || config["retention.bytes"] >= 0)) sooner(state.lastRetention + RETENTION_CHECK_MS);
    if (compacts(config)) sooner(this.compactionDueAt(config, meta, state, now));
    return due;
  }

  /**
   * When compaction is next due: at once while a sweep is under way, or when Kafka's dirty ratio
   * is reached; when a tombstone's time is up; once the partition has been quiet for
   * QUIET_COMPACTION_MS with records not yet compacted; within max.compaction.lag.ms of them.
   */
  private compactionDueAt(config: TopicConfig, meta: Meta, state: CompactionState, now: number): number | undefined {
    if (state.sweepCursor !== null) return now;
    const dirty = meta.logEnd - state.indexedTo;
    if (compactionDue(dirty, state.cleanRecords)) return now;
    let due = state.tombstonesDue ?? undefined;
    if (dirty > 0) {
      const quiet = (this.lastAppendAt ?? now) + QUIET_COMPACTION_MS;
      due = due === undefined ? quiet : Math.min(due, quiet);
      if (config["max.compaction.lag.ms"] >= 0) due = Math.min(due, now + config["max.compaction.lag.ms"]);
    }
    return due;
  }

  /**
   * Applies the topic's retention and compaction, within `budget`: records past `retention.ms`
   * or beyond `retention.bytes` go (whole rows, oldest first), and compaction reads more records
   * into its index and thins the rows below it. Every step is a transaction of its own, so a
   * crash anywhere loses nothing and leaves a readable partition; the next call goes on. Without
   * `force` (the partition's alarm), compaction runs only when due (see `compactionDueAt`).
   */
  maintain(tp: TopicPartition, now: number, budget: { indexRecords: number; sweepRows: number } = MAINTENANCE_BUDGET, force = true): MaintenanceResult {
    const config = this.config();
    if (!config) return { deleted: 0, compacted: 0, indexed: 0, more: false, nextAt: undefined };
    let deleted = 0;
    if (deletes(config)) deleted = this.transaction(() => this.applyRetention(tp, config, now));
    let indexed = 0;
    let compacted = 0;
    let more = false;
    const meta = this.meta(tp);
    const due = compacts(config) && (force || (this.compactionDueAt(config, meta, this.compactionState(meta.logStart), now) ?? Infinity) <= now);
    if (due) ({ indexed, compacted, more } = this.compact(tp, config, now, budget));
    return { deleted, compacted, indexed, more, nextAt: more ? now : this.maintenanceDueAt(now) };
  }

  private applyRetention(tp: TopicPartition, config: TopicConfig, now: number): number {
    const meta = this.meta(tp);
    const state = this.compactionState(meta.logStart);
    this.writeCompactionState({ ...state, lastRetention: now });
    // A compacted topic keeps its newest row whatever its age: it holds the newest record, whose
    // input position a restored task resumes from (I5).
    const newest = compacts(config)
      ? (this.db.one<{ base: number | null }>(sql`SELECT MAX(base_offset) AS base FROM record_batches`)?.base ?? meta.logEnd)
      : meta.logEnd;
    let start = meta.logStart;
    if (config["retention.ms"] >= 0) {
      const cutoff = now - config["retention.ms"];
      // A row goes once both its records' timestamps and its arrival are older than retention.ms:
      // records appended just now with old timestamps stay a while (as in Kafka's active segment).
      const kept = this.db.one<{ base: number | null }>(
        sql`SELECT MIN(base_offset) AS base FROM record_batches WHERE (max_timestamp >= ${cutoff} OR append_time >= ${cutoff}) AND base_offset + span > ${meta.logStart}`,
      )?.base;
      start = Math.max(start, Math.min(kept ?? meta.logEnd, newest));
    }
    if (config["retention.bytes"] >= 0) {
      let over = this.kept(meta.logStart).bytes - config["retention.bytes"];
      for (const row of this.db.cursor<{ base_offset: number; span: number; bytes: number }>(
        sql`SELECT base_offset, span, bytes FROM record_batches WHERE base_offset + span > ${start} ORDER BY base_offset`,
      )) {
        if (over <= 0 || row.base_offset >= newest) break;
        over -= row.bytes;
        start = Math.max(start, row.base_offset + row.span);
      }
    }
    return this.advanceStart(meta, Math.min(start, meta.logEnd));
  }

  /** Compaction, in steps within `budget`: index more of the cleanable records, then sweep the rows below the index. */
  private compact(tp: TopicPartition, config: TopicConfig, now: number, budget: { indexRecords: number; sweepRows: number }) {
    const meta = this.meta(tp);
    // Never records younger than min.compaction.lag.ms (rows whose records are all older are cleanable).
    const young = this.db.one<{ base: number | null }>(
      sql`SELECT MIN(base_offset) AS base FROM record_batches WHERE max_timestamp > ${now - config["min.compaction.lag.ms"]} AND base_offset + span > ${meta.logStart}`,
    )?.base;
    const cleanable = Math.min(meta.logEnd, young ?? Infinity);
    // Nor the partition's last record, even a tombstone past its time: a restored task resumes
    // from the input position the newest changelog record carries (I5). (Kafka keeps its whole
    // active segment out of compaction; keeping only the last record restores less.)
    const last = meta.logEnd - 1;
    let indexed = 0;
    let compacted = 0;
    // Each key's latest offset read by the index phase, and the rows it parsed: the sweep of this
    // call starts from them instead of reading the index and parsing those rows again.
    const latest = new Map<string, LatestRecord>();
    const parsed = new Map<number, Entry[]>();
    // Index: each key's latest offset, a row at a time, in transactions of up to a budget's worth.
    this.transaction(() => {
      const state = this.compactionState(meta.logStart);
      let indexedTo = Math.max(state.indexedTo, meta.logStart);
      let cut = false;
      // Rows are read in offset order, so a key's last entry read is its latest: one upsert per key
      // read, not per record (a busy changelog updates the same keys row after row).
      for (const batch of this.db.cursor<BatchRow>(
        sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
            WHERE base_offset >= ${indexedTo} AND base_offset < ${cleanable} ORDER BY base_offset`,
      )) {
        if (indexed >= budget.indexRecords) {
          cut = true;
          break;
        }
        const row = storedRow(batch);
        const entries = this.takeFreshRow(row.base, batch.records);
        for (let i = 0; i < entries.length; i++) {
          const entry = entries[i]!;
          if (entry[0] !== null) latest.set(entry[0], { offset: entryOffset(row, i), tombstone: isTombstone(entry) });
        }
        parsed.set(row.base, entries);
        indexed += row.count;
        indexedTo = row.base + row.span;
      }
      this.putLatestKeys(latest);
      // Read to the cleanable point (offsets between rows are ones compaction removed before).
      if (!cut && cleanable !== Infinity) indexedTo = Math.max(indexedTo, cleanable);
      let { sweepCursor, sweepTo, tombstonesDue } = state;
      // A sweep starts once the index covers all that is cleanable (one sweep per pass, as Kafka
      // cleans the dirty section it has mapped), when that is more than the last sweep covered or
      // a tombstone's time is up.
      const indexComplete = indexedTo >= cleanable;
      if (sweepCursor === null && indexComplete && (indexedTo > sweepTo || (tombstonesDue !== null && tombstonesDue <= now))) {
        sweepCursor = meta.logStart;
        sweepTo = indexedTo;
        tombstonesDue = null;
      }
      this.writeCompactionState({ ...state, indexedTo, sweepCursor, sweepTo, tombstonesDue });
    });
    // Sweep: rows below the index keep only their keys' latest records (and tombstones until due).
    // The index entries looked up are remembered for the rest of this call (nothing else writes
    // the index meanwhile: the call never yields), as the rows below the index share their keys;
    // those the index phase just wrote are known already.
    const known = new Map<string, LatestRecord | null>(latest);
    let rows = 0;
    while (rows < budget.sweepRows) {
      const done = this.transaction(() => {
        const state = this.compactionState(meta.logStart);
        if (state.sweepCursor === null) return true;
        const batch = this.db.one<BatchRow>(
          sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
              WHERE base_offset >= ${Math.max(state.sweepCursor, meta.logStart)} AND base_offset < ${state.sweepTo} ORDER BY base_offset LIMIT 1`,
        );
        if (!batch) {
          // The sweep is done: what it left is the clean section new records are weighed against.
          const cleanRecords = this.db.one<{ n: number | null }>(sql`SELECT SUM(count) AS n FROM record_batches WHERE base_offset < ${state.sweepTo}`)?.n ?? 0;
          this.writeCompactionState({ ...state, sweepCursor: null, cleanRecords });
          return true;
        }
        rows++;
        const row = storedRow(batch);
        const entries = parsed.get(row.base) ?? (JSON.parse(batch.records) as Entry[]);
        this.lookUpLatestKeys(entries, known);
        const deleteRetention = config["delete.retention.ms"];
        const chosen = survivors(
          entries,
          (i) => entryOffset(row, i),
          row.appendTime,
          (key) => known.get(key) ?? undefined,
          now,
          deleteRetention,
        );
        const lastIndex = row.base + row.span > last ? entries.findIndex((_, i) => entryOffset(row, i) === last) : -1;
        const keep = lastIndex >= 0 && !chosen.keep.includes(lastIndex) ? [...chosen.keep, lastIndex].sort((a, b) => a - b) : chosen.keep;
        const forgotten = lastIndex >= 0 ? chosen.forgotten.filter((key) => key !== entries[lastIndex]![0]) : chosen.forgotten;
        for (const key of forgotten) {
          this.db.run(sql`DELETE FROM latest_keys WHERE key = ${key}`);
          known.set(key, null);
        }
        // A tombstone kept for now calls for another sweep once its time is up.
        let due = state.tombstonesDue;
        for (const i of keep) if (isTombstone(entries[i]!)) due = Math.min(due ?? Infinity, row.appendTime + deleteRetention + 1);
        if (keep.length === 0) {
          this.db.run(sql`DELETE FROM record_batches WHERE base_offset = ${row.base}`);
        } else if (keep.length < row.count) {
          const kept = keep.map((i) => entries[i]!);
          const sizes = Uint32Array.from(keep, (i) => row.sizes[i]!);
          const offsets = Uint32Array.from(keep, (i) => entryOffset(row, i) - row.base);
          let bytes = 0;
          let maxTimestamp = 0;
          for (const size of sizes) bytes += size;
          for (const entry of kept) maxTimestamp = Math.max(maxTimestamp, entry[2] ?? row.appendTime);
          this.db.run(sql`UPDATE record_batches SET count = ${kept.length}, bytes = ${bytes}, max_timestamp = ${maxTimestamp},
                            sizes = ${sizes.buffer as ArrayBuffer}, offsets = ${offsets.buffer as ArrayBuffer}, records = ${JSON.stringify(kept)}
                          WHERE base_offset = ${row.base}`);
        }
        compacted += row.count - keep.length;
        this.writeCompactionState({ ...state, sweepCursor: row.base + row.span, tombstonesDue: due === Infinity ? null : due });
        return false;
      });
      if (done) break;
    }
    const state = this.compactionState(meta.logStart);
    const more = state.sweepCursor !== null || state.indexedTo < cleanable;
    return { indexed, compacted, more };
  }

  /** Upserts compaction's index entries, LATEST_KEYS_PER_STATEMENT rows per statement. */
  private putLatestKeys(latest: ReadonlyMap<string, LatestRecord>): void {
    const rows = [...latest];
    for (let at = 0; at < rows.length; at += LATEST_KEYS_PER_STATEMENT) {
      const chunk = rows.slice(at, at + LATEST_KEYS_PER_STATEMENT);
      this.db.run({
        text: `INSERT INTO latest_keys (key, offset, tombstone) VALUES ${Array(chunk.length).fill("(?, ?, ?)").join(", ")}
               ON CONFLICT (key) DO UPDATE SET offset = excluded.offset, tombstone = excluded.tombstone`,
        values: chunk.flatMap(([key, { offset, tombstone }]) => [key, offset, tombstone ? 1 : 0]),
      });
    }
  }

  /**
   * Adds to `known` compaction's index entries of the entries' keys it does not hold yet (null: not
   * indexed), KEYS_PER_LOOKUP keys per statement.
   */
  private lookUpLatestKeys(entries: readonly Entry[], known: Map<string, LatestRecord | null>): void {
    const missing = new Set<string>();
    for (const [key] of entries) if (key !== null && !known.has(key)) missing.add(key);
    const keys = [...missing];
    for (let at = 0; at < keys.length; at += KEYS_PER_LOOKUP) {
      const chunk = keys.slice(at, at + KEYS_PER_LOOKUP);
      const query = { text: `SELECT key, offset, tombstone FROM latest_keys WHERE key IN (${Array(chunk.length).fill("?").join(", ")})`, values: chunk };
      for (const key of chunk) known.set(key, null);
      for (const found of this.db.cursor<{ key: string; offset: number; tombstone: number }>(query)) {
        known.set(found.key, { offset: found.offset, tombstone: found.tombstone === 1 });
      }
    }
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): void {
    checkGroup(group);
    checkOffset(committed.offset);
    if (typeof committed.metadata !== "string") throw new InvalidRecord("metadata must be a string");
    const epoch = committed.epoch ?? null;
    if (epoch !== null && (!Number.isSafeInteger(epoch) || epoch < 0)) throw new InvalidRecord("a commit's epoch must be a non-negative integer");
    this.transaction(() => {
      const { logEnd } = this.meta(tp);
      if (committed.offset > logEnd) {
        throw new OffsetOutOfRange(`cannot commit offset ${committed.offset}: the end offset is ${logEnd}`);
      }
      const held = this.db.one<{ epoch: number | null }>(sql`SELECT epoch FROM committed_offsets WHERE group_id = ${group}`)?.epoch ?? null;
      // Once a committer with an epoch (a task instance) owns the group's offsets, commits from an
      // older epoch — or from anyone without one — are fenced: only the current owner moves them.
      if (held !== null && (epoch === null || epoch < held)) {
        throw new ProducerFenced(`group ${group}: a commit ${epoch === null ? "without an epoch" : `from epoch ${epoch}`} is fenced by epoch ${held}`);
      }
      const kept = epoch ?? held;
      this.db.run(sql`INSERT INTO committed_offsets (group_id, offset, metadata, committed_at, epoch)
                      VALUES (${group}, ${committed.offset}, ${committed.metadata}, ${this.clock()}, ${kept})
                      ON CONFLICT (group_id) DO UPDATE SET offset = excluded.offset,
                        metadata = excluded.metadata, committed_at = excluded.committed_at, epoch = excluded.epoch`);
      // Kafka Streams' repartition purge: what the reading task has committed past is not read again.
      if (epoch !== null && this.config()?.["purge.on.commit"]) this.advanceStart(this.meta(tp), committed.offset);
    });
  }

  committedOffset(group: string, tp: TopicPartition): CommittedOffset | null {
    checkGroup(group);
    this.meta(tp);
    const row = this.db.one<{ offset: number; metadata: string; epoch: number | null }>(
      sql`SELECT offset, metadata, epoch FROM committed_offsets WHERE group_id = ${group}`,
    );
    if (!row) return null;
    return row.epoch === null ? { offset: row.offset, metadata: row.metadata } : { offset: row.offset, metadata: row.metadata, epoch: row.epoch };
  }
}

/**
 * Who wants to hear about appends to this partition (task instances that read it), so that an
 * idle task sleeps without polling and is woken when input arrives.
 */
export class Subscribers {
  private readonly db: Sql;
  private cached: string[] | undefined;

  constructor(storage: StorageLike) {
    this.db = new Sql(storage.sql);
  }

  add(name: string): void {
    this.db.run(sql`INSERT INTO subscribers (name, since) VALUES (${name}, ${Date.now()}) ON CONFLICT (name) DO NOTHING`);
    this.cached = undefined;
  }

  remove(name: string): void {
    this.db.run(sql`DELETE FROM subscribers WHERE name = ${name}`);
    this.cached = undefined;
  }

  list(): string[] {
    this.cached ??= this.db.all<{ name: string }>(sql`SELECT name FROM subscribers ORDER BY name`).map((r) => r.name);
    return this.cached;
  }
}

function checkOffset(offset: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidRecord(`offset must be a non-negative integer, got ${offset}`);
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidRecord(`${name} must be a positive integer, got ${value}`);
  return value;
}

function checkGroup(group: string): void {
  if (typeof group !== "string" || group.length === 0 || group.length > 255) {
    throw new InvalidRecord("a consumer group id is a string of 1 to 255 characters");
  }
}

function checkProducerId(producer: ProducerId): void {
  if (typeof producer.producerId !== "string" || producer.producerId.length === 0 || producer.producerId.length > 512) {
    throw new InvalidRecord("producerId must be a string of 1 to 512 characters");
  }
  if (!Number.isSafeInteger(producer.epoch) || producer.epoch < 0) throw new InvalidRecord("producer epoch must be a non-negative integer");
  if (!Number.isSafeInteger(producer.sequence) || producer.sequence < 0) {
    throw new InvalidRecord("producer sequence must be a non-negative integer");
  }
}
