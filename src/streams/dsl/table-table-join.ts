/**
 * Table-table joins (inner, left, outer). Each side's updates run a processor that reads the other
 * side's store (both tables are materialized), so both stores and both tables' topics end up in
 * one subtopology, which the build checks for co-partitioning. The result is a table whose updates
 * are the joined rows; a row that stops having a result is forwarded as a tombstone.
 */
import type { StreamRecord } from "../record";
import type { GraphNode, TopologyGraph } from "../topology/graph";
import { erase, passThrough, processorOf } from "./processors";

export type TableJoinKind = "inner" | "left" | "outer";

interface Side {
  readonly node: GraphNode;
  readonly storeName: string;
}

/** The joined value after an update of one side, or `undefined` when nothing is to be forwarded. */
type Outcome<VR> = VR | null | undefined;

/**
 * What an update on the left (`fromLeft`) or the right means for the join's row, given the
 * updated side's new value (null: deleted) and the other side's current value (undefined: absent).
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
  // Whether the row could have had a result before this update: if not, a missing result needs no tombstone.
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
export function tableTableJoin<VL, VR, VO>(kind: TableJoinKind, graph: TopologyGraph, left: Side, right: Side, joiner: (left: VL | null, right: VR | null) => VO): GraphNode {
  const sideProcessor = (fromLeft: boolean, otherStore: string) =>
    erase(
      processorOf<unknown, unknown, unknown, VO | null>((record: StreamRecord<unknown, unknown>, context) => {
        const other = context.getStateStore<unknown, unknown>(otherStore).get(record.key);
        const value = outcome(kind, fromLeft, record.value, other, joiner);
        if (value !== undefined) context.forward({ ...record, value });
      }),
    );
  const leftJoin = graph.addProcessor("KTABLE-JOINTHIS", { parents: [left.node], supplier: sideProcessor(true, right.storeName), stores: [right.storeName] });
  const rightJoin = graph.addProcessor("KTABLE-JOINOTHER", { parents: [right.node], supplier: sideProcessor(false, left.storeName), stores: [left.storeName] });
  return graph.addProcessor("KTABLE-MERGE", { parents: [leftJoin, rightJoin], supplier: passThrough, stores: [] });
}
