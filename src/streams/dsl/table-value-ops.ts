/**
 * KTable `filter` and `mapValues` (Kafka's `KTableFilter`, `KTableMapValues`): a new value from
 * each update's new value, and — when asked for old values — the old value too, computed from the
 * update's old value, or read from the operator's own store when it is materialized. A filter that
 * sends old values drops an update whose old and new values both fail it (the row neither was nor
 * is in the filtered table: downstream has nothing to delete); without old values it cannot know,
 * and forwards a tombstone for every update that fails it, as Kafka's does.
 */
import type { StreamRecord } from "../record";
import type { AnySupplier } from "../topology/graph";
import { change, type Change, type OldValues } from "./change";
import { erase, keyValueStoreOf, processorOf } from "./processors";
import { writeRow } from "./table-row";

export interface TableValueOp<K, V, VOut> {
  /** The new value of a row from its value; null: the row is not in the result (a filter). */
  readonly compute: (key: K, value: V) => VOut | null;
  /** A filter: an update with neither old nor new row is dropped when old values are sent. */
  readonly dropEmpty: boolean;
  /** The operator's own store, when it is materialized. */
  readonly storeName: string | undefined;
  readonly oldValues: OldValues;
}

export function tableValueOp<K, V, VOut>(op: TableValueOp<K, V, VOut>): AnySupplier {
  return erase(
    processorOf<K, Change<V>, K, Change<VOut>>((record: StreamRecord<K, Change<V>>, context) => {
      const { key } = record;
      const { newValue, oldValue, isLatest } = record.value;
      const next = newValue === null ? null : op.compute(key, newValue);
      const rows = op.storeName === undefined ? undefined : keyValueStoreOf<K, VOut>(context, op.storeName);
      let prior: VOut | null = null;
      if (op.oldValues.sending) prior = rows ? (rows.get(key) ?? null) : oldValue === null ? null : op.compute(key, oldValue);
      if (op.dropEmpty && op.oldValues.sending && prior === null && next === null) return;
      if (rows) writeRow(rows, { ...record, value: next });
      context.forward({ ...record, value: change(next, prior, isLatest) });
    }),
  );
}
