/**
 * Ported from Kafka Streams' KTableKTableLeftJoinTest: every left row joins the right row or null,
 * stamped with the later of the two rows' timestamps; a record without a key is no row. Kafka's
 * `Change(new, null)` updates are the new values here; testSendingOldValue reads the join's changes
 * (new and old result) right after its node, as Kafka's does. shouldNotThrowIllegalStateExceptionWhenMultiCacheEvictions
 * draws its keys and values from a fixed pseudo-random sequence (Kafka's from `Random`).
 */
import { describe, expect, it } from "vitest";
import { Materialized, StreamsBuilder, TopologyTestDriver, type Change } from "../../../src/streams";
import {
  addTableProcessor,
  build,
  chg,
  droppedRecordsTotal,
  INTEGER,
  kvt,
  MockApiProcessorSupplier,
  STRING,
  STRING_ADDER,
  TestInputTopic,
  TOSTRING_JOINER,
} from "./support";
import { checkOutputAfterEachStep, checkProcessedAfterEachStep, type Expected } from "./table-join-scenario";

const consumed = { key: INTEGER, value: STRING };

/** What Kafka expects after each step of the scenario. */
const EXPECTED: Record<number, Expected> = {
  1: [kvt(0, "X0+null", 5), kvt(1, "X1+null", 6)],
  2: [kvt(0, "X0+Y0", 5), kvt(1, "X1+Y1", 10)],
  3: [kvt(0, "XX0+Y0", 7), kvt(1, "XX1+Y1", 10), kvt(2, "XX2+null", 7), kvt(3, "XX3+null", 7)],
  4: [kvt(0, "XX0+YY0", 7), kvt(1, "XX1+YY1", 7), kvt(2, "XX2+YY2", 10), kvt(3, "XX3+YY3", 15)],
  5: [kvt(0, "XXX0+YY0", 6), kvt(1, "XXX1+YY1", 6), kvt(2, "XXX2+YY2", 10), kvt(3, "XXX3+YY3", 15)],
  6: [kvt(0, "XXX0+null", 6), kvt(1, "XXX1+null", 7)],
  7: [kvt(0, "XXXX0+null", 13), kvt(1, "XXXX1+null", 13), kvt(2, "XXXX2+YY2", 13), kvt(3, "XXXX3+YY3", 15)],
  8: [kvt(0, null, 0), kvt(1, null, 42), kvt(2, null, 10), kvt(3, null, 20)],
};

