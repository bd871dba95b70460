/**
 * The first half of `KTable.groupBy` (Kafka's `KTableRepartitionMap`): maps each update's new and
 * old rows to their groups. When both map to the same group the update goes on as one change (new
 * and old value) to that group; otherwise the old value goes to its group as a subtraction
 * (`Change(null, old)`) before the new value goes to its own as an addition (`Change(new, null)`),
 * each keyed by its group, to be written to the repartition topic. A pair without a key or value
 * belongs to no group and sends nothing.
 *
 * Groups are compared by their serialized key (what decides the partition and the store key); Kafka
 * compares them with `equals`, which for keys means the same.
 */
import type { KeyValue, StreamRecord } from "../record";
import type { Serde } from "../serdes";
import type { AnySupplier } from "../topology/graph";
import { change, type Change } from "./change";
import { erase, processorOf } from "./processors";

export type GroupSelector<K, V, KR, VR> = (key: K, value: V) => KeyValue<KR | null, VR | null> | null;

export function tableRepartitionMap<K, V, KR, VR>(selector: GroupSelector<K, V, KR, VR>, keySerde: Serde<KR>): AnySupplier {
  const pair = (key: K, value: V | null) => {
    const mapped = value === null ? null : selector(key, value);
    return mapped === null || mapped.key === null || mapped.value === null ? undefined : (mapped as KeyValue<KR, VR>);
  };
  return erase(
    processorOf<K, Change<V>, KR, Change<VR>>((record: StreamRecord<K, Change<V>>, context) => {
      // A table source drops records without a key before they get here; anything else is a bug.
      if (record.key === null) throw new Error("Record key for the grouping KTable should not be null.");
      const { newValue, oldValue, isLatest } = record.value;
      if (isLatest === false) return;
      const next = pair(record.key, newValue);
      const prior = pair(record.key, oldValue);
      if (next && prior && keySerde.serialize(next.key) === keySerde.serialize(prior.key)) {
        return context.forward({ ...record, key: next.key, value: change(next.value, prior.value) });
      }
      if (prior) context.forward({ ...record, key: prior.key, value: change<VR>(null, prior.value) });
      if (next) context.forward({ ...record, key: next.key, value: change<VR>(next.value, null) });
    }),
  );
}
