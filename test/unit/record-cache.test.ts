/**
 * The record cache as pure logic (no runtime): LRU order, byte accounting, the order dirty keys are
 * flushed in, eviction (a dirty entry flushes its cache, itself first) and re-entrant listeners.
 * Cases ported from Kafka Streams' NamedCacheTest and ThreadCacheTest, with inputs and expectations
 * unchanged; sizes come from `cacheEntrySize`, as Kafka's come from `memoryCacheEntrySize`.
 */
import { describe, expect, it } from "vitest";
import { cacheEntrySize, type DirtyEntry, RecordCache } from "../../src/streams/state/record-cache";

const NS = "0_0-store";
const NS1 = "0_0-store1";
const NS2 = "0_0-store2";

function recording(cache: RecordCache<string>, namespace = NS): DirtyEntry<string>[] {
  const received: DirtyEntry<string>[] = [];
  cache.setFlushListener(namespace, (entries) => received.push(...entries));
  return received;
}

const dirty = (cache: RecordCache<string>, namespace: string, key: string, value: string | null, context = "") => cache.put(namespace, key, value, 1, context);
const clean = (cache: RecordCache<string>, namespace: string, key: string, value: string) => cache.putClean(namespace, key, value, 1, "");

describe("RecordCache (Kafka's NamedCacheTest)", () => {
  it("shouldKeepTrackOfMostRecentlyAndLeastRecentlyUsed (seen in the order of evictions)", () => {
    const cache = new RecordCache<string>(cacheEntrySize("K1", "V1") * 5);
    for (const i of [1, 2, 3, 4, 5]) clean(cache, NS, `K${i}`, `V${i}`);
    // The eldest (K1) would go first; a read makes it the most recently used.
    expect(cache.get(NS, "K1")?.value).toBe("V1");
    clean(cache, NS, "K6", "V6");
    expect(cache.get(NS, "K2")).toBeUndefined();
    expect(cache.get(NS, "K1")).toBeDefined();
    clean(cache, NS, "K7", "V7");
    expect(cache.get(NS, "K3")).toBeUndefined();
    expect(cache.size).toBe(5);
  });

  it("shouldKeepTrackOfSize", () => {
    const cache = new RecordCache<string>();
    for (const key of ["\u0000", "\u0001", "\u0002"]) dirty(cache, NS, key, "\u0000");
    expect(cache.bytes).toBe(cacheEntrySize("\u0000", "\u0000") * 3);
  });

  it("shouldPutGet", () => {
    const cache = new RecordCache<string>();
    dirty(cache, NS, "0", "10");
    dirty(cache, NS, "1", "11");
    dirty(cache, NS, "2", "12");
    expect(["0", "1", "2"].map((k) => cache.get(NS, k)?.value)).toEqual(["10", "11", "12"]);
  });

  it("shouldOverwriteAll", () => {
    const cache = new RecordCache<string>();
    for (const value of ["0", "1", "2"]) dirty(cache, NS, "0", value);
    expect(cache.get(NS, "0")?.value).toBe("2");
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBe(cacheEntrySize("0", "2"));
  });

  it("shouldFlushDirtEntriesOnEviction", () => {
    // Budget for exactly three entries: a fourth evicts the eldest (0, dirty), which flushes the cache.
    const cache = new RecordCache<string>(cacheEntrySize("0", "10") * 3);
    const flushed = recording(cache);
    dirty(cache, NS, "0", "10", "headers");
    clean(cache, NS, "1", "20");
    dirty(cache, NS, "2", "30");
    dirty(cache, NS, "3", "40");
    expect(flushed.map((e) => [e.key, e.value, e.context])).toEqual([
      ["0", "10", "headers"],
      ["2", "30", ""],
      ["3", "40", ""],
    ]);
    expect(cache.get(NS, "0")).toBeUndefined();
    expect(cache.dirtyCount()).toBe(0);
  });

  it("shouldThrowIllegalStateExceptionWhenTryingToOverwriteDirtyEntryWithCleanEntry", () => {
    const cache = new RecordCache<string>();
    dirty(cache, NS, "0", "10");
    expect(() => clean(cache, NS, "0", "10")).toThrow(/dirty/);
  });

  it("shouldRemoveDeletedValuesOnFlush", () => {
    const cache = new RecordCache<string>();
    recording(cache);
    dirty(cache, NS, "0", null);
    dirty(cache, NS, "1", "20");
    cache.flush(NS);
    expect(cache.size).toBe(1);
    expect(cache.get(NS, "1")).toBeDefined();
    expect(cache.get(NS, "0")).toBeUndefined();
  });

  it("shouldNotThrowIllegalArgumentAfterEvictingDirtyRecordAndThenPuttingNewRecordWithSameKey", () => {
    const cache = new RecordCache<string>(0);
    cache.setFlushListener(NS, () => clean(cache, NS, "3", "3"));
    expect(() => dirty(cache, NS, "3", "3")).not.toThrow();
  });

  it("re-dirtying a key moves it to the end of the flush order (records in their last write's order)", () => {
    const cache = new RecordCache<string>();
    const flushed = recording(cache);
    dirty(cache, NS, "a", "1");
    dirty(cache, NS, "b", "1");
    dirty(cache, NS, "a", "2");
    cache.flush(NS);
    expect(flushed.map((e) => [e.key, e.value])).toEqual([
      ["b", "1"],
      ["a", "2"],
    ]);
  });
});

