/**
 * Table-table joins (inner, left, outer), as Kafka's `KTableKTable*Join` processors. Each side's
 * updates run a processor that reads the other side's current row from its store (both tables
 * are materialized; windowed tables are read by their window), so both stores and both tables'
 * topics end up in one subtopology, which the build checks for co-partitioning. The result is a
 * table whose updates are the joined rows, stamped with the later of the two rows' timestamps; a
 * row that stops having a result is forwarded as a tombstone.
 */
import type { StreamRecord } from "../record";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import type { MaterializedTable } from "./ktable";
import { erase, passThrough, processorOf } from "./processors";

export type TableJoinKind = "inner" | "left" | "outer";

/** What to forward after an update: the joined value (null: a tombstone), or nothing (undefined). */
type Outcome<VR> = VR | null | undefined;

/**
 * What an update on the left (`fromLeft`) or the right means for the join's row, given the
 * updated side's new value (null: deleted) and the other side's current value (undefined: absent).
 * Kafka forwards nothing for a tombstone when the other row is absent in an inner join, or on
 * the right of a left join; elsewhere it joins with null (or forwards the tombstone).
 */
function outcome<VL, VR, VO>(
  kind: TableJoinKind,
  fromLeft: boolean,
  updated: unknown,
  other: unknown,
  joiner: (left: VL | null, right: VR | null) => VO,
): Outcome<VO> {
  const left = (fromLeft ? updated : other) as VL | null | undefined;
  const right = (fromLeft ? other : updated) as VR | null | undefined;
  const hasLeft = left !== null && left !== undefined;
  const hasRight = right !== null && right !== undefined;
  const otherPresent = other !== undefined;
  switch (kind) {
    case "inner":
      if (!otherPresent) return undefined;
      return hasLeft && hasRight ? joiner(left, right) : null;
    case "left":
      if (!fromLeft && !otherPresent) return undefined;
      return hasLeft ? joiner(left, hasRight ? right : null) : null;
    case "outer":
      return hasLeft || hasRight ? joiner(hasLeft ? left : null, hasRight ? right : null) : null;
  }
}

/** Adds both sides' join processors and the node merging their results; returns that node. */
export function tableTableJoin<VL, VR, VO>(kind: TableJoinKind, graph: TopologyGraph, left: MaterializedTable, right: MaterializedTable, joiner: (left: VL | null, right: VR | null) => VO): GraphNode {
  const sideProcessor = (fromLeft: boolean, other: MaterializedTable) =>
    erase(
      processorOf<unknown, unknown, unknown, VO | null>((record: StreamRecord<unknown, unknown>, context) => {
        if (record.key === null) return context.dropRecord("null key in a table-table join");
        const row = other.lookup(context, record.key);
        const value = outcome(kind, fromLeft, record.value, row?.value, joiner);
        if (value === undefined) return;
        context.forward({ ...record, value, timestamp: Math.max(record.timestamp, row?.timestamp ?? record.timestamp) });
      }),
    );
  const leftJoin = graph.addProcessor("KTABLE-JOINTHIS", { parents: [left.node], supplier: sideProcessor(true, right), stores: [right.storeName] });
  const rightJoin = graph.addProcessor("KTABLE-JOINOTHER", { parents: [right.node], supplier: sideProcessor(false, left), stores: [left.storeName] });
  return graph.addProcessor("KTABLE-MERGE", { parents: [leftJoin, rightJoin], supplier: passThrough, stores: [] });
}
