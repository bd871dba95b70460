/**
 * Ported from Kafka Streams' CachingInMemoryKeyValueStoreTest: the caching layer over an in-memory
 * store, a 150-byte record cache and a flush listener that keeps the last update forwarded per key
 * (`CacheFlushListenerStub`). Inputs and expectations are Kafka's; `addItemsToCache` adds entries
 * until their sizes (`cacheEntrySize`, Kafka's `memoryCacheEntrySize`) reach the budget.
 *
 * Not ported: the tests of closing (a store here has no close of its own: its task processor is
 * dropped with its cache, see task-processor.ts), of a closed store refusing calls, of null keys
 * (TypeScript's types refuse them) and of reverse iteration (stores have none); the mock-ordering
 * tests (`shouldDelegateInit`, `shouldSetFlushListener`, `shouldReturnUnderlying`) test Java wiring.
 * `shouldMatchPositionAfterPut` is ported as what a position is for here: the position header of
 * the changelog record a flush writes is the one of the key's last write, not of the record being
 * processed at the flush.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { Header } from "../../../src/streams/record";
import { CachingKeyValueStore, type WriteOrigin } from "../../../src/streams/runtime/caching-store";
import { ChangeLoggingKeyValueStore, type WriteContext } from "../../../src/streams/runtime/change-logging-store";
import { positionFromHeaders, positionHeader } from "../../../src/streams/runtime/position-header";
import { ProcessorState } from "../../../src/streams/runtime/processor-state";
import type { OutgoingRecord } from "../../../src/streams/runtime/types";
import { InMemoryStoreBackend } from "../../../src/streams/state/in-memory";
import type { RawKeyValueStore } from "../../../src/streams/state/key-value-store";
import { cacheEntrySize, RecordCache } from "../../../src/streams/state/record-cache";
import { TypedKeyValueStore } from "../../../src/streams/state/typed-store";
import { Serdes } from "../../../src/streams/serdes";

const TOPIC = "topic";
const maxCacheSizeBytes = 150;

/** Kafka's `CacheFlushListenerStub`: the last update forwarded per key. */
type Forwarded = Map<string, { newValue: string | null; oldValue: string | null }>;

let task: ProcessorState;
let cache: RecordCache<WriteOrigin>;
let underlyingStore: RawKeyValueStore;
let store: CachingKeyValueStore;
let forwarded: Forwarded;
let sendOldValues: boolean;

/** `context.setRecordContext(new ProcessorRecordContext(timestamp, offset, partition, topic, headers))`. */
function setRecordContext(timestamp: number, offset: number, topic = TOPIC): void {
  task.current = { position: { topic, partition: 0, offset }, timestamp };
}

/** What the runtime's write context gives a store: the current record's timestamp and position. */
const writeContext: WriteContext = () => {
  const current = task.current;
  return { timestamp: current?.timestamp ?? 0, headers: current?.position ? [positionHeader(current.position)] : [] };
};

function setUp(underlying: RawKeyValueStore = new InMemoryStoreBackend().keyValue("store")): void {
  task = new ProcessorState("app", "0_0", 0, -1);
  underlyingStore = underlying;
  cache = new RecordCache<WriteOrigin>(maxCacheSizeBytes);
  store = new CachingKeyValueStore("store", underlyingStore, cache, task, writeContext);
  forwarded = new Map();
  sendOldValues = false;
  store.setFlushListener(
    ({ key, newValue, oldValue }) => forwarded.set(key, { newValue: newValue?.value ?? null, oldValue: oldValue?.value ?? null }),
    () => sendOldValues,
  );
  setRecordContext(10, 0);
}

const entries = (raw: RawKeyValueStore) => raw.range().length;
const keysOf = (raw: RawKeyValueStore, from?: string, to?: string) => raw.range(from, to).map((e) => e.key);

function addItemsToCache(): number {
  let cachedSize = 0;
  let i = 0;
  while (cachedSize < maxCacheSizeBytes) {
    const kv = String(i++);
    store.put(kv, kv);
    cachedSize += cacheEntrySize(kv, kv);
  }
  return i;
}

