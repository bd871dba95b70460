/**
 * A raw store that sends every write to its changelog topic as it makes it: a put as the new
 * value, a delete as a tombstone, in write order, to the task's partition. Because the writes and
 * the changelog records are made together in the caller's transaction, the changelog is the exact
 * history of committed store writes, which is what restoration replays.
 */
import type { Header, KeyValue } from "../record";
import type { RawKeyValueStore } from "../state/key-value-store";
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

  put(key: string, value: string): void {
    this.inner.put(key, value);
    this.log(key, value);
  }

  /** Logged even when the key is absent: a tombstone for nothing is harmless to replay. */
  delete(key: string): void {
    this.inner.delete(key);
    this.log(key, null);
  }

  range(from?: string, to?: string, limit?: number): KeyValue<string, string>[] {
    return this.inner.range(from, to, limit);
  }

  prefix(prefix: string, limit?: number): KeyValue<string, string>[] {
    return this.inner.prefix(prefix, limit);
  }

  private log(key: string, value: string | null): void {
    const { timestamp, headers } = this.writeContext();
    this.collector.send({ topic: this.changelogTopic, partition: this.partition, key, value, timestamp, headers });
  }
}
