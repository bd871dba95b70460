/**
 * What a partition knows of its idempotent producers, and how it is rebuilt (pure): Kafka's
 * `ProducerStateEntry`, its snapshot and the replay of the log after it.
 *
 * Every appended row carries its producer's id, epoch and base sequence (Kafka's batch header),
 * so the state is a function of the log: an entry takes each of the producer's batches in offset
 * order (`withBatch`). A snapshot of the entries (the `producers` table) stands for the batches
 * below its offset; the rows from there on are replayed over it at start-up. Taking a batch is
 * idempotent (a batch at or below the entry's `lastBase` is already in it), so an entry stored
 * ahead of the snapshot's offset (a retry's `lastSeen`) is replayed over safely.
 */
import { REMEMBERED_BATCHES } from "../types";

/** One of a producer's remembered batches. */
export interface ProducerBatch {
  readonly sequence: number;
  readonly base: number;
  readonly count: number;
}

/** A producer's state: its newest epoch, when it last appended (or retried), its last batches. */
export interface ProducerEntry {
  readonly epoch: number;
  readonly lastSeen: number;
  /** The base offset of the newest batch taken (also after a new epoch forgot the older ones). */
  readonly lastBase: number;
  /** The current epoch's last batches, oldest first, at most REMEMBERED_BATCHES. */
  readonly batches: readonly ProducerBatch[];
}

/** A producer's batch as the log holds it. */
export interface LoggedBatch extends ProducerBatch {
  readonly producerId: string;
  readonly epoch: number;
  readonly appendTime: number;
}

/**
 * The entry after the producer's batch `batch`: a newer epoch starts afresh, the same epoch keeps
 * its last REMEMBERED_BATCHES batches. A batch the entry already holds (at or below `lastBase`)
 * leaves it as it is.
 */
export function withBatch(entry: ProducerEntry | undefined, batch: LoggedBatch): ProducerEntry {
  if (entry && batch.base <= entry.lastBase) return entry;
  const taken = { sequence: batch.sequence, base: batch.base, count: batch.count };
  if (!entry || batch.epoch !== entry.epoch) return { epoch: batch.epoch, lastSeen: batch.appendTime, lastBase: batch.base, batches: [taken] };
  const kept = entry.batches.filter((b) => b.sequence > batch.sequence - REMEMBERED_BATCHES);
  return { epoch: entry.epoch, lastSeen: Math.max(entry.lastSeen, batch.appendTime), lastBase: batch.base, batches: [...kept, taken] };
}

/** A `record_batches` row's extent and producer columns, as replay reads them. */
export type ProducerRow = {
  base_offset: number;
  span: number;
  append_time: number;
  producer_id: string | null;
  producer_epoch: number | null;
  base_sequence: number | null;
};

/**
 * The producers' batches among `rows` (in offset order): a batch too big for one row was stored as
 * consecutive rows with the same producer, epoch and sequence, and is one batch again here.
 */
export function* loggedBatches(rows: Iterable<ProducerRow>): Generator<LoggedBatch> {
  type OpenBatch = Omit<LoggedBatch, "count"> & { end: number };
  const close = ({ end, ...rest }: OpenBatch): LoggedBatch => ({ ...rest, count: end - rest.base });
  let open: OpenBatch | undefined;
  for (const row of rows) {
    const { producer_id: producerId, producer_epoch: epoch, base_sequence: sequence } = row;
    if (open && producerId === open.producerId && epoch === open.epoch && sequence === open.sequence && row.base_offset === open.end) {
      open.end = row.base_offset + row.span;
      continue;
    }
    if (open) yield close(open);
    open =
      producerId === null || epoch === null || sequence === null
        ? undefined
        : { producerId, epoch, sequence, base: row.base_offset, end: row.base_offset + row.span, appendTime: row.append_time };
  }
  if (open) yield close(open);
}

/** The producers whose entries expire at `now` (not seen for `expiryMs`: Kafka's producer id expiration). */
export function expiredProducers(entries: ReadonlyMap<string, ProducerEntry>, now: number, expiryMs: number): string[] {
  const cutoff = now - expiryMs;
  return [...entries].filter(([, entry]) => entry.lastSeen < cutoff).map(([id]) => id);
}

/** A `producers` row: an entry as the snapshot stores it. */
export type SnapshotRow = {
  producer_id: string;
  epoch: number;
  last_seen: number;
  last_base: number;
  /** `[[sequence, base, count], …]`, oldest first. */
  batches: string;
};

export function toSnapshotRow(producerId: string, entry: ProducerEntry): SnapshotRow {
  return {
    producer_id: producerId,
    epoch: entry.epoch,
    last_seen: entry.lastSeen,
    last_base: entry.lastBase,
    batches: JSON.stringify(entry.batches.map((b) => [b.sequence, b.base, b.count])),
  };
}

export function fromSnapshotRow(row: SnapshotRow): ProducerEntry {
  const batches = (JSON.parse(row.batches) as [number, number, number][]).map(([sequence, base, count]) => ({ sequence, base, count }));
  return { epoch: row.epoch, lastSeen: row.last_seen, lastBase: row.last_base, batches };
}
