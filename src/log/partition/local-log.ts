/**
 * A partition's records and its kept range (Kafka's `LocalLog` and its segments): the
 * `partition_meta` row (which partition this object holds, its log start, and its end offset as
 * of the last time the start moved) and the `record_batches` rows. The end is the last row's end
 * (or the stored one when no row is left), so an append writes its row and nothing else. Appends add rows at the end; fetches read them from an offset within
 * bounds; the log start moves up when retention, a purge or `deleteRecordsBefore` drops the
 * oldest rows. Offsets are dense and keep their meaning: compaction may thin rows (see
 * log-cleaner.ts) but never renumbers them.
 *
 * Records are stored as Kafka stores them: one row per appended batch, the batch's records encoded
 * together (see record-batch.ts) with each record's size beside them, and the batch's producer
 * (id, epoch, base sequence: Kafka's batch header) the producers' state is rebuilt from. A fetch returns the stored
 * batches its bounds take whole as they are, and parses and slices only a batch it takes part of.
 *
 * Methods that write are called inside the caller's transaction (see transactions.ts).
 */
import { sql } from "../../storage/sql";
import type { AppendBatch, AppendRow } from "../append-batch";
import { rowsOf } from "../append-batch";
import { InvalidRecord, OffsetOutOfRange, UnknownTopicOrPartition } from "../errors";
import type { EncodedFetch, Entry } from "../record-batch";
import { entryOffset, firstEntryAt } from "../stored-batch";
import type { FetchBounds, OffsetRange, ProducerId, TopicPartition } from "../types";
import { storedRow, type BatchRow } from "./batch-rows";
import { takeFromRows } from "./fetch-rows";
import type { PartitionTransactions } from "./transactions";
import { topicPartition } from "../../names";

/** The partition an object holds and its kept range: the `partition_meta` row. */
export type LogRange = { readonly topic: string; readonly partition: number; logStart: number; logEnd: number };

/** A row an append wrote, at its base offset. */
export interface AppendedRow {
  readonly base: number;
  readonly row: AppendRow;
}

/** Records and bytes kept. */
export interface KeptSize {
  readonly records: number;
  readonly bytes: number;
}

export class LocalLog {
  /**
   * The `partition_meta` range as this object last read or wrote it (it is the row's only writer),
   * so that appends and fetches do not read it again. Dropped when a transaction fails, since
   * what it wrote there is then undone.
   */
  private cached: LogRange | undefined;

  /**
   * `onStartAdvanced(offset)` runs, in the same transaction, after the log start moved up to
   * `offset`; `beforeStartAdvanced(offset, logEnd)` before, returning the producers' snapshot
   * offset to store with the new start when it moved (see ProducerStateManager).
   */
  constructor(
    private readonly tx: PartitionTransactions,
    private readonly onStartAdvanced: (offset: number) => void = () => {},
    private readonly beforeStartAdvanced: (offset: number, logEnd: number) => number | undefined = () => undefined,
  ) {
    tx.onRollback(() => (this.cached = undefined));
  }

  private get db() {
    return this.tx.db;
  }

  /** The partition this object holds, once it holds one. */
  boundPartition(): TopicPartition | undefined {
    if (this.cached) return { topic: this.cached.topic, partition: this.cached.partition };
    const row = this.db.one<{ topic: string; partition: number }>(sql`SELECT topic, partition FROM partition_meta WHERE only = 1`);
    return row && { topic: row.topic, partition: row.partition };
  }

  /** The kept range as cached, without reading storage (undefined before the first read). */
  cachedRange(): LogRange | undefined {
    return this.cached;
  }

  /** Binds the object to its partition on first use and refuses any other afterwards. */
  range(tp: TopicPartition): LogRange {
    let range = this.cached;
    if (!range) {
      const row = this.db.one<{ topic: string; partition: number; log_start: number; log_end: number }>(
        sql`SELECT topic, partition, log_start,
                   MAX(log_end, COALESCE((SELECT base_offset + span FROM record_batches ORDER BY base_offset DESC LIMIT 1), 0)) AS log_end
            FROM partition_meta WHERE only = 1`,
      );
      if (row) range = { topic: row.topic, partition: row.partition, logStart: row.log_start, logEnd: row.log_end };
      else {
        this.db.run(sql`INSERT INTO partition_meta (only, topic, partition, log_start, log_end)
                        VALUES (1, ${tp.topic}, ${tp.partition}, 0, 0)`);
        range = { topic: tp.topic, partition: tp.partition, logStart: 0, logEnd: 0 };
      }
      this.cached = range;
    }
    if (range.topic !== tp.topic || range.partition !== tp.partition) {
      throw new UnknownTopicOrPartition(`this object holds ${topicPartition(range)}, not ${topicPartition(tp)}`);
    }
    return range;
  }