describe("RecordCache (Kafka's ThreadCacheTest)", () => {
  it("evict", () => {
    const cache = new RecordCache<string>(cacheEntrySize("K1", "V1"));
    const received = recording(cache);
    for (const i of [1, 2, 3, 4, 5]) dirty(cache, NS, `K${i}`, `V${i}`);
    expect(received[0]).toMatchObject({ key: "K1", value: "V1" });
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
  });

  it("shouldNotFlushAfterDelete (a put then a deletion flush as one deletion)", () => {
    const cache = new RecordCache<string>(10_000);
    const received = recording(cache);
    dirty(cache, NS, "0", "0");
    dirty(cache, NS, "0", null);
    cache.flush(NS);
    expect(received.map((e) => [e.key, e.value])).toEqual([["0", null]]);
    cache.flush(NS);
    expect(received).toHaveLength(1);
  });

  it("shouldNotClashWithOverlappingNames", () => {
    const cache = new RecordCache<string>(10_000);
    dirty(cache, NS1, "0", "0");
    dirty(cache, NS2, "0", "1");
    expect(cache.get(NS1, "0")?.value).toBe("0");
    expect(cache.get(NS2, "0")?.value).toBe("1");
  });

  it("shouldSkipEntriesWhereValueHasBeenEvictedFromCache / shouldReturnAllUnevictedValuesFromCache", () => {
    const entrySize = cacheEntrySize("0", "0");
    const cache = new RecordCache<string>(entrySize * 5);
    recording(cache);
    for (const i of [0, 1, 2, 3, 4]) dirty(cache, NS, String(i), String(i));
    expect(cache.size).toBe(5);
    // should evict 0
    dirty(cache, NS, "6", "6");
    expect(cache.range(NS, "0", "5")[0]?.key).toBe("1");
    expect(cache.range(NS).map((e) => e.key)).toEqual(["1", "2", "3", "4", "6"]);
  });

  it("shouldFetchAllEntriesInCache (in key order)", () => {
    const cache = new RecordCache<string>(10_000);
    recording(cache);
    const keys = Array.from({ length: 11 }, (_, i) => String.fromCharCode(65 + i));
    for (const key of [...keys].reverse()) dirty(cache, NS, key, key);
    expect(cache.range(NS).map((e) => e.key)).toEqual(keys);
  });

  it("shouldFlushDirtyEntriesForNamespace", () => {
    const cache = new RecordCache<string>(100_000);
    const received = recording(cache, NS1);
    for (const key of ["0", "1", "2"]) dirty(cache, NS1, key, key);
    dirty(cache, NS2, "4", "4");
    cache.flush(NS1);
    expect(received.map((e) => e.key)).toEqual(["0", "1", "2"]);
  });

  it("shouldNotFlushCleanEntriesForNamespace", () => {
    const cache = new RecordCache<string>(100_000);
    const received = recording(cache, NS1);
    for (const key of ["0", "1", "2"]) clean(cache, NS1, key, key);
    clean(cache, NS2, "4", "4");
    cache.flush(NS1);
    expect(received).toEqual([]);
  });

  it.each([1, 0])("shouldEvictImmediatelyIfCacheSizeIsZeroOrVerySmall (%i bytes)", (maxBytes) => {
    const cache = new RecordCache<string>(maxBytes);
    const received = recording(cache);
    dirty(cache, NS, "0", "0");
    expect(received).toHaveLength(1);
    // flushing should have no further effect
    cache.flush(NS);
    expect(received).toHaveLength(1);
  });

  it("shouldEvictAfterPutAll", () => {
    const cache = new RecordCache<string>(1);
    const received = recording(cache);
    dirty(cache, NS, "0", "5");
    dirty(cache, NS, "1", "6");
    expect(received).toHaveLength(2);
  });

  it("shouldNotForwardCleanEntryOnEviction", () => {
    const cache = new RecordCache<string>(0);
    const received = recording(cache);
    clean(cache, NS, "1", "0");
    expect(received).toEqual([]);
  });

  it("shouldNotLoopForEverWhenEvictingAndCurrentCacheIsEmpty", () => {
    const maxBytes = 100;
    const cache = new RecordCache<string>(maxBytes);
    // A flush of NS puts into NS1 when the cache is already over its budget.
    cache.setFlushListener(NS, () => dirty(cache, NS1, "0", "\u0000\u0000"));
    recording(cache, NS1);
    recording(cache, NS2);
    dirty(cache, NS2, "1", "\u0000");
    dirty(cache, NS, "1", "\u0000");
    const remaining = maxBytes - cache.bytes;
    expect(() => dirty(cache, NS, "2", "x".repeat(remaining + 100))).not.toThrow();
  });

  it("shouldCleanupNamedCacheOnClose", () => {
    const cache = new RecordCache<string>(100_000);
    clean(cache, NS1, "1", "1");
    clean(cache, NS2, "1", "1");
    expect(cache.size).toBe(2);
    cache.clear(NS2);
    expect(cache.size).toBe(1);
    expect(cache.get(NS2, "1")).toBeUndefined();
  });

  it("flushAll flushes until no cache is dirty, also what a flush wrote to another cache", () => {
    const cache = new RecordCache<string>();
    const downstream = recording(cache, NS2);
    cache.setFlushListener(NS1, (entries) => {
      for (const e of entries) dirty(cache, NS2, e.key, `${e.value}!`);
    });
    dirty(cache, NS2, "z", "0");
    dirty(cache, NS1, "a", "1");
    cache.flushAll();
    expect(cache.dirtyCount()).toBe(0);
    expect(downstream.map((e) => [e.key, e.value])).toEqual([
      ["z", "0"],
      ["a", "1!"],
    ]);
  });

  it("refuses a budget that is not a byte count", () => {
    expect(() => new RecordCache(-1)).toThrow(RangeError);
    expect(() => new RecordCache(1.5)).toThrow(RangeError);
  });

  it("counts UTF-8 bytes", () => {
    expect(cacheEntrySize("é", "€") - cacheEntrySize("e", "e")).toBe(1 + 2);
  });
});
