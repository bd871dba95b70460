/**
 * The one layout behind every time-aware store kind (window, session, join and suppression
 * buffers): entries identified by (serialized key, time, sequence number), kept in a plain
 * `RawKeyValueStore`. Over the runtime's change-logging store, only the data rows are logged, one
 * record per entry written or deleted, each carrying the meta row as it is then; the index rows
 * and the meta row are rebuilt from those records when they are replayed, which restores the store
 * exactly (see time-keyed-changelog.ts).
 *
 * Layout, under an optional namespace (one raw store can hold several of these):
 * - `d` + encodeKey(key) + time + seq → value: a key's entries by time, then seq (per-key reads)
 * - `i` + time + seq + encodeKey(key) → "": the same entries by time (expiry, time-ordered reads)
 * - `m` → JSON `{ streamTime, seq, observed?, emitted? }`: the largest timestamp the owning operator
 *   has seen, the next sequence number (and what windowed stores add: the latest window kept, the
 *   close time final results were emitted up to). Kept in the store so that it is restored with the entries: an operator
 *   recreated after a crash or a wipe closes windows exactly where its predecessor did.
 *
 * What time and seq mean is the caller's: window start and end, session end and start, a record's
 * timestamp and a unique number. Times and seqs are non-negative safe integers. An entry's value
 * also has a timestamp (see `RawKeyValueStore`), what a window's aggregate is stamped with.
 */
import { changelogRows, type ChangelogRows } from "./changelog-rows";
import type { RawKeyValueStore, ValueAndTimestamp } from "./key-value-store";
import { decodeKey, decodeTime, encodeKey, encodeTime, MAX_TIME, TIME_WIDTH } from "./key-codec";
import { timeKeyedHeader } from "./time-keyed-changelog";

export interface TimedEntry {
  /** The serialized key. */
  readonly key: string;
  readonly time: number;
  readonly seq: number;
  readonly value: string;
  /** The value's timestamp. */
  readonly timestamp: number;
}

interface Meta {
  readonly streamTime: number;
  readonly seq: number;
  /** The largest entry time the owner reported keeping (a window store's own stream time, as Kafka's stores track it). */
  readonly observed?: number;
  /** The close time up to which the owner emitted final results (`EmitStrategy.onWindowClose`). */
  readonly emitted?: number;
}

const NO_META: Meta = { streamTime: -1, seq: 0 };

export class TimeKeyedStore {
  private readonly rows: ChangelogRows;

  constructor(
    private readonly raw: RawKeyValueStore,
    private readonly namespace = "",
  ) {
    this.rows = changelogRows(raw);
  }

  get(key: string, time: number, seq: number): string | undefined {
    return this.raw.get(this.dataKey(key, time, seq));
  }

  getWithTimestamp(key: string, time: number, seq: number): ValueAndTimestamp<string> | undefined {
    return this.raw.getWithTimestamp(this.dataKey(key, time, seq));
  }

  /** Creates or replaces an entry (its value stamped `timestamp`, by default the current record's); the index row is written only for a new entry. */
  put(key: string, time: number, seq: number, value: string, timestamp?: number): void {
    const dataKey = this.dataKey(key, time, seq);
    // The data row first: a value its changelog cannot carry is refused with the store unchanged.
    const fresh = this.raw.get(dataKey) === undefined;
    this.rows.writeCarrying(dataKey, value, timestamp, this.metaHeader(), this.metaKey());
    if (fresh) this.rows.writeUnlogged(this.indexKey(key, time, seq), "");
  }

  /** Deletes an entry; an absent one writes nothing (no useless tombstones in the changelog). */
  delete(key: string, time: number, seq: number): void {
    const dataKey = this.dataKey(key, time, seq);
    if (this.raw.get(dataKey) === undefined) return;
    this.rows.writeCarrying(dataKey, null, undefined, this.metaHeader(), this.metaKey());
    this.rows.writeUnlogged(this.indexKey(key, time, seq), null);
  }

  /** The key's entries with `fromTime <= time <= toTime`, by time then seq. */
  fetch(key: string, fromTime: number, toTime: number): TimedEntry[] {
    const from = Math.max(0, fromTime);
    const to = Math.min(MAX_TIME, toTime);
    if (from > to) return [];
    const prefix = `${this.namespace}d${encodeKey(key)}`;
    return this.raw.rangeWithTimestamps(prefix + encodeTime(from), prefix + encodeTime(to) + encodeTime(MAX_TIME)).map((entry) => ({
      key,
      time: decodeTime(entry.key, prefix.length),
      seq: decodeTime(entry.key, prefix.length + TIME_WIDTH),
      value: entry.value,
      timestamp: entry.timestamp,
    }));
  }

