/**
 * The processors behind DSL operators. Each is a function of the record and its context, so an
 * operator is a line of code; the context is only available once the task has called `init`.
 */
import { internal, type ProcessorContext, type ProcessorSupplier } from "../processor";
import type { StreamRecord } from "../record";
import type { Serde } from "../serdes";
import { SessionStoreView } from "../state/session-store";
import type { RawKeyValueStore } from "../state/key-value-store";
import { decodeStored, TypedKeyValueStore } from "../state/typed-store";
import { RawVersionedStore, VersionedKeyValueStore } from "../state/versioned-store";
import { WindowStoreView } from "../state/window-store";
import { versionsStoreName, type AnySupplier } from "../topology/graph";
import { change, type Change, type OldValues } from "./change";

/** One step of an aggregation: the new aggregate of a key from its current one (undefined at first) and a value. */
export type Aggregation<K, V, VA> = (key: K, value: V, current: VA | undefined) => VA;

/** What a DSL operator does with one record. */
export type RecordHandler<KIn, VIn, KOut, VOut> = (record: StreamRecord<KIn, VIn>, context: ProcessorContext<KOut, VOut>) => void;

/** A processor supplier from a function called for every record. */
export function processorOf<KIn, VIn, KOut, VOut>(body: RecordHandler<KIn, VIn, KOut, VOut>): ProcessorSupplier<KIn, VIn, KOut, VOut> {
  return () => {
    let context: ProcessorContext<KOut, VOut> | undefined;
    return {
      init: (c) => {
        context = c;
      },
      process: (record) => {
        if (!context) throw new Error("a processor received a record before init()");
        body(record, context);
      },
    };
  };
}

/** Forwards every record unchanged (merge, branch children, table-to-stream). */
export const passThrough: AnySupplier = processorOf((record, context) => context.forward(record));

/** The graph keeps suppliers with their types erased; the DSL's types guarantee they fit. */
export function erase<KIn, VIn, KOut, VOut>(supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>): AnySupplier {
  return supplier as unknown as AnySupplier;
}

/**
 * Folds each record into the stored aggregate of its key and forwards the new aggregate.
 * Records with a null key or value are dropped, as Kafka Streams drops them: they belong to no group.
 * The aggregate's timestamp is the largest of its records' (Kafka's `KStreamAggregate`), so an
 * out-of-order record does not take the result's event time back. The result is a table update:
 * the new aggregate, with the previous one as old value when old values are sent.
 */
export function aggregateProcessor<K, V, VA>(storeName: string, step: Aggregation<K, V, VA>, oldValues: OldValues, historyRetentionMs?: number): AnySupplier {
  return erase(
    tableUpdateProcessorOf<K, V, VA>(storeName, oldValues, (record, context, forward) => {
      if (record.key === null || record.value === null) return context.dropRecord(`null ${record.key === null ? "key" : "value"} in an aggregation`);
      const store = rowStoreOf<K, VA>(context, storeName, historyRetentionMs);
      const current = store.getWithTimestamp(record.key);
      const next = step(record.key, record.value, current?.value);
      const timestamp = current === undefined ? record.timestamp : Math.max(record.timestamp, current.timestamp);
      store.put(record.key, next, timestamp);
      forward({ ...record, value: change(next, oldValues.sending ? (current?.value ?? null) : null), timestamp });
    }),
  );
}

/** Forwards a table update, or leaves it to the store's cache (see `tableUpdateProcessorOf`). */
export type TableUpdateForward<K, V> = (record: StreamRecord<K, Change<V>>) => void;

/**
 * A processor whose updates of its store are table updates (an aggregation), with Kafka's
 * `TimestampedTupleForwarder` and `TimestampedCacheFlushListener`: over an uncached store, `forward`
 * sends each update on as it happens; over a cached one it does nothing, and each flush of the
 * cache sends every flushed key's latest value instead, with the value it replaces in the store as
 * old value (when old values are sent), the value's timestamp (a deletion: its write's) and the
 * headers of the record it was last updated by.
 */
export function tableUpdateProcessorOf<K, VIn, V>(
  storeName: string,
  oldValues: OldValues,
  body: (record: StreamRecord<K, VIn>, context: ProcessorContext<K, Change<V>>, forward: TableUpdateForward<K, V>) => void,
): ProcessorSupplier<K, VIn, K, Change<V>> {
  return () => {
    let context: ProcessorContext<K, Change<V>> | undefined;
    let forward: TableUpdateForward<K, V> = () => {};
    return {
      init: (c) => {
        context = c;
        const handle = internal(c).storeHandle(storeName);
        if (!handle.cached) {
          forward = (record) => c.forward(record);
          return;
        }
        const decode = (text: string) => decodeStored(storeName, handle.valueSerde as Serde<V>, text, "value");
        handle.cached.setFlushListener(
          ({ key, newValue, oldValue, timestamp, origin }) =>
            c.forward({
              key: decodeStored(storeName, handle.keySerde as Serde<K>, key, "key"),
              value: change(newValue && decode(newValue.value), oldValue && decode(oldValue.value)),
              timestamp: newValue?.timestamp ?? timestamp,
              headers: origin?.input?.headers ?? [],
            }),
          () => oldValues.sending,
        );
      },
      process: (record) => {
        if (!context) throw new Error("a processor received a record before init()");
        body(record, context, forward);
      },
    };
  };
}

