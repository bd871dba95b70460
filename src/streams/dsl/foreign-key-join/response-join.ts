/**
 * The left side of a foreign-key join receiving answers (Kafka's `ResponseJoinProcessorSupplier`):
 * an answer whose hash is not that of the left row as it is now is stale — the row changed since
 * it subscribed — and is dropped (counted). Otherwise the row is joined with the right row; a
 * missing right row gives a tombstone (an inner join, or a left row that is gone) or the left row
 * joined with null (a left join).
 */
import type { StreamRecord } from "../../record";
import type { Serde } from "../../serdes";
import type { AnySupplier } from "../../topology/graph";
import type { MaterializedTable } from "../table-lookup";
import { erase, processorOf } from "../processors";
import { valueHash, type Response } from "./wrappers";

export function responseJoin<K, V, VO, VR>(
  left: MaterializedTable,
  valueSerde: Serde<V>,
  joiner: (value: V, other: VO | null) => VR,
  leftJoin: boolean,
): AnySupplier {
  return erase(
    processorOf<K, Response<VO>, K, VR | null>((record: StreamRecord<K, Response<VO>>, context) => {
      const current = left.lookup(context, record.key)?.value as V | undefined;
      const currentHash = current === undefined ? null : valueHash(valueSerde.serialize(current));
      if (record.value.hash !== currentHash) return context.dropRecord("stale foreign-key join response");
      const { foreignValue } = record.value;
      const result = foreignValue === null && (!leftJoin || current === undefined) ? null : joiner((current ?? null) as V, foreignValue);
      context.forward({ ...record, value: result });
    }),
  );
}