describe("CachingInMemoryKeyValueStoreTest", () => {
  beforeEach(() => setUp());

  it("shouldAvoidFlushingDeletionsWithoutDirtyKeys", () => {
    const added = addItemsToCache();
    // all dirty entries should have been flushed
    expect(entries(underlyingStore)).toBe(added);
    expect(forwarded.size).toBe(added);

    store.put("key", "value");
    expect(entries(underlyingStore)).toBe(added);
    expect(forwarded.size).toBe(added);

    store.delete("key");
    store.flush();
    expect(entries(underlyingStore)).toBe(added);
    expect(forwarded.size).toBe(added);
  });

  it("shouldPutGetToFromCache", () => {
    store.put("key", "value");
    store.put("key2", "value2");
    expect(store.get("key")).toBe("value");
    expect(store.get("key2")).toBe("value2");
    // nothing evicted so underlying store should be empty
    expect(cache.size).toBe(2);
    expect(entries(underlyingStore)).toBe(0);
  });

  it.each([true, false])("shouldMatchPositionAfterPut (with a flush listener: %s)", (withListener) => {
    const changelog: OutgoingRecord[] = [];
    setUp(
      new ChangeLoggingKeyValueStore(new InMemoryStoreBackend().keyValue("store"), "store-changelog", 0, { send: (r) => void changelog.push(r) }, writeContext),
    );
    if (!withListener) store = new CachingKeyValueStore("store", underlyingStore, cache, task, writeContext);
    setRecordContext(0, 1, "");
    store.put("key1", "value1");
    setRecordContext(0, 2, "");
    store.put("key2", "value2");
    // Position should correspond to the last record's context, not the current context.
    setRecordContext(0, 3, "");
    expect(changelog).toEqual([]);

    store.flush();
    const position = (headers: readonly Header[]) => positionFromHeaders(headers)?.offset;
    expect(changelog.map((r) => [r.key, position(r.headers)])).toEqual([
      ["key1", 1],
      ["key2", 2],
    ]);
    // The flush leaves the record being processed as it found it.
    expect(task.current?.position?.offset).toBe(3);
  });

  it("shouldFlushEvictedItemsIntoUnderlyingStore", () => {
    const added = addItemsToCache();
    // all dirty entries should have been flushed
    expect(entries(underlyingStore)).toBe(added);
    expect(store.range().length).toBe(added);
    expect(underlyingStore.get("0")).toBeDefined();
  });

  it("shouldForwardDirtyItemToListenerWhenEvicted", () => {
    const numRecords = addItemsToCache();
    expect(forwarded.size).toBe(numRecords);
  });

  it("shouldForwardDirtyItemsWhenFlushCalled", () => {
    store.put("1", "a");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: "a", oldValue: null });
  });

  it("shouldForwardOldValuesWhenEnabled", () => {
    sendOldValues = true;
    store.put("1", "a");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: "a", oldValue: null });
    store.put("1", "b");
    store.put("1", "c");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: "c", oldValue: "a" });
    store.delete("1");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: null, oldValue: "c" });
    forwarded.clear();
    store.put("1", "a");
    store.put("1", "b");
    store.delete("1");
    store.flush();
    expect(forwarded.get("1")).toBeUndefined();
  });

  it("shouldNotForwardOldValuesWhenDisabled", () => {
    store.put("1", "a");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: "a", oldValue: null });
    store.put("1", "b");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: "b", oldValue: null });
    store.delete("1");
    store.flush();
    expect(forwarded.get("1")).toEqual({ newValue: null, oldValue: null });
    forwarded.clear();
    store.put("1", "a");
    store.put("1", "b");
    store.delete("1");
    store.flush();
    expect(forwarded.get("1")).toBeUndefined();
  });

  it("shouldIterateAllStoredItems", () => {
    const items = addItemsToCache();
    const results = keysOf(store);
    expect(results).toHaveLength(items);
    expect(results).toEqual(["0", "1", "2"]);
  });

  it("shouldIterateOverRange", () => {
    const items = addItemsToCache();
    const results = keysOf(store, "0", String(items));
    expect(results).toHaveLength(items);
    expect(results).toEqual(["0", "1", "2"]);
  });

  it("shouldGetRecordsWithPrefixKey", () => {
    for (const [key, value] of [
      ["p11", "2"],
      ["k1", "1"],
      ["k2", "2"],
      ["p2", "2"],
      ["p1", "2"],
      ["p0", "2"],
    ] as const)
      store.put(key, value);
    const keysWithPrefix = store.prefix("p1");
    expect(keysWithPrefix).toHaveLength(2);
    expect(keysWithPrefix.map((e) => e.key)).toEqual(["p1", "p11"]);
    expect(keysWithPrefix.map((e) => e.value)).toEqual(["2", "2"]);
  });

  it("shouldGetRecordsWithPrefixKeyExcludingNextLargestKey", () => {
    for (const [key, value] of [
      ["abcd", "2"],
      ["abcdd", "1"],
      ["abce", "2"],
      ["abc", "2"],
    ] as const)
      store.put(key, value);
    const keysWithPrefix = store.prefix("abcd");
    expect(keysWithPrefix).toHaveLength(2);
    expect(keysWithPrefix.map((e) => e.key)).toEqual(["abcd", "abcdd"]);
    expect(keysWithPrefix.map((e) => e.value)).toEqual(["2", "1"]);
  });

  it("shouldDeleteItemsFromCache", () => {
    store.put("a", "a");
    store.delete("a");
    expect(store.get("a")).toBeUndefined();
    expect(store.range("a", "b")).toEqual([]);
    expect(store.range()).toEqual([]);
  });

  it("shouldNotShowItemsDeletedFromCacheButFlushedToStoreBeforeDelete", () => {
    store.put("a", "a");
    store.flush();
    store.delete("a");
    expect(store.get("a")).toBeUndefined();
    expect(store.range("a", "b")).toEqual([]);
    expect(store.range()).toEqual([]);
    expect(store.prefix("a")).toEqual([]);
  });

  it("shouldClearNamespaceCacheOnClose", () => {
    store.put("a", "a");
    expect(cache.size).toBe(1);
    cache.clear("store");
    expect(cache.size).toBe(0);
  });

  it("shouldPutIfAbsent", () => {
    const typed = new TypedKeyValueStore("store", store, Serdes.string(), Serdes.string());
    typed.putIfAbsent("b", "2");
    expect(store.get("b")).toBe("2");
    typed.putIfAbsent("b", "3");
    expect(store.get("b")).toBe("2");
  });

  it("shouldPutAll", () => {
    for (const [key, value] of [
      ["a", "1"],
      ["b", "2"],
    ] as const)
      store.put(key, value);
    expect(store.get("a")).toBe("1");
    expect(store.get("b")).toBe("2");
  });

  it("a range with a limit counts only what the cache does not hide", () => {
    for (const key of ["a", "b", "c", "d"]) underlyingStore.put(key, key, 1);
    store.delete("a");
    store.put("b", "B");
    store.put("bb", "BB");
    expect(store.range(undefined, undefined, 3)).toEqual([
      { key: "b", value: "B" },
      { key: "bb", value: "BB" },
      { key: "c", value: "c" },
    ]);
    expect(store.prefix("b", 1)).toEqual([{ key: "b", value: "B" }]);
  });
});
