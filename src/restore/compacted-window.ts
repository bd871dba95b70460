/**
 * A restore window (pure): the changelog batches one restore round reads ahead for one changelog,
 * compacted in memory before the instance gets them as one batch. A history with many records per
 * key (a count updated 3 times is 3 records) then costs the instance its keys, not its records:
 * only each key's latest record survives, in the order of those latest records (a tombstone
 * survives as the key's delete). That is what compaction of the changelog over the window's range
 * would keep, and applying it leaves the store as replaying every record would — the argument log
 * compaction already rests on (every record of a key writes the same store rows; a windowed
 * store's meta row is carried by every record of its data keys, the newest last, see
 * src/streams/state/time-keyed-changelog.ts).
 *
 * What compaction drops must not be lost to the instance: the input positions records carry (I5)
 * are gathered over every record read, and the batch says how many records it stands for. The
 * window covers `[fromOffset, nextOffset)` and nothing past its last record folded, so the
 * instance's checkpoint, moved to `nextOffset` with the writes, never claims a record whose write
 * it does not hold (I1).
 *
 * Bounds: at most `maxBytes` of records after compaction (as a plain batch is, so the instance's
 * transaction and what crosses to it stay as large as one batch; the first record always goes in).
 * The next batch is read only as large as the room left is likely to take, judged by how much of
 * the last batch the window kept (`nextFetchBytes`): a history that compacts well is read in whole
 * batches, keys all new fill the window and no more. A fetched batch that would overflow it all
 * the same is folded only up to there; the window ends at the first record left out, which the
 * next round fetches again.
 */
import { batchEntries, type EncodedFetch, type Entry } from "../log/record-batch";
import { recordBytes, utf8Length } from "../log/records";
import type { FetchResult, Header, LogRecord } from "../log/types";
import { POSITION_HEADER, ReachedPositions } from "../streams/runtime/position-header";

/** Input partition (`topic/partition`) → one past the highest offset a record read names. */
export type WindowPositions = Record<string, number>;

/**
 * A key's latest record: as fetched decoded, or as the stored entry it came in (an encoded fetch),
 * made a record only if it is still the key's latest when the window is handed on.
 */
type Kept =
  | { readonly bytes: number; readonly record: LogRecord }
  | { readonly bytes: number; readonly entry: Entry; readonly offset: number; readonly appendTime: number };

/** A batch as the window takes it: decoded records, or the stored batches an encoded fetch returns. */
export type WindowBatch = Pick<FetchResult, "records" | "nextOffset"> | Pick<EncodedFetch, "batches" | "nextOffset">;

export class CompactedWindow {
  /** Key → its latest record read; insertion order is the order of those latest records. */
  private readonly latest = new Map<string, Kept>();
  private keptBytes = 0;
  private read = 0;
  private next: number;
  private full = false;
  private readonly reached = new ReachedPositions();
  /** The last batch added: its records and bytes, and how much the window grew by it. */
  private last = { records: 0, bytes: 0, growth: 0 };
  /** The last stored batch parsed (see `parse`). */
  private parsed: { readonly text: string; readonly entries: readonly Entry[] } | undefined;

  constructor(
    /** Where the window starts: the instance's position. */
    readonly fromOffset: number,
    private readonly maxBytes: number,
  ) {
    this.next = fromOffset;
  }

  /**
   * Folds a batch fetched at `nextOffset` in, record by record, while the compacted window stays
   * within its bytes. True when every record went in (the window may take another batch). An
   * encoded batch's records are not decoded to be folded: only those still latest when the window
   * is handed on are (`records`), so a record a later one of its key replaces costs no object.
   */
  add(fetched: WindowBatch): boolean {
    if (this.full) throw new Error("restore window: a batch added after the window was full");
    const before = this.keptBytes;
    this.last = { records: 0, bytes: 0, growth: 0 };
    const taken = "records" in fetched ? this.addRecords(fetched.records) : this.addEncoded(fetched.batches);
    if (taken) this.next = Math.max(this.next, fetched.nextOffset);
    this.last.growth = this.keptBytes - before;
    return taken;
  }

  private addRecords(records: readonly LogRecord[]): boolean {
    for (const record of records) {
      if (!this.fold(record.offset, record.key, { bytes: recordBytes(record.key, record.value, record.headers), record })) return false;
      this.reached.add(record.headers);
    }
    return true;
  }

