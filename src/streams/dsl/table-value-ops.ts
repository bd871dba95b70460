/**
 * KTable `filter` and `mapValues` (Kafka's `KTableFilter`, `KTableMapValues`): a new value from
 * each update's new value, and — when asked for old values — the old value too, computed from the
 * update's old value, or read from the operator's own store when it is materialized. A filter that
 * sends old values drops an update whose old and new values both fail it (the row neither was nor
 * is in the filtered table: downstream has nothing to delete); without old values it cannot know,
 * and forwards a tombstone for every update that fails it, as Kafka's does — and so does a filter
 * of a versioned table, whose old values may be those of a later row (an out-of-order update).
 *
 * Materialized in a versioned store, the result keeps its history too: an update it refuses (older
 * than the history retention) goes no further, one older than its latest row is marked so.
 * Materialized in a plain store, every update is its latest (as Kafka's timestamped store says).
 */
import type { StreamRecord } from "../record";
import type { AnySupplier } from "../topology/graph";
import { change, type Change, type OldValues } from "./change";
import { isLatestOf, PUT_RETURN_CODE_NOT_PUT } from "../state/versioned-store";
import { erase, keyValueStoreOf, processorOf, versionedStoreOf } from "./processors";
import { writeRow } from "./table-row";

export interface TableValueOp<K, V, VOut> {
  /** The new value of a row from its value; null: the row is not in the result (a filter). */
  readonly compute: (key: K, value: V) => VOut | null;
  /** A filter: an update with neither old nor new row is dropped when old values are sent. */
  readonly dropEmpty: boolean;
  /** The operator's own store, when it is materialized. */
  readonly storeName: string | undefined;
  /** Set when that store is versioned: its history retention. */
  readonly historyRetentionMs?: number;
  /** The input table is versioned: its old values do not say whether a row was in the result. */
  readonly versionedInput?: boolean;
  readonly oldValues: OldValues;
}

export function tableValueOp<K, V, VOut>(op: TableValueOp<K, V, VOut>): AnySupplier {
  return erase(
    processorOf<K, Change<V>, K, Change<VOut>>((record: StreamRecord<K, Change<V>>, context) => {
      const { key } = record;
      const { newValue, oldValue, isLatest } = record.value;
      const next = newValue === null ? null : op.compute(key, newValue);
      const retention = op.historyRetentionMs;
      const versions = op.storeName !== undefined && retention !== undefined ? versionedStoreOf<K, VOut>(context, op.storeName, retention) : undefined;
      const rows = op.storeName !== undefined && versions === undefined ? keyValueStoreOf<K, VOut>(context, op.storeName) : undefined;
      let prior: VOut | null = null;
      if (op.oldValues.sending) {
        if (versions) prior = versions.get(key)?.value ?? null;
        else prior = rows ? (rows.get(key) ?? null) : oldValue === null ? null : op.compute(key, oldValue);
      }
      if (op.dropEmpty && op.oldValues.sending && !op.versionedInput && prior === null && next === null) return;
      if (versions) {
        const code = versions.put(key, next, record.timestamp);
        if (code === PUT_RETURN_CODE_NOT_PUT) return;
        return context.forward({ ...record, value: change(next, prior, isLatestOf(code)) });
      }
      if (rows) {
        writeRow(rows, { ...record, value: next });
        return context.forward({ ...record, value: change(next, prior) });
      }
      context.forward({ ...record, value: change(next, prior, isLatest) });
    }),
  );
}
