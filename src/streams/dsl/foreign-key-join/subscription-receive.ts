/**
 * The right side of a foreign-key join (Kafka's `SubscriptionReceiveProcessorSupplier`,
 * `SubscriptionJoinProcessorSupplier` and `ForeignTableJoinProcessorSupplier`). Subscriptions are
 * kept in a store keyed by foreign key then primary key, so all of a foreign key's subscribers
 * are one prefix scan away. A subscription is answered by its instruction with the right row of
 * its foreign key (stamped with the later of the two timestamps); an update of a right row answers
 * every subscriber of its key (stamped with the update's). Each answer is keyed by the left row's
 * key and goes back to the left row's partition.
 */
import type { ProcessorContext } from "../../processor";
import { internal } from "../../processor";
import type { StreamRecord } from "../../record";
import type { Serde } from "../../serdes";
import { encodeKey } from "../../state/key-codec";
import { decodeStored } from "../../state/typed-store";
import type { AnySupplier } from "../../topology/graph";
import type { Change } from "../change";
import type { MaterializedTable } from "../table-lookup";
import { erase, processorOf } from "../processors";
import type { Response, Subscription } from "./wrappers";

/** A subscription as stored: its serialized value, the value of `subscriptionSerde`. */
type StoredSubscriptions = {
  readonly put: (foreignKey: string, primaryKey: string, subscription: string, timestamp: number) => void;
  readonly delete: (foreignKey: string, primaryKey: string) => void;
  readonly subscribers: (foreignKey: string) => { primaryKey: string; subscription: string }[];
};

function subscriptions(context: ProcessorContext<unknown, unknown>, storeName: string): StoredSubscriptions {
  const raw = internal(context).storeHandle(storeName).raw;
  const key = (foreignKey: string, primaryKey: string) => encodeKey(foreignKey) + primaryKey;
  return {
    put: (fk, pk, subscription, timestamp) => raw.put(key(fk, pk), subscription, timestamp),
    delete: (fk, pk) => raw.delete(key(fk, pk)),
    subscribers: (fk) => {
      const prefix = encodeKey(fk);
      return raw.prefix(prefix).map((e) => ({ primaryKey: e.key.slice(prefix.length), subscription: e.value }));
    },
  };
}

export interface RightSide<K, KO, VO> {
  readonly storeName: string;
  readonly foreignKeySerde: Serde<KO>;
  readonly primaryKeySerde: Serde<K>;
  readonly subscriptionSerde: Serde<Subscription<K>>;
  readonly right: MaterializedTable;
  readonly _types?: VO;
}

/** Stores (or drops) each subscription and answers it by its instruction. */
export function subscriptionReceive<K, KO, VO>(side: RightSide<K, KO, VO>): AnySupplier {
  return erase(
    processorOf<KO | null, Subscription<K>, K, Response<VO>>((record: StreamRecord<KO | null, Subscription<K>>, context) => {
      const subscription = record.value;
      const { instruction } = subscription;
      if (record.key === null && instruction !== "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE") return context.dropRecord("null foreign key");
      if (record.key !== null) {
        const store = subscriptions(context, side.storeName);
        const fk = side.foreignKeySerde.serialize(record.key);
        const pk = side.primaryKeySerde.serialize(subscription.primaryKey);
        if (instruction === "DELETE_KEY_AND_PROPAGATE" || instruction === "DELETE_KEY_NO_PROPAGATE") store.delete(fk, pk);
        else store.put(fk, pk, side.subscriptionSerde.serialize(subscription), record.timestamp);
      }
      const row = record.key === null ? undefined : side.right.lookup(context, record.key);
      const timestamp = row === undefined ? record.timestamp : Math.max(record.timestamp, row.timestamp);
      const answer = (foreignValue: VO | null) =>
        context.forward({
          ...record,
          key: subscription.primaryKey,
          value: { hash: subscription.hash, foreignValue, primaryPartition: subscription.primaryPartition },
          timestamp,
        });
      switch (instruction) {
        case "DELETE_KEY_AND_PROPAGATE":
          return answer(null);
        case "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE":
          return answer(row === undefined ? null : (row.value as VO));
        case "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE":
          if (row !== undefined) answer(row.value as VO);
          return;
        case "DELETE_KEY_NO_PROPAGATE":
          return;
      }
    }),
  );
}

/** Answers every subscriber of a right row's key with the row's new value. */
export function foreignTableJoin<K, KO, VO>(side: RightSide<K, KO, VO>): AnySupplier {
  return erase(
    processorOf<KO, Change<VO>, K, Response<VO>>((record: StreamRecord<KO, Change<VO>>, context) => {
      if (record.key === null) return context.dropRecord("null key in a foreign-key join's right table");
      if (record.value.isLatest === false) return context.dropRecord("out-of-order update of a versioned table");
      const fk = side.foreignKeySerde.serialize(record.key);
      for (const { primaryKey, subscription } of subscriptions(context, side.storeName).subscribers(fk)) {
        const stored = decodeStored(side.storeName, side.subscriptionSerde, subscription, "value");
        context.forward({
          ...record,
          key: decodeStored(side.storeName, side.primaryKeySerde, primaryKey, "key"),
          value: { hash: stored.hash, foreignValue: record.value.newValue, primaryPartition: stored.primaryPartition },
        });
      }
    }),
  );
}