  private addEncoded(batches: EncodedFetch["batches"]): boolean {
    for (const batch of batches) {
      const entries = this.parse(batch.records);
      const { first, end } = batchEntries(batch, entries);
      for (let i = first; i < end; i++) {
        const entry = entries[i]!;
        const offset = batch.offsets ? batch.offsets[i - first]! : batch.base + i - first;
        const flat = entry[3];
        // As the log measured it, else as `recordBytes` measures the decoded record: key, value, each header's key and value.
        let bytes = batch.sizes?.[i - first];
        if (bytes === undefined) {
          bytes = (entry[0] === null ? 0 : utf8Length(entry[0])) + utf8Length(entry[1]);
          if (flat) for (const text of flat) bytes += utf8Length(text);
        }
        if (!this.fold(offset, entry[0], { bytes, entry, offset, appendTime: batch.appendTime })) return false;
        if (flat) this.reached.addFlat(flat);
      }
    }
    return true;
  }

  /**
   * A stored batch's entries. The last one parsed is kept: a batch the log sent uncut
   * (`FetchBounds.uncut`) comes again with the next fetch, which takes up where the last one's bounds cut it.
   */
  private parse(text: string): readonly Entry[] {
    if (this.parsed?.text !== text) this.parsed = { text, entries: JSON.parse(text) as Entry[] };
    return this.parsed.entries;
  }

  /** One record in, unless it would overflow the window: then the window ends before it (false). */
  private fold(offset: number, recordKey: string | null, kept: Kept): boolean {
    if (offset < this.next) throw new Error(`restore window: record at offset ${offset} before the window's end ${this.next}`);
    // A null key restores as the key "" (src/task/restoration.ts), so it compacts as that key.
    const key = recordKey ?? "";
    const replaced = this.latest.get(key);
    const { bytes } = kept;
    const after = this.keptBytes - (replaced?.bytes ?? 0) + bytes;
    if (this.read > 0 && after > this.maxBytes) {
      // Ends before this record: the next round reads it again.
      this.next = offset;
      this.full = true;
      return false;
    }
    // Deleted first, so the key moves to where its latest record stands.
    if (replaced) this.latest.delete(key);
    this.latest.set(key, kept);
    this.keptBytes = after;
    this.read++;
    this.last.records++;
    this.last.bytes += bytes;
    return true;
  }

  /**
   * How many bytes the next batch may be read with (a fetch's bound, at most `batchBytes`): the
   * room left over the share of the last batch the window kept (at least 1/16, so a batch that
   * compacted away entirely does not make the next one unbounded); 0 when the window is full or
   * its room would not take one record of the last batch's average size.
   */
  nextFetchBytes(batchBytes: number): number {
    const room = this.maxBytes - this.keptBytes;
    const { records, bytes, growth } = this.last;
    if (this.full || room <= 0 || records === 0) return 0;
    const kept = Math.max(growth / bytes, 1 / 16);
    const bound = Math.min(batchBytes, Math.floor(room / kept));
    return bound < bytes / records ? 0 : bound;
  }

  /** One past the last offset the window covers: where the next window starts. */
  get nextOffset(): number {
    return this.next;
  }

  /** Records the last batch added brought in (all of it, when `add` answered true). */
  get lastAdded(): number {
    return this.last.records;
  }

  /** Records read into the window (what the restore replays from the changelog, compacted or not). */
  get recordsRead(): number {
    return this.read;
  }

  /** The window's bytes after compaction. */
  get bytes(): number {
    return this.keptBytes;
  }

  /** The window is at its bound: no further batch goes in. */
  get isFull(): boolean {
    return this.full;
  }

  /**
   * Each key's latest record, in the order of those records' offsets, without the input position
   * it names: `positions()` has them all, so the instance need not read them again.
   */
  records(): LogRecord[] {
    return Array.from(this.latest.values(), (kept) => {
      if ("entry" in kept) return recordOf(kept.entry, kept.offset, kept.appendTime);
      const { record } = kept;
      return record.headers.some((h) => h.key === POSITION_HEADER) ? { ...record, headers: record.headers.filter((h) => h.key !== POSITION_HEADER) } : record;
    });
  }

  /** The input positions every record read names, the dropped ones too. */
  positions(): WindowPositions {
    return { ...this.reached.reached };
  }
}

/** A stored entry as the record `decodeBatches` makes of it (src/log/record-batch.ts), without the input position it names. */
function recordOf(entry: Entry, offset: number, appendTime: number): LogRecord {
  const flat = entry[3];
  const headers: Header[] = [];
  if (flat) for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] !== POSITION_HEADER) headers.push({ key: flat[i]!, value: flat[i + 1]! });
  return { offset, key: entry[0], value: entry[1], headers, timestamp: entry[2] ?? appendTime };
}
