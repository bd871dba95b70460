/**
 * The left side of a foreign-key join sending subscriptions (Kafka's
 * `SubscriptionSendProcessorSupplier`): for each update of a left row, keyed by foreign key, what
 * the right side must do — subscribe the row to its new foreign key (answering null when no right
 * row exists, or only when one does, for a new row of an inner join), and unsubscribe it from its
 * old one when the key changed or the row was deleted. Foreign keys are compared serialized.
 */
import type { StreamRecord } from "../../record";
import type { Serde } from "../../serdes";
import type { AnySupplier } from "../../topology/graph";
import type { Change } from "../change";
import { erase, processorOf } from "../processors";
import { valueHash, type Instruction, type Subscription } from "./wrappers";

export function subscriptionSend<K, V, KO>(
  foreignKeyExtractor: (value: V) => KO | null,
  foreignKeySerde: Serde<KO>,
  valueSerde: Serde<V>,
  leftJoin: boolean,
): AnySupplier {
  const same = (a: KO | null, b: KO | null) => a !== null && b !== null && foreignKeySerde.serialize(a) === foreignKeySerde.serialize(b);
  const extract = (value: V | null) => (value === null ? null : (foreignKeyExtractor(value) ?? null));
  return erase(
    processorOf<K, Change<V>, KO | null, Subscription<K>>((record: StreamRecord<K, Change<V>>, context) => {
      const { newValue, oldValue, isLatest } = record.value;
      if (isLatest === false) return context.dropRecord("out-of-order update of a versioned table");
      const hash = newValue === null ? null : valueHash(valueSerde.serialize(newValue));
      const send = (foreignKey: KO | null, instruction: Instruction) =>
        context.forward({ ...record, key: foreignKey, value: { hash, instruction, primaryKey: record.key, primaryPartition: context.partition } });
      const oldKey = extract(oldValue);
      const newKey = extract(newValue);
      if (leftJoin) {
        if (oldValue !== null) {
          if (oldKey !== null && !same(oldKey, newKey)) send(oldKey, "DELETE_KEY_AND_PROPAGATE");
          send(newKey, "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE");
        } else if (newValue !== null) {
          send(newKey, "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE");
        }
        return;
      }
      if (oldValue !== null) {
        if (oldKey === null) return context.dropRecord("null foreign key");
        if (newValue === null) return send(oldKey, "DELETE_KEY_AND_PROPAGATE");
        if (newKey === null) return context.dropRecord("null foreign key");
        // Unsubscribe from the old key quietly; the new key answers (null when it has no row).
        if (!same(oldKey, newKey)) send(oldKey, "DELETE_KEY_NO_PROPAGATE");
        send(newKey, "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE");
      } else if (newValue !== null) {
        if (newKey === null) return context.dropRecord("null foreign key");
        send(newKey, "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE");
      }
    }),
  );
}
