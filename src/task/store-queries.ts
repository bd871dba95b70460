/**
 * Reads of a task instance's stores for interactive queries: point reads, ranges, bounded scans in
 * key order, and the windows or sessions of a key. Values stay serialized; which instance may
 * answer (RUNNING active, or stale) is the task object's decision. They read what the task has
 * processed, committed or not, as Kafka's interactive queries do: the stores' held writes, and a
 * cached store's record cache over them.
 */
import type { KeyValue } from "../streams/record";
import type { CacheReads } from "../streams/runtime/types";
import { CacheOverlay } from "../streams/runtime/caching-store";
import { compareKeys, type RawKeyValueStore } from "../streams/state/key-value-store";
import { fetchSessions } from "../streams/state/session-store";
import { fetchWindows } from "../streams/state/window-store";
import type { WindowedValue } from "../streams/windowed";
import type { ScanBounds } from "./protocol";
import type { SqliteStoreBackend } from "./sqlite-stores";

export class StoreQueries {
  constructor(
    private readonly stores: SqliteStoreBackend,
    /** The running processor's record cache, if there is one now. */
    private readonly cache: () => CacheReads | undefined = () => undefined,
  ) {}

  /** The windows (or sessions) of a key in a window or session store, values still serialized. */
  windows(store: string, key: string, from: number, to: number, kind: "window" | "session"): WindowedValue<string>[] {
    const raw = this.stores.keyValue(store);
    return kind === "session" ? fetchSessions(raw, key, from, to) : fetchWindows(raw, key, from, to);
  }

  /** Reads a key of a store; only a RUNNING active instance answers with authority. */
  get(store: string, key: string): string | undefined {
    return this.reads(store).get(key);
  }

  range(store: string, from?: string, to?: string, limit?: number): KeyValue<string, string>[] {
    return this.reads(store).range(from, to, limit);
  }

  prefix(store: string, prefix: string, limit?: number): KeyValue<string, string>[] {
    return this.reads(store).prefix(prefix, limit);
  }

  /** The store as the task sees it: through the record cache, when the running processor has one. */
  private reads(store: string): Pick<RawKeyValueStore, "get" | "range" | "prefix"> {
    const raw = this.stores.keyValue(store);
    const cache = this.cache();
    return cache ? new CacheOverlay(cache, store, raw) : raw;
  }

  /**
   * Entries of a store in key order (UTF-8 bytes) within every bound given: `from <= key <= to`,
   * key starts with `prefix`, key strictly after `after` (a cursor); at most `limit`.
   */
  scan(store: string, bounds: ScanBounds): KeyValue<string, string>[] {
    const prefix = bounds.prefix ?? "";
    let lower = bounds.from ?? "";
    if (compareKeys(prefix, lower) > 0) lower = prefix;
    const after = bounds.after !== undefined && compareKeys(bounds.after, lower) >= 0 ? bounds.after : undefined;
    if (after !== undefined) lower = after;
    // Every key with the prefix sorts below the prefix followed by the largest code point twice.
    let upper = bounds.to;
    const prefixEnd = prefix === "" ? undefined : prefix + "\u{10FFFF}\u{10FFFF}";
    if (prefixEnd !== undefined && (upper === undefined || compareKeys(prefixEnd, upper) < 0)) upper = prefixEnd;
    if (upper !== undefined && compareKeys(lower, upper) > 0) return [];
    const rows = this.range(store, lower, upper, bounds.limit + (after === undefined ? 0 : 1));
    return rows.filter((row) => row.key !== after && row.key.startsWith(prefix)).slice(0, bounds.limit);
  }
}
