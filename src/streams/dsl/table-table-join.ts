/**
 * Table-table joins (inner, left, outer), as Kafka's `KTableKTable*Join` processors. Each side's
 * updates run a processor that reads the other side's current row from its store (both tables
 * are materialized; windowed tables are read by their window), so both stores and both tables'
 * topics end up in one subtopology, which the build checks for co-partitioning. The result is a
 * table whose updates are the joined rows, stamped with the later of the two rows' timestamps; a
 * row that stops having a result is forwarded as a tombstone.
 *
 * A left join gets the old values of its left table, an outer join those of both (Kafka enables
 * them): an update that deletes a row which had none, with no row on the other side, is dropped —
 * the join's row did not exist either. When the join's own result must carry old values, each
 * side computes the old result from the update's old value and the other side's row.
 */
import type { StreamRecord } from "../record";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import { change, type Change, type OldValues } from "./change";
import type { MaterializedTable } from "./table-lookup";
import { erase, passThrough, processorOf } from "./processors";

export type TableJoinKind = "inner" | "left" | "outer";

type Joiner = (left: unknown, right: unknown) => unknown;

/** The result's new and old values after an update, or undefined: nothing to forward. */
type Outcome = { readonly newValue: unknown; readonly oldValue: unknown } | undefined;

/**
 * What an update on one side means for the join's row: `join(mine, theirs)` puts the values on
 * their sides; `other` is the other side's row (null: absent). The rules are Kafka's processors':
 * inner (both sides) and the right side of a left join need the other row; the left side of a left
 * join and both sides of an outer join drop an update that has neither an old nor a new value
 * while the other row is absent.
 */
function outcome(
  kind: TableJoinKind,
  fromLeft: boolean,
  update: Change<unknown>,
  other: unknown,
  sendOld: boolean,
  join: (mine: unknown, theirs: unknown) => unknown,
): Outcome {
  const { newValue, oldValue } = update;
  const hasOther = other !== null;
  if (kind === "inner" || (kind === "left" && !fromLeft)) {
    if (!hasOther) return undefined;
    // The right side of a left join joins even a deleted right row: the left row stays, with null.
    const always = kind === "left";
    return {
      newValue: always || newValue !== null ? join(newValue, other) : null,
      oldValue: sendOld && (always || oldValue !== null) ? join(oldValue, other) : null,
    };
  }
  if (!hasOther && newValue === null && oldValue === null) return undefined;
  const joins = (value: unknown) => (kind === "outer" ? hasOther || value !== null : value !== null);
  return {
    newValue: joins(newValue) ? join(newValue, other) : null,
    oldValue: sendOld && joins(oldValue) ? join(oldValue, other) : null,
  };
}

/** Adds both sides' join processors and the node merging their results; returns that node. */
export function tableTableJoin(
  kind: TableJoinKind,
  graph: TopologyGraph,
  left: MaterializedTable,
  right: MaterializedTable,
  joiner: Joiner,
  oldValues: OldValues,
): GraphNode {
  const sideProcessor = (fromLeft: boolean, other: MaterializedTable) =>
    erase(
      processorOf<unknown, Change<unknown>, unknown, Change<unknown>>((record: StreamRecord<unknown, Change<unknown>>, context) => {
        if (record.key === null) return context.dropRecord("null key in a table-table join");
        // An out-of-order update of a versioned table changes its history, not its row (KIP-914).
        if (record.value.isLatest === false) return context.dropRecord("out-of-order update of a versioned table");
        const row = other.lookup(context, record.key);
        const join = (mine: unknown, theirs: unknown) => (fromLeft ? joiner(mine, theirs) : joiner(theirs, mine));
        const result = outcome(kind, fromLeft, record.value, row?.value ?? null, oldValues.sending, join);
        if (result === undefined) return;
        const timestamp = Math.max(record.timestamp, row?.timestamp ?? record.timestamp);
        context.forward({ ...record, value: change(result.newValue, result.oldValue, record.value.isLatest), timestamp });
      }),
    );
  const leftJoin = graph.addProcessor("KTABLE-JOINTHIS", { parents: [left.node], supplier: sideProcessor(true, right), stores: [right.storeName] });
  const rightJoin = graph.addProcessor("KTABLE-JOINOTHER", { parents: [right.node], supplier: sideProcessor(false, left), stores: [left.storeName] });
  return graph.addProcessor("KTABLE-MERGE", { parents: [leftJoin, rightJoin], supplier: passThrough, stores: [] });
}
