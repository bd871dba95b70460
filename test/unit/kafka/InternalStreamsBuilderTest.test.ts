/**
 * Ported from Kafka Streams' InternalStreamsBuilderTest: the versioned-table cases (KIP-914). Kafka
 * inspects a flag on each graph node (`useVersionedSemantics`); Edge Streams has no such flag to
 * read, so each test observes what the flag does instead, with the same topology:
 * - a filter with versioned semantics forwards a delete of a row that neither was nor is in its
 *   result (its input's old values cannot be trusted); without them it drops it;
 * - a regrouping, a table-table join or a foreign-key join with versioned semantics ignores an
 *   out-of-order update of its versioned input.
 * Also: a global table cannot be versioned. Not ported: the rest of the class (Kafka's graph
 * internals: node types, optimization flags, naming).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, Stores, TopologyError, TopologyTestDriver, type Change, type KeyValue, type KTable } from "../../../src/streams";
import { addTableProcessor, build, MockApiProcessorSupplier, STRING, TestInputTopic } from "./support";

const consumed = { key: STRING, value: STRING };
const versioned = (name: string) => Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore(name, 5 * 60_000));
const pair = <K, V>(key: K, value: V): KeyValue<K, V> => ({ key, value });

type Pipe = (topic: "t1" | "t2", key: string, value: string, timestamp: number) => void;

function driverFor(builder: StreamsBuilder) {
  const driver = new TopologyTestDriver(build(builder, "t1", "t2"));
  const topics = { t1: new TestInputTopic(driver, "t1", STRING, STRING), t2: new TestInputTopic(driver, "t2", STRING, STRING) };
  const pipe: Pipe = (topic, key, value, timestamp) => topics[topic].pipeInput(key, value, timestamp);
  return pipe;
}

/**
 * Kafka's `verifyVersionedSemantics(filter, expected)`, observed: a filter (rejecting every row,
 * asked for old values) below `table` is fed one new row by `feed`; with versioned semantics it
 * forwards the row's delete although the row was never in its result.
 */
function filterUsesVersionedSemantics<V>(table: (builder: StreamsBuilder) => KTable<string, V, null> | KTable<string, V>, feed: (pipe: Pipe) => void): boolean {
  const builder = new StreamsBuilder();
  const input = table(builder);
  const filtered = input.filter(() => false);
  filtered.enableSendingOldValues(true);
  const upstream = new MockApiProcessorSupplier<string, Change<V>>();
  const output = new MockApiProcessorSupplier<string, Change<V>>();
  addTableProcessor(input, upstream);
  addTableProcessor(filtered, output);
  feed(driverFor(builder));
  // The filter was given a new row either way.
  expect(upstream.processed.some((r) => r.value.newValue !== null)).toBe(true);
  return output.processed.some((r) => r.value.newValue === null && r.value.oldValue === null);
}

const oneRow = (pipe: Pipe) => pipe("t1", "A", "a", 10);
/** A row on each side, for joins: the second makes the join's row. */
const joinedRow = (pipe: Pipe) => {
  pipe("t1", "A", "a", 10);
  pipe("t2", "A", "a", 10);
};
/** A right row, then a left row naming it, for foreign-key joins. */
const foreignJoinedRow = (pipe: Pipe) => {
  pipe("t2", "a", "b", 10);
  pipe("t1", "A", "a", 10);
};

