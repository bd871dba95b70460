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
import {
  DuplicateSequenceMismatch,
  InvalidRecord,
  OffsetOutOfRange,
  OutOfOrderSequence,
  ProducerFenced,
  UnknownTopicOrPartition,
} from "./errors";
import { checkBatch } from "./records";
import { decodeBatches, parseEntries, sameEntry, toEntry, type CheckedEntries, type EncodedBatch, type EncodedFetch, type Entry } from "./record-batch";
import type {
  AppendResult,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  Header,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
} from "./types";

/** Batches remembered per producer for answering retries, as Kafka keeps five. */
export const REMEMBERED_BATCHES = 5;
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
];

/**
 * A stored batch: `records` as record-batch.ts encodes them, `sizes` each record's size (key, value
 * and headers in UTF-8 bytes) as a Uint32Array in the host's byte order, `append_time` the
 * timestamp of records stored without one, `max_timestamp` the largest timestamp in the batch.
 */
type BatchRow = { base_offset: number; count: number; append_time: number; sizes: ArrayBuffer; records: string };

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
      throw error;
    }
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
    const entries = records.map(toEntry);
    const sizes = Uint32Array.from(checked, (r) => r.bytes);
    return this.appendEntries(tp, { entries, sizes, bytes: sizes.reduce((n, b) => n + b, 0) }, undefined, producer, now);
  }

  /** `append` of an encoded batch (see record-batch.ts), stored as it came when it is valid. */
  appendEncoded(tp: TopicPartition, records: string, producer?: ProducerId): AppendResult {
    const now = this.clock();
    return this.appendEntries(tp, parseEntries(records), records, producer, now);
  }

  private appendEntries(tp: TopicPartition, checked: CheckedEntries, encoded: string | undefined, producer: ProducerId | undefined, now: number): AppendResult {
    if (producer) checkProducerId(producer);
    const { entries, sizes, bytes } = checked;
    return this.transaction(() => {
      const meta = this.meta(tp);
      const { logStart, logEnd } = meta;
      if (producer) {
        const retry = this.admitProducerBatch(producer, entries, logStart, now);
        if (retry) return retry;
      }
      let maxTimestamp = 0;
      for (const entry of entries) maxTimestamp = Math.max(maxTimestamp, entry[2] ?? now);
      this.db.run(sql`INSERT INTO record_batches (base_offset, count, bytes, max_timestamp, append_time, sizes, records)
                      VALUES (${logEnd}, ${entries.length}, ${bytes}, ${maxTimestamp}, ${now}, ${sizes.buffer as ArrayBuffer},
                              ${encoded ?? JSON.stringify(entries)})`);
      this.db.run(sql`UPDATE partition_meta SET log_end = ${logEnd + entries.length} WHERE only = 1`);
      meta.logEnd = logEnd + entries.length;
      if (producer) {
        this.db.run(sql`INSERT INTO producer_batches (producer_id, sequence, base_offset, count)
                        VALUES (${producer.producerId}, ${producer.sequence}, ${logEnd}, ${entries.length})`);
        this.db.run(sql`DELETE FROM producer_batches
                        WHERE producer_id = ${producer.producerId} AND sequence <= ${producer.sequence - REMEMBERED_BATCHES}`);
      }
      this.maybePruneProducers(now);
      return { baseOffset: logEnd, count: entries.length, duplicate: false };
    });
  }

  /**
   * Applies the idempotent-producer rules. Returns the original result for a retried batch,
   * undefined when the batch is new and may be appended; throws when it must be rejected.
   * A retry is told from a reused sequence by comparing it with the records the log holds (only
   * on this rare path, so appends pay nothing for it): same keys, values, headers, and the same
   * timestamps, or none where the first attempt had none. Records retention already dropped
   * cannot be compared; the rest still are.
   */
  private admitProducerBatch(producer: ProducerId, entries: readonly Entry[], logStart: number, now: number): AppendResult | undefined {
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
    const last = this.db.one<{ last: number | null }>(
      sql`SELECT MAX(sequence) AS last FROM producer_batches WHERE producer_id = ${producerId}`,
    )?.last;
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
    if (earlier.count !== entries.length) throw mismatch();
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
    const rows = this.db.cursor<{ base_offset: number; records: string }>(
      sql`SELECT base_offset, records FROM record_batches
          WHERE base_offset >= (SELECT MAX(base_offset) FROM record_batches WHERE base_offset <= ${from}) AND base_offset < ${to}
          ORDER BY base_offset`,
    );
    for (const batch of rows) {
      const entries = JSON.parse(batch.records) as Entry[];
      const end = Math.min(entries.length, to - batch.base_offset);
      for (let i = Math.max(0, from - batch.base_offset); i < end; i++) yield { offset: batch.base_offset + i, entry: entries[i]! };
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
    const { batches, ...rest } = this.fetchEncoded(tp, offset, bounds);
    return { records: decodeBatches(batches), ...rest };
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
      // The batch holding `offset`, then the next ones; none starting at `offset + maxRecords` or later can contribute.
      const rows = this.db.cursor<BatchRow>(
        sql`SELECT base_offset, count, append_time, sizes, records FROM record_batches
            WHERE base_offset >= (SELECT MAX(base_offset) FROM record_batches WHERE base_offset <= ${offset})
              AND base_offset < ${offset + maxRecords}
            ORDER BY base_offset`,
      );
      for (const batch of rows) {
        const sizes = new Uint32Array(batch.sizes);
        const start = Math.max(0, offset - batch.base_offset);
        let end = start;
        while (end < batch.count && records < maxRecords && (records === 0 || bytes + sizes[end]! <= maxBytes)) {
          bytes += sizes[end]!;
          records++;
          end++;
        }
        if (end === start) break;
        const whole = start === 0 && end === batch.count;
        const text = whole ? batch.records : JSON.stringify((JSON.parse(batch.records) as Entry[]).slice(start, end));
        batches.push({ base: batch.base_offset + start, appendTime: batch.append_time, records: text });
        nextOffset = batch.base_offset + end;
        if (end < batch.count) break;
      }
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
    const rows = this.db.cursor<{ base_offset: number; append_time: number; records: string }>(
      sql`SELECT base_offset, append_time, records FROM record_batches
          WHERE max_timestamp >= ${timestamp} AND base_offset + count > ${logStart} ORDER BY base_offset`,
    );
    for (const batch of rows) {
      const entries = JSON.parse(batch.records) as Entry[];
      for (let i = Math.max(0, logStart - batch.base_offset); i < entries.length; i++) {
        if ((entries[i]![2] ?? batch.append_time) >= timestamp) return batch.base_offset + i;
      }
    }
    return logEnd;
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): OffsetRange {
    checkOffset(offset);
    return this.transaction(() => {
      const meta = this.meta(tp);
      const { logStart, logEnd } = meta;
      if (offset > logEnd) throw new OffsetOutOfRange(`cannot delete below ${offset}: the end offset is ${logEnd}`);
      if (offset <= logStart) return { earliest: logStart, latest: logEnd };
      // Whole batches below the new start go; one straddling it stays, and its records below the
      // start are never served (reads begin at the start offset kept in the meta).
      this.db.run(sql`DELETE FROM record_batches WHERE base_offset < ${offset} AND base_offset + count <= ${offset}`);
      this.db.run(sql`UPDATE partition_meta SET log_start = ${offset} WHERE only = 1`);
      meta.logStart = offset;
      return { earliest: offset, latest: logEnd };
    });
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
