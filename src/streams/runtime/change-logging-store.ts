/**
 * A raw store that sends every write to its changelog topic as it makes it: a put as the new
 * value, a delete as a tombstone, in write order, to the task's partition. Because the writes and
 * the changelog records are made together in the caller's transaction, the changelog is the exact
 * history of committed store writes, which is what restoration replays.
 *
 * A put's changelog record carries the value's timestamp as its record timestamp, as Kafka's
 * timestamped stores log theirs: the changelog needs no envelope, and restoration gives every
 * value its timestamp back. A put without a timestamp takes the current record's.
 */
import type { Header, KeyValue } from "../record";
import { checkRecordForLog } from "./record-for-log";
import type { RawKeyValueStore, TimestampedKeyValue, ValueAndTimestamp } from "../state/key-value-store";
import type { RecordSink } from "./types";

/** The timestamp and headers of the changelog record for a write happening now. */
export type WriteContext = () => { readonly timestamp: number; readonly headers: readonly Header[] };

export class ChangeLoggingKeyValueStore implements RawKeyValueStore {
  constructor(
    private readonly inner: RawKeyValueStore,
    private readonly changelogTopic: string,
    private readonly partition: number,
    private readonly collector: RecordSink,
    private readonly writeContext: WriteContext,
  ) {}

  get(key: string): string | undefined {
    return this.inner.get(key);
  }

  getWithTimestamp(key: string): ValueAndTimestamp<string> | undefined {
    return this.inner.getWithTimestamp(key);
  }

  put(key: string, value: string, timestamp?: number): void {
    const context = this.writeContext();
    const time = timestamp ?? context.timestamp;
    // Before the write: a value its changelog cannot carry is refused with the store unchanged.
    checkRecordForLog(`a write of store ${this.changelogTopic.replace(/-changelog$/, "")}`, key, value, context.headers, time);
    this.inner.put(key, value, time);
    this.collector.send({ topic: this.changelogTopic, partition: this.partition, key, value, timestamp: time, headers: context.headers });
  }

  /** Logged even when the key is absent: a tombstone for nothing is harmless to replay. */
  delete(key: string): void {
    this.inner.delete(key);
    const { timestamp, headers } = this.writeContext();
    this.collector.send({ topic: this.changelogTopic, partition: this.partition, key, value: null, timestamp, headers });
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
