/**
 * Ported from Kafka Streams' KTableKTableInnerJoinTest: results carry the later of the two rows'
 * timestamps; a record without a key is no row (dropped, counted, joins nothing). Kafka's
 * `Change(new, null)` updates are the new values here; testSendingOldValues reads the join's
 * changes (new and old result) right after its node, as Kafka's does.
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver, type Change } from "../../../src/streams";
import { addTableProcessor, build, chg, droppedRecordsTotal, INTEGER, kvt, MockApiProcessorSupplier, STRING, TestInputTopic, TOSTRING_JOINER } from "./support";
import { checkOutputAfterEachStep, checkProcessedAfterEachStep, type Expected } from "./table-join-scenario";

const consumed = { key: INTEGER, value: STRING };

/** What Kafka expects after each step of the scenario. */
const EXPECTED: Record<number, Expected> = {
  1: [],
  2: [kvt(0, "X0+Y0", 5), kvt(1, "X1+Y1", 10)],
  3: [kvt(0, "XX0+Y0", 7), kvt(1, "XX1+Y1", 10)],
  4: [kvt(0, "XX0+YY0", 7), kvt(1, "XX1+YY1", 7), kvt(2, "XX2+YY2", 10), kvt(3, "XX3+YY3", 15)],
  5: [kvt(0, "XXX0+YY0", 6), kvt(1, "XXX1+YY1", 6), kvt(2, "XXX2+YY2", 10), kvt(3, "XXX3+YY3", 15)],
  6: [kvt(0, null, 6), kvt(1, null, 7)],
  7: [kvt(2, "XXXX2+YY2", 13), kvt(3, "XXXX3+YY3", 15)],
  8: [kvt(2, null, 10), kvt(3, null, 20)],
};

/** Both tables in one subtopology: the join's co-partition group is {topic1, topic2}. */
function expectCopartitioned(builder: StreamsBuilder) {
  const topology = build(builder, "topic1", "topic2", "output");
  expect(topology.subtopologies).toHaveLength(1);
  expect([...topology.subtopologies[0]!.sourceTopics].sort()).toEqual(["topic1", "topic2"]);
  return topology;
}

describe("KTableKTableInnerJoinTest", () => {
  it("testJoin", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = builder.table("topic2", consumed);
    table1.join(table2, TOSTRING_JOINER).toStream().to("output", { key: INTEGER, value: STRING });
    checkOutputAfterEachStep(expectCopartitioned(builder), EXPECTED);
  });

  it("testQueryableJoin", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = builder.table("topic2", consumed);
    const table3 = table1.join(table2, TOSTRING_JOINER, Materialized.with(INTEGER, STRING));
    table3.toStream().to("output", { key: INTEGER, value: STRING });
    checkOutputAfterEachStep(expectCopartitioned(builder), EXPECTED);
  });

  it("testQueryableNotSendingOldValues", () => {
    const builder = new StreamsBuilder();
    const joined = builder.table("topic1", consumed).join(builder.table("topic2", consumed), TOSTRING_JOINER, Materialized.with(INTEGER, STRING));
    const supplier = new MockApiProcessorSupplier<number, string | null>();
    joined.toStream().process(supplier.supplier);
    checkProcessedAfterEachStep(build(builder, "topic1", "topic2"), supplier, EXPECTED);
  });

  it("testNotSendingOldValues", () => {
    const builder = new StreamsBuilder();
    const joined = builder.table("topic1", consumed).join(builder.table("topic2", consumed), TOSTRING_JOINER);
    const supplier = new MockApiProcessorSupplier<number, string | null>();
    joined.toStream().process(supplier.supplier);
    checkProcessedAfterEachStep(build(builder, "topic1", "topic2"), supplier, EXPECTED);
  });

  it("shouldLogAndMeterSkippedRecordsDueToNullLeftKey", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, unknown>();
    builder
      .table("left", { key: STRING, value: STRING })
      .join(builder.table("right", { key: STRING, value: STRING }), (a, b) => [a, b])
      .toStream()
      .process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "left", "right"));
    new TestInputTopic(driver, "left", STRING, STRING).pipeInput(null, "new", 0);
    // Kafka logs "Skipping record due to null key" and counts it as dropped.
    expect(droppedRecordsTotal(driver)).toBe(1);
    expect(supplier.processed).toEqual([]);
  });

  it("testSendingOldValues", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = builder.table("topic2", consumed);
    const joined = table1.join(table2, TOSTRING_JOINER);
    joined.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(true);
    expect(table2.oldValues.sending).toBe(true);
    expect(joined.oldValues.sending).toBe(true);
    const proc = new MockApiProcessorSupplier<number, Change<string>>();
    addTableProcessor(joined, proc);
    checkProcessedAfterEachStep(build(builder, "topic1", "topic2"), proc, {
      1: [],
      2: [kvt(0, chg("X0+Y0", null), 5), kvt(1, chg("X1+Y1", null), 10)],
      3: [kvt(0, chg("XX0+Y0", "X0+Y0"), 7), kvt(1, chg("XX1+Y1", "X1+Y1"), 10)],
      4: [kvt(0, chg("XX0+YY0", "XX0+Y0"), 7), kvt(1, chg("XX1+YY1", "XX1+Y1"), 7), kvt(2, chg("XX2+YY2", null), 10), kvt(3, chg("XX3+YY3", null), 15)],
      5: [
        kvt(0, chg("XXX0+YY0", "XX0+YY0"), 6),
        kvt(1, chg("XXX1+YY1", "XX1+YY1"), 6),
        kvt(2, chg("XXX2+YY2", "XX2+YY2"), 10),
        kvt(3, chg("XXX3+YY3", "XX3+YY3"), 15),
      ],
      6: [kvt(0, chg(null, "XXX0+YY0"), 6), kvt(1, chg(null, "XXX1+YY1"), 7)],
      7: [kvt(2, chg("XXXX2+YY2", "XXX2+YY2"), 13), kvt(3, chg("XXXX3+YY3", "XXX3+YY3"), 15)],
      8: [kvt(2, chg(null, "XXXX2+YY2"), 10), kvt(3, chg(null, "XXXX3+YY3"), 20)],
    });
  });
});
