/**
 * How a table update lands in the store that materializes the table: a value is written with the
 * update's timestamp (as Kafka's timestamped stores keep it, for joins to stamp their results
 * with), a tombstone deletes the row.
 */
import type { StreamRecord } from "../record";
import type { TypedKeyValueStore } from "../state/typed-store";

export function writeRow<K, V>(store: TypedKeyValueStore<K, V>, record: StreamRecord<K, V | null>): void {
  if (record.value === null) store.delete(record.key);
  else store.put(record.key, record.value, record.timestamp);
}
