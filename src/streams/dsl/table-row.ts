/**
 * How a table update lands in the store that materializes the table: a value is written with the
 * update's timestamp (as Kafka's timestamped stores keep it, for joins to stamp their results
 * with), a tombstone deletes the row.
 */
import type { ProcessorContext } from "../processor";
import type { StreamRecord } from "../record";
import type { TypedKeyValueStore } from "../state/typed-store";
import { isLatestOf, PUT_RETURN_CODE_NOT_PUT } from "../state/versioned-store";
import { change, type Change } from "./change";
import { keyValueStoreOf, versionedStoreOf } from "./processors";

export function writeRow<K, V>(store: TypedKeyValueStore<K, V>, record: StreamRecord<K, V | null>): void {
  if (record.value === null) store.delete(record.key);
  else store.put(record.key, record.value, record.timestamp);
}

/**
 * A table update written to the table's store — versioned when `historyRetentionMs` is set — as
 * the change to forward: its new value, the row it replaces as old value when `sendOldValue`
 * (else null) and, for a versioned store, whether it is the key's latest row. Undefined when the
 * versioned store did not take it (older than its history retention).
 */
export function writeTableUpdate<K, V>(
  context: ProcessorContext<unknown, unknown>,
  storeName: string,
  historyRetentionMs: number | undefined,
  record: StreamRecord<K, V | null>,
  sendOldValue: boolean,
): Change<V> | undefined {
  if (historyRetentionMs !== undefined) {
    const versions = versionedStoreOf<K, V>(context, storeName, historyRetentionMs);
    const old = sendOldValue ? (versions.get(record.key)?.value ?? null) : null;
    const code = versions.put(record.key, record.value, record.timestamp);
    return code === PUT_RETURN_CODE_NOT_PUT ? undefined : change(record.value, old, isLatestOf(code));
  }
  const rows = keyValueStoreOf<K, V>(context, storeName);
  const old = sendOldValue ? (rows.get(record.key) ?? null) : null;
  writeRow(rows, record);
  return change(record.value, old);
}