describe("InternalStreamsBuilderTest", () => {
  it("shouldThrowOnVersionedStoreSupplierForGlobalTable", () => {
    const builder = new StreamsBuilder();
    expect(() => builder.globalTable("table", consumed, Materialized.as(Stores.persistentVersionedKeyValueStore("store", 0)))).toThrow(TopologyError);
  });

  it("shouldSetUseVersionedSemanticsOnTableFilter", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("store")), oneRow)).toBe(true);
  });

  it("shouldSetUseVersionedSemanticsWithIntermediateNode", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).mapValues((v) => v + v), oneRow)).toBe(true);
  });

  it("shouldNotSetUseVersionedSemanticsWithMaterializedIntermediateNode", () => {
    expect(
      filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).mapValues((v) => v + v, Materialized.as("unversioned")), oneRow),
    ).toBe(false);
  });

  it("shouldSetUseVersionedSemanticsWithIntermediateNodeMaterializedAsVersioned", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).mapValues((v) => v + v, versioned("versioned2")), oneRow)).toBe(
      true,
    );
  });

  it("shouldNotSetUseVersionedSemanticsWithIntermediateAggregation", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).groupBy(pair, consumed).count(), oneRow)).toBe(false);
  });

  it("shouldSetUseVersionedSemanticsWithIntermediateAggregationMaterializedAsVersioned", () => {
    const versionedCount = Materialized.as<string, number>(Stores.persistentVersionedKeyValueStore("versioned2", 5 * 60_000));
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).groupBy(pair, consumed).count(versionedCount), oneRow)).toBe(
      true,
    );
  });

  it("shouldNotSetUseVersionedSemanticsWithIntermediateJoin", () => {
    const join = (b: StreamsBuilder) =>
      b.table("t1", consumed, versioned("versioned")).join(b.table("t2", consumed, versioned("versioned2")), (v1, v2) => v1 + v2);
    expect(filterUsesVersionedSemantics(join, joinedRow)).toBe(false);
  });

  // not recommended to materialize join result as versioned since semantics are not correct,
  // but this test is included anyway for completeness
  it("shouldSetUseVersionedSemanticsWithIntermediateJoinMaterializedAsVersioned", () => {
    const join = (b: StreamsBuilder) =>
      b.table("t1", consumed, versioned("versioned")).join(b.table("t2", consumed, versioned("versioned2")), (v1, v2) => v1 + v2, versioned("versioned3"));
    expect(filterUsesVersionedSemantics(join, joinedRow)).toBe(true);
  });

  it("shouldNotSetUseVersionedSemanticsWithIntermediateForeignKeyJoin", () => {
    const join = (b: StreamsBuilder) =>
      b.table("t1", consumed, versioned("versioned")).join(
        b.table("t2", consumed, versioned("versioned2")),
        (v) => v,
        (v1, v2) => v1 + v2,
      );
    expect(filterUsesVersionedSemantics(join, foreignJoinedRow)).toBe(false);
  });

  // not recommended to materialize join result as versioned since semantics are not correct,
  // but this test is included anyway for completeness
  it("shouldSetUseVersionedSemanticsWithIntermediateForeignKeyJoinMaterializedAsVersioned", () => {
    const join = (b: StreamsBuilder) =>
      b.table("t1", consumed, versioned("versioned")).join(
        b.table("t2", consumed, versioned("versioned2")),
        (v) => v,
        (v1, v2) => v1 + v2,
        versioned("versioned3"),
      );
    expect(filterUsesVersionedSemantics(join, foreignJoinedRow)).toBe(true);
  });

  it("shouldNotSetUseVersionedSemanticsWithToStreamAndBack", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).toStream().toTable(), oneRow)).toBe(false);
  });

  it("shouldSetUseVersionedSemanticsWithToStreamAndBackIfMaterializedAsVersioned", () => {
    expect(filterUsesVersionedSemantics((b) => b.table("t1", consumed, versioned("versioned")).toStream().toTable(versioned("versioned2")), oneRow)).toBe(true);
  });

  /** Counts by value after `table`; an out-of-order update of "A" (to "late") is ignored with versioned semantics. */
  function countsIgnoringOutOfOrder(table: (builder: StreamsBuilder) => KTable<string, string, null> | KTable<string, string>) {
    const builder = new StreamsBuilder();
    const output = new MockApiProcessorSupplier<string, number | null>();
    table(builder)
      .groupBy((_k, v) => pair(v, v), consumed)
      .count()
      .toStream()
      .process(output.supplier);
    const pipe = driverFor(builder);
    pipe("t1", "A", "a", 10);
    pipe("t1", "A", "late", 5);
    return output.processed.map((r) => [r.key, r.value]);
  }

  it("shouldSetUseVersionedSemanticsOnTableRepartitionMap", () => {
    expect(countsIgnoringOutOfOrder((b) => b.table("t1", consumed, versioned("versioned")))).toEqual([["a", 1]]);
  });

  it("shouldSetUseVersionedSemanticsOnTableRepartitionMapWithIntermediateNodes", () => {
    expect(
      countsIgnoringOutOfOrder((b) =>
        b
          .table("t1", consumed, versioned("versioned"))
          .filter((_k, v) => v !== null)
          .mapValues((v) => v + v),
      ),
    ).toEqual([["aa", 1]]);
  });

  /** Joins t1 and t2 (inner), then updates each side out of order: the versioned sides' late updates join nothing. */
  function joinOutputsAfterOutOfOrder(left: "versioned" | "plain", right: "versioned" | "plain", selfJoin = false) {
    const builder = new StreamsBuilder();
    const t1 = builder.table("t1", consumed, left === "versioned" ? versioned("versioned") : Materialized.as("plain1"));
    const t2 = selfJoin ? t1 : builder.table("t2", consumed, right === "versioned" ? versioned("versioned2") : Materialized.as("plain2"));
    const output = new MockApiProcessorSupplier<string, string | null>();
    t1.join(t2, (v1, v2) => `${v1}+${v2}`)
      .toStream()
      .process(output.supplier);
    const pipe = driverFor(builder);
    pipe("t1", "A", "a", 10);
    pipe("t2", "A", "b", 10);
    output.processed.splice(0);
    pipe("t1", "A", "late-left", 5);
    pipe("t2", "A", "late-right", 5);
    return output.processed.map((r) => r.value);
  }

  it("shouldSetUseVersionedSemanticsOnTableJoin", () => {
    expect(joinOutputsAfterOutOfOrder("versioned", "versioned")).toEqual([]);
  });

  it("shouldSetUseVersionedSemanticsOnTableJoinLeftOnly", () => {
    expect(joinOutputsAfterOutOfOrder("versioned", "plain")).toEqual(["a+late-right"]);
  });

  it("shouldSetUseVersionedSemanticsOnTableJoinRightOnly", () => {
    expect(joinOutputsAfterOutOfOrder("plain", "versioned")).toEqual(["late-left+b"]);
  });

  it("shouldSetUseVersionedSemanticsOnTableSelfJoin", () => {
    // One table on both sides: its late update is ignored by both.
    expect(joinOutputsAfterOutOfOrder("versioned", "versioned", true)).toEqual([]);
  });

  /** Foreign-key joins t1 (value: the t2 key) with t2, then updates each side out of order. */
  function foreignJoinOutputsAfterOutOfOrder(left: "versioned" | "plain", right: "versioned" | "plain", selfJoin = false) {
    const builder = new StreamsBuilder();
    const t1 = builder.table("t1", consumed, left === "versioned" ? versioned("versioned") : Materialized.as("plain1"));
    const t2 = selfJoin ? t1 : builder.table("t2", consumed, right === "versioned" ? versioned("versioned2") : Materialized.as("plain2"));
    const output = new MockApiProcessorSupplier<string, string | null>();
    t1.join(
      t2,
      (v) => v,
      (v1, v2) => `${v1}+${v2}`,
    )
      .toStream()
      .process(output.supplier);
    const pipe = driverFor(builder);
    pipe("t2", "x", "x", 10);
    pipe("t1", "x", "x", 10);
    output.processed.splice(0);
    pipe("t1", "x", "x", 5);
    if (!selfJoin) pipe("t2", "x", "late", 5);
    return output.processed.map((r) => r.value);
  }

  it("shouldSetUseVersionedSemanticsOnTableForeignJoin", () => {
    expect(foreignJoinOutputsAfterOutOfOrder("versioned", "versioned")).toEqual([]);
  });

  it("shouldSetUseVersionedSemanticsOnTableForeignJoinLeftOnly", () => {
    expect(foreignJoinOutputsAfterOutOfOrder("versioned", "plain")).toEqual(["x+late"]);
  });

  it("shouldSetUseVersionedSemanticsOnTableForeignJoinRightOnly", () => {
    expect(foreignJoinOutputsAfterOutOfOrder("plain", "versioned")).toEqual(["x+x"]);
  });

  it("shouldSetUseVersionedSemanticsOnTableForeignSelfJoin", () => {
    expect(foreignJoinOutputsAfterOutOfOrder("versioned", "versioned", true)).toEqual([]);
  });
});