describe("KTableKTableLeftJoinTest", () => {
  it("testJoin", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = builder.table("topic2", consumed);
    table1.leftJoin(table2, TOSTRING_JOINER).toStream().to("output", { key: INTEGER, value: STRING });
    const topology = build(builder, "topic1", "topic2", "output");
    expect(topology.subtopologies).toHaveLength(1);
    expect([...topology.subtopologies[0]!.sourceTopics].sort()).toEqual(["topic1", "topic2"]);
    checkOutputAfterEachStep(topology, EXPECTED);
  });

  it("testNotSendingOldValue", () => {
    const builder = new StreamsBuilder();
    const joined = builder.table("topic1", consumed).leftJoin(builder.table("topic2", consumed), TOSTRING_JOINER);
    const supplier = new MockApiProcessorSupplier<number, string | null>();
    joined.toStream().process(supplier.supplier);
    checkProcessedAfterEachStep(build(builder, "topic1", "topic2"), supplier, EXPECTED);
  });

  it("shouldLogAndMeterSkippedRecordsDueToNullLeftKey", () => {
    const builder = new StreamsBuilder();
    const supplier = new MockApiProcessorSupplier<string, unknown>();
    builder
      .table("left", { key: STRING, value: STRING })
      .leftJoin(builder.table("right", { key: STRING, value: STRING }), (a, b) => [a, b])
      .toStream()
      .process(supplier.supplier);
    const driver = new TopologyTestDriver(build(builder, "left", "right"));
    new TestInputTopic(driver, "left", STRING, STRING).pipeInput(null, "new", 0);
    expect(droppedRecordsTotal(driver)).toBe(1);
    expect(supplier.processed).toEqual([]);
  });

  it("testSendingOldValue", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.table("topic1", consumed);
    const table2 = builder.table("topic2", consumed);
    const joined = table1.leftJoin(table2, TOSTRING_JOINER);
    joined.enableSendingOldValues(true);
    expect(table1.oldValues.sending).toBe(true);
    expect(table2.oldValues.sending).toBe(true);
    expect(joined.oldValues.sending).toBe(true);
    const proc = new MockApiProcessorSupplier<number, Change<string>>();
    addTableProcessor(joined, proc);
    checkProcessedAfterEachStep(build(builder, "topic1", "topic2"), proc, {
      1: [kvt(0, chg("X0+null", null), 5), kvt(1, chg("X1+null", null), 6)],
      2: [kvt(0, chg("X0+Y0", "X0+null"), 5), kvt(1, chg("X1+Y1", "X1+null"), 10)],
      3: [kvt(0, chg("XX0+Y0", "X0+Y0"), 7), kvt(1, chg("XX1+Y1", "X1+Y1"), 10), kvt(2, chg("XX2+null", null), 7), kvt(3, chg("XX3+null", null), 7)],
      4: [
        kvt(0, chg("XX0+YY0", "XX0+Y0"), 7),
        kvt(1, chg("XX1+YY1", "XX1+Y1"), 7),
        kvt(2, chg("XX2+YY2", "XX2+null"), 10),
        kvt(3, chg("XX3+YY3", "XX3+null"), 15),
      ],
      5: [
        kvt(0, chg("XXX0+YY0", "XX0+YY0"), 6),
        kvt(1, chg("XXX1+YY1", "XX1+YY1"), 6),
        kvt(2, chg("XXX2+YY2", "XX2+YY2"), 10),
        kvt(3, chg("XXX3+YY3", "XX3+YY3"), 15),
      ],
      6: [kvt(0, chg("XXX0+null", "XXX0+YY0"), 6), kvt(1, chg("XXX1+null", "XXX1+YY1"), 7)],
      7: [
        kvt(0, chg("XXXX0+null", "XXX0+null"), 13),
        kvt(1, chg("XXXX1+null", "XXX1+null"), 13),
        kvt(2, chg("XXXX2+YY2", "XXX2+YY2"), 13),
        kvt(3, chg("XXXX3+YY3", "XXX3+YY3"), 15),
      ],
      8: [kvt(0, chg(null, "XXXX0+null"), 0), kvt(1, chg(null, "XXXX1+null"), 42), kvt(2, chg(null, "XXXX2+YY2"), 10), kvt(3, chg(null, "XXXX3+YY3"), 20)],
    });
  });

  /** Reproduces KAFKA-4492 (an IllegalStateException under cache evictions): a chain of left joins over a regrouped table. */
  it("shouldNotThrowIllegalStateExceptionWhenMultiCacheEvictions", () => {
    const inputs = ["agg", "tableOne", "tableTwo", "tableThree", "tableFour", "tableFive", "tableSix"];
    const builder = new StreamsBuilder();
    const consumedLong = { key: INTEGER, value: STRING };
    const aggTable = builder
      .table("agg", consumedLong, Materialized.as("agg-base-store"))
      .groupBy((key, value) => ({ key, value }), { key: INTEGER, value: STRING })
      .reduce(STRING_ADDER, STRING_ADDER, Materialized.as("agg-store"));
    const [one, two, three, four, five, six] = inputs.slice(1).map((topic) => builder.table(topic, consumedLong, Materialized.as(`${topic}-base-store`)));
    const mapper = (value: string) => value.toUpperCase();
    const seven = one!.mapValues(mapper);
    const eight = six!.leftJoin(seven, TOSTRING_JOINER);
    const results = new MockApiProcessorSupplier<number, string | null>();
    aggTable
      .leftJoin(one!, TOSTRING_JOINER)
      .leftJoin(two!, TOSTRING_JOINER)
      .leftJoin(three!, TOSTRING_JOINER)
      .leftJoin(four!, TOSTRING_JOINER)
      .leftJoin(five!, TOSTRING_JOINER)
      .leftJoin(eight, TOSTRING_JOINER)
      .mapValues(mapper)
      .toStream()
      .process(results.supplier);
    const driver = new TopologyTestDriver(build(builder, ...inputs));
    const values = [
      "a",
      "AA",
      "BBB",
      "CCCC",
      "DD",
      "EEEEEEEE",
      "F",
      "GGGGGGGGGGGGGGG",
      "HHH",
      "IIIIIIIIII",
      "J",
      "KK",
      "LLLL",
      "MMMMMMMMMMMMMMMMMMMMMM",
      "NNNNN",
      "O",
      "P",
      "QQQQQ",
      "R",
      "SSSS",
      "T",
      "UU",
      "VVVVVVVVVVVVVVVVVVV",
    ];
    let seed = 42;
    const nextInt = (bound: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_647;
      return seed % bound;
    };
    expect(() => {
      for (let i = 0; i < 1000; i++) {
        for (const input of inputs) new TestInputTopic(driver, input, INTEGER, STRING).pipeInput(nextInt(1000), values[nextInt(values.length)]!);
      }
    }).not.toThrow();
    expect(results.processed.length).toBeGreaterThan(0);
    expect(results.processed.every((r) => r.value === null || r.value === r.value.toUpperCase())).toBe(true);
  });
});