  /**
   * Stores `batch` at the log end, one row per row's worth (a batch too big for one row becomes
   * several: its offsets stay one contiguous range, each row carrying the producer), and moves
   * the end past it.
   */
  append(range: LogRange, batch: AppendBatch, now: number, producer?: ProducerId): AppendedRow[] {
    const appended: AppendedRow[] = [];
    const { logEnd } = range;
    let base = logEnd;
    for (const row of rowsOf(batch, now)) {
      let rowBytes = 0;
      for (const size of row.sizes) rowBytes += size;
      this.db.run(sql`INSERT INTO record_batches (base_offset, count, span, bytes, max_timestamp, append_time, sizes, records,
                                                  producer_id, producer_epoch, base_sequence)
                      VALUES (${base}, ${row.count}, ${row.count}, ${rowBytes}, ${row.maxTimestamp}, ${now},
                              ${row.sizes.slice().buffer as ArrayBuffer}, ${row.records},
                              ${producer?.producerId ?? null}, ${producer?.epoch ?? null}, ${producer?.sequence ?? null})`);
      appended.push({ base, row });
      base += row.count;
    }
    range.logEnd = logEnd + batch.count;
    return appended;
  }

  /**
   * The stored batches from `offset` within `bounds`: those the bounds take whole go as they are
   * stored; only a batch the bounds cut (or the fetch starts inside) is parsed and sliced. No batch
   * is read beyond the first one a bound stops in, so a fetch holds little more than it returns.
   */
  fetchEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): EncodedFetch {
    checkOffset(offset);
    const maxRecords = positiveInteger(bounds.maxRecords, "maxRecords");
    const maxBytes = positiveInteger(bounds.maxBytes, "maxBytes");
    const { logStart, logEnd } = this.range(tp);
    if (offset < logStart || offset > logEnd) {
      throw new OffsetOutOfRange(`offset ${offset} is outside ${topicPartition(tp)} [${logStart}, ${logEnd}]`);
    }
    if (offset === logEnd) return { batches: [], nextOffset: offset, earliest: logStart, latest: logEnd };
    // The row holding `offset` (or the last one before it), then the next ones, read lazily.
    const rows = this.db.cursor<BatchRow>(
      sql`SELECT base_offset, count, span, append_time, max_timestamp, sizes, offsets, records FROM record_batches
          WHERE base_offset >= COALESCE((SELECT MAX(base_offset) FROM record_batches WHERE base_offset <= ${offset}), ${offset})
          ORDER BY base_offset`,
    );
    const { batches, nextOffset } = takeFromRows(rows, offset, maxRecords, maxBytes, bounds.uncut === true);
    return { batches, nextOffset: nextOffset ?? logEnd, earliest: logStart, latest: logEnd };
  }

  /**
   * The stored entries of offsets `from` (at least the log start) up to `to` (exclusive), in
   * order, parsing one batch at a time as the caller goes on.
   */
  *storedEntries(from: number, to: number): Generator<{ offset: number; entry: Entry }> {
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

  /** The first offset whose record's timestamp is at or after `timestamp`; the end offset when none is. */
  offsetForTimestamp(tp: TopicPartition, timestamp: number): number {
    if (!Number.isSafeInteger(timestamp)) throw new InvalidRecord("timestamp must be an integer");
    const { logStart, logEnd } = this.range(tp);
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

  /**
   * Moves the log start up to `offset` (never down): whole rows below it go; one straddling it
   * stays, and its records below the start are never served (reads begin at the start offset).
   * Returns the records that went. Call inside a transaction.
   */
  advanceStart(range: LogRange, offset: number): number {
    if (offset <= range.logStart) return 0;
    const before = this.kept(range.logStart).records;
    const producersAt = this.beforeStartAdvanced(offset, range.logEnd);
    this.db.run(sql`DELETE FROM record_batches WHERE base_offset < ${offset} AND base_offset + span <= ${offset}`);
    // The end is kept with the start: the rows it is read from may all have gone.
    this.db.run(sql`UPDATE partition_meta SET log_start = ${offset}, log_end = ${range.logEnd},
                      producers_at = COALESCE(${producersAt ?? null}, producers_at) WHERE only = 1`);
    this.onStartAdvanced(offset);
    range.logStart = offset;
    return before - this.kept(offset).records;
  }

  /**
   * Removes the local rows wholly below `offset` without moving the log start: tiered storage
   * moved them to a remote segment (see tiering.ts), whose records are still the log's. The
   * producers' snapshot is taken first, as when the start moves. Call inside a transaction.
   */
  removeBelow(range: LogRange, offset: number): void {
    const producersAt = this.beforeStartAdvanced(offset, range.logEnd);
    this.db.run(sql`DELETE FROM record_batches WHERE base_offset + span <= ${offset}`);
    this.db.run(sql`UPDATE partition_meta SET log_end = ${range.logEnd}, producers_at = COALESCE(${producersAt ?? null}, producers_at) WHERE only = 1`);
  }

  /** Records and bytes kept at or after `from` (rows are whole but for the one holding `from`). */
  kept(from: number): KeptSize {
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

  offsets(tp: TopicPartition): OffsetRange {
    const { logStart, logEnd } = this.range(tp);
    return { earliest: logStart, latest: logEnd };
  }
}

export function checkOffset(offset: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidRecord(`offset must be a non-negative integer, got ${offset}`);
}

export function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidRecord(`${name} must be a positive integer, got ${value}`);
  return value;
}