/** A typed view over a store's raw rows, as the view classes take them. */
type StoreView<T> = new (name: string, raw: RawKeyValueStore, keySerde: Serde<never>, valueSerde: Serde<never>) => T;

/** The node's view of kind `kind` over the store `name`, opened once per node (DSL operators ask for it per record). */
function typedView<T>(context: ProcessorContext<unknown, unknown>, kind: string, name: string, View: StoreView<T>): T {
  const node = internal(context);
  return node.viewOf(`${kind}:${name}`, () => {
    const handle = node.storeHandle(name);
    return new View(name, handle.raw, handle.keySerde as Serde<never>, handle.valueSerde as Serde<never>);
  });
}

/** The key-value store of that name, typed with its definition's serdes, with value timestamps. */
export function keyValueStoreOf<K, V>(context: ProcessorContext<unknown, unknown>, name: string): TypedKeyValueStore<K, V> {
  return typedView(context, "key-value", name, TypedKeyValueStore as StoreView<TypedKeyValueStore<K, V>>);
}

/** The versioned store of that name (its latest rows and its companion history store), typed with its serdes. */
export function versionedStoreOf<K, V>(context: ProcessorContext<unknown, unknown>, name: string, historyRetentionMs: number): VersionedKeyValueStore<K, V> {
  const node = internal(context);
  return node.viewOf(`versioned:${name}:${historyRetentionMs}`, () => {
    const latest = node.storeHandle(name);
    const history = node.storeHandle(versionsStoreName(name));
    return new VersionedKeyValueStore(
      name,
      new RawVersionedStore(latest.raw, history.raw, historyRetentionMs),
      latest.keySerde as Serde<K>,
      latest.valueSerde as Serde<V>,
    );
  });
}

/** A table's rows as aggregations read and write them, in a plain or a versioned store. */
export interface RowStore<K, V> {
  getWithTimestamp(key: K): { readonly value: V; readonly timestamp: number } | undefined;
  put(key: K, value: V, timestamp: number): void;
  delete(key: K, timestamp: number): void;
}

/** The rows of the store of that name; a versioned store (with `historyRetentionMs`) keeps each change as a version. */
export function rowStoreOf<K, V>(context: ProcessorContext<unknown, unknown>, name: string, historyRetentionMs: number | undefined): RowStore<K, V> {
  const node = internal(context);
  const key = rowViewKey(name, historyRetentionMs);
  return node.openedView<RowStore<K, V>>(key) ?? node.viewOf(key, () => openRowStore<K, V>(context, name, historyRetentionMs));
}

/** The names of row views, made once: operators ask for their store per record, and a name built anew is hashed anew. */
const rowViewKeys = new Map<string, Map<number | undefined, string>>();

function rowViewKey(name: string, historyRetentionMs: number | undefined): string {
  let byRetention = rowViewKeys.get(name);
  if (!byRetention) rowViewKeys.set(name, (byRetention = new Map()));
  let key = byRetention.get(historyRetentionMs);
  if (key === undefined) byRetention.set(historyRetentionMs, (key = `rows:${name}:${historyRetentionMs}`));
  return key;
}

function openRowStore<K, V>(context: ProcessorContext<unknown, unknown>, name: string, historyRetentionMs: number | undefined): RowStore<K, V> {
  if (historyRetentionMs === undefined) {
    const rows = keyValueStoreOf<K, V>(context, name);
    return {
      getWithTimestamp: (key) => rows.getWithTimestamp(key),
      put: (key, value, timestamp) => rows.put(key, value, timestamp),
      delete: (key) => rows.delete(key),
    };
  }
  const versions = versionedStoreOf<K, V>(context, name, historyRetentionMs);
  return {
    getWithTimestamp: (key) => versions.get(key),
    put: (key, value, timestamp) => void versions.put(key, value, timestamp),
    delete: (key, timestamp) => void versions.put(key, null, timestamp),
  };
}

/** The window store of that name, typed with its definition's serdes. */
export function windowStoreOf<K, V>(context: ProcessorContext<unknown, unknown>, name: string): WindowStoreView<K, V> {
  return typedView(context, "window", name, WindowStoreView as StoreView<WindowStoreView<K, V>>);
}

/** The session store of that name, typed with its definition's serdes. */
export function sessionStoreOf<K, V>(context: ProcessorContext<unknown, unknown>, name: string): SessionStoreView<K, V> {
  return typedView(context, "session", name, SessionStoreView as StoreView<SessionStoreView<K, V>>);
}