  /** Entries of every key with `time < before`, by time, then seq, then key. */
  before(before: number, limit?: number): TimedEntry[] {
    return this.indexed(0, before, limit);
  }

  /** Entries of every key with `fromTime <= time <= toTime`, by time, then seq, then key. */
  between(fromTime: number, toTime: number): TimedEntry[] {
    return this.indexed(Math.max(0, fromTime), toTime + 1);
  }

  /** The close time up to which final results were emitted; undefined before the first emission. */
  emittedCloseTime(): number | undefined {
    return this.meta().emitted;
  }

  /** Records that final results were emitted up to `closeTime` (kept with the entries, so restored with them). */
  markEmitted(closeTime: number): void {
    this.rows.writeAtCommit(this.metaKey(), JSON.stringify({ ...this.meta(), emitted: closeTime }));
  }

  /** Deletes the entries with `time < before` and returns them, in the order of `before`. */
  takeBefore(before: number, limit?: number): TimedEntry[] {
    const taken = this.before(before, limit);
    for (const entry of taken) this.delete(entry.key, entry.time, entry.seq);
    return taken;
  }

  /** The largest timestamp recorded with `advance`; -1 before the first. */
  streamTime(): number {
    return this.meta().streamTime;
  }

  /** The largest entry time reported to `advance`; -1 before the first. */
  observedTime(): number {
    return this.meta().observed ?? -1;
  }

  /**
   * Moves the recorded stream time up to `timestamp` and the observed entry time up to `observed`
   * (neither goes back) and, if asked, reserves the next sequence number; writes only when
   * something changed. Returns the stream time and the seq.
   */
  advance(timestamp: number, reserveSeq = false, observed?: number): { readonly streamTime: number; readonly seq: number } {
    const meta = this.meta();
    const streamTime = Math.max(meta.streamTime, timestamp);
    const seen = observed === undefined ? meta.observed : Math.max(meta.observed ?? -1, observed);
    if (streamTime !== meta.streamTime || reserveSeq || seen !== meta.observed) {
      const next: Meta = {
        streamTime,
        seq: reserveSeq ? meta.seq + 1 : meta.seq,
        ...(seen === undefined ? {} : { observed: seen }),
        ...(meta.emitted === undefined ? {} : { emitted: meta.emitted }),
      };
      this.rows.writeAtCommit(this.metaKey(), JSON.stringify(next));
    }
    return { streamTime, seq: meta.seq };
  }

  /** Entries of every key with `from <= time < before` (`from` at least 0), read through the index: by time, then seq, then key. */
  private indexed(from: number, before: number, limit?: number): TimedEntry[] {
    if (before <= from) return [];
    const prefix = `${this.namespace}i`;
    const found: TimedEntry[] = [];
    // Index keys with a time of `before` or more extend `prefix + encodeTime(before)`, so sort after it.
    let start = prefix + encodeTime(from);
    const end = prefix + encodeTime(Math.min(before, MAX_TIME));
    for (;;) {
      const rows = this.raw.range(start, end, limit === undefined ? undefined : limit - found.length);
      let orphans = 0;
      for (const { key: indexKey } of rows) {
        const time = decodeTime(indexKey, prefix.length);
        const seq = decodeTime(indexKey, prefix.length + TIME_WIDTH);
        const { key } = decodeKey(indexKey, prefix.length + 2 * TIME_WIDTH);
        const entry = this.raw.getWithTimestamp(this.dataKey(key, time, seq));
        if (entry !== undefined) found.push({ key, time, seq, value: entry.value, timestamp: entry.timestamp });
        else {
          // An index record of a changelog written before, whose entry a later layout deleted
          // and compaction dropped (the index is derived now): it goes, unlogged.
          this.rows.writeUnlogged(indexKey, null);
          orphans++;
        }
      }
      if (orphans === 0 || limit === undefined || rows.length === 0) return found;
      start = `${rows[rows.length - 1]!.key}\u0000`;
    }
  }

  private meta(): Meta {
    const text = this.raw.get(this.metaKey());
    return text === undefined ? NO_META : (JSON.parse(text) as Meta);
  }

  /** The header the records of this store's entries carry: the meta row as it is now. */
  private metaHeader() {
    return timeKeyedHeader(this.namespace, this.raw.get(this.metaKey()));
  }

  private metaKey(): string {
    return `${this.namespace}m`;
  }

  private dataKey(key: string, time: number, seq: number): string {
    return `${this.namespace}d${encodeKey(key)}${encodeTime(time)}${encodeTime(seq)}`;
  }

  private indexKey(key: string, time: number, seq: number): string {
    return `${this.namespace}i${encodeTime(time)}${encodeTime(seq)}${encodeKey(key)}`;
  }
}
