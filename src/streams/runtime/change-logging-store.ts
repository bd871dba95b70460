/**
 * A raw store that sends every write to its changelog topic as it makes it: a put as the new
 * value, a delete as a tombstone, in write order, to the task's partition. Because the writes and
 * the changelog records are made together in the caller's transaction, the changelog is the exact
 * history of committed store writes, which is what restoration replays.
 *
 * A put's changelog record carries the value's timestamp as its record timestamp, as Kafka's
 * timestamped stores log theirs: the changelog needs no envelope, and restoration gives every
 * value its timestamp back. A put without a timestamp takes the current record's.
 *
 * Layouts with derived rows use its `ChangelogRows` side (see changelog-rows.ts): rows kept out of
 * the changelog, rows logged once at the commit, and records that carry another row in a header.
 * Such a carried row is owed its own record at the commit when no record in the changelog is sure
 * to carry its latest value: it changed after the last record that carried it, or that record's
 * key was deleted since (compaction would drop it), or this store does not know which record
 * carried it (a new processor: its first delete owes one).
 */
import type { Header, KeyValue } from "../record";
import { checkRecordForLog } from "./record-for-log";
import type { ChangelogRows } from "../state/changelog-rows";
import type { RawKeyValueStore, TimestampedKeyValue, ValueAndTimestamp } from "../state/key-value-store";
import type { RecordSink } from "./types";

/** The timestamp and headers of the changelog record for a write happening now. */
export type WriteContext = () => { readonly timestamp: number; readonly headers: readonly Header[] };

/** A row logged at the commit: whether it is owed a record, when, and which put carries its latest value. */
interface Carried {
  /** The write that made it owed (what its record is stamped with), if it is. */
  owed?: { readonly timestamp: number; readonly headers: readonly Header[] };
  /** The key of the put in the changelog that carries the row's latest value, if known. */
  carrier?: string;
}

export class ChangeLoggingKeyValueStore implements RawKeyValueStore, ChangelogRows {
  /** Rows logged at the commit; a row absent here has no known carrier. */
  private readonly carried = new Map<string, Carried>();
  /** A write as the log's refusal names it (made once, not per write). */
  private readonly described: string;

  constructor(
    private readonly inner: RawKeyValueStore,
    private readonly changelogTopic: string,
    private readonly partition: number,
    private readonly collector: RecordSink,
    private readonly writeContext: WriteContext,
  ) {
    this.described = `a write of store ${changelogTopic.replace(/-changelog$/, "")}`;
  }

  get(key: string): string | undefined {
    return this.inner.get(key);
  }

  getWithTimestamp(key: string): ValueAndTimestamp<string> | undefined {
    return this.inner.getWithTimestamp(key);
  }

  put(key: string, value: string, timestamp?: number): void {
    const context = this.writeContext();
    this.logged(key, value, timestamp ?? context.timestamp, context.headers);
  }

  /** Logged even when the key is absent: a tombstone for nothing is harmless to replay. */
  delete(key: string): void {
    const context = this.writeContext();
    this.logged(key, null, context.timestamp, context.headers);
  }

  writeUnlogged(key: string, value: string | null): void {
    if (value === null) this.inner.delete(key);
    else this.inner.put(key, value, this.writeContext().timestamp);
  }

  writeAtCommit(key: string, value: string): void {
    const { timestamp, headers } = this.writeContext();
    this.inner.put(key, value, timestamp);
    this.carried.set(key, { owed: { timestamp, headers } });
  }

  writeCarrying(key: string, value: string | null, timestamp: number | undefined, header: Header, carried: string): void {
    const context = this.writeContext();
    this.logged(key, value, value === null ? context.timestamp : (timestamp ?? context.timestamp), [...context.headers, header]);
    const row = this.carried.get(carried);
    if (value !== null) this.carried.set(carried, { carrier: key });
    // The record that carried the row's latest value goes at the next compaction: the row is owed one of its own.
    else if (row === undefined || row.carrier === key) this.carried.set(carried, { owed: { timestamp: context.timestamp, headers: context.headers } });
  }

  /** Sends the records owed to rows logged at the commit (the commit's first step, with the record cache's flush). */
  flushOwed(): void {
    for (const [key, row] of this.carried) {
      if (!row.owed) continue;
      const value = this.inner.get(key);
      // A row never written has nothing to lose.
      if (value === undefined) {
        this.carried.delete(key);
        continue;
      }
      this.collector.send({ topic: this.changelogTopic, partition: this.partition, key, value, ...row.owed });
      // Its own record carries it now, and is never deleted by a carrying write.
      this.carried.set(key, { carrier: key });
    }
  }

  /** Writes a row (null deletes it) and sends its changelog record, stamped `time`, with `headers`. */
  private logged(key: string, value: string | null, time: number, headers: readonly Header[]): void {
    if (value === null) this.inner.delete(key);
    else {
      // Before the write: a value its changelog cannot carry is refused with the store unchanged.
      checkRecordForLog(this.described, key, value, headers, time);
      this.inner.put(key, value, time);
    }
    this.collector.send({ topic: this.changelogTopic, partition: this.partition, key, value, timestamp: time, headers });
  }

  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[] {
    return this.inner.range(from, to, limit);
  }

  rangeWithTimestamps(from?: string, to?: string, limit?: number): TimestampedKeyValue<string, string>[] {
    return this.inner.rangeWithTimestamps(from, to, limit);
  }

  prefix(prefix: string, limit?: number): KeyValue<string, string>[] {
    return this.inner.prefix(prefix, limit);
  }
}
