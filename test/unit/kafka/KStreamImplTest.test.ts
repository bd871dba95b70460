/**
 * Ported from Kafka Streams' KStreamImplTest: the `toTable` cases — a stream read as a table
 * (materialized or not, after a key change through a repartition topic named after the
 * operator), joined with a stream or a table (by key, or by foreign key), and regrouped with
 * `KTable.groupBy`. The
 * topology's shape is checked by its subtopologies, node names and stores (Edge Streams'
 * description is laid out differently). Not ported: the rest of KStreamImplTest, which checks
 * null arguments (TypeScript's types rule them out), topology descriptions of operators tested in
 * their own files, and the deprecated Processor API variants.
 */
import { describe, expect, it } from "vitest";
import { Materialized, Serdes, StreamsBuilder, TopologyTestDriver, type Topology } from "../../../src/streams";
import { build, INTEGER, STRING, TestInputTopic, TestOutputTopic, TOSTRING_JOINER, kvt } from "./support";

const consumed = { key: STRING, value: STRING };

/** Each subtopology's nodes with the stores they use, as Kafka's description lists them. */
function shape(topology: Topology): string[][] {
  return topology.subtopologies.map((s) =>
    s.nodes.map((n) =>
      n.kind === "processor" ? `${n.name} [${n.stores.join(", ")}]` : n.kind === "sink" ? `${n.name} -> ${n.topic}` : `${n.name} <- ${n.topics.join(", ")}`,
    ),
  );
}

describe("KStreamImplTest", () => {
  it("shouldNotMaterializedKTableFromKStream", () => {
    const builder = new StreamsBuilder();
    builder.stream("input", consumed).toTable().toStream().to("output", { key: STRING, value: STRING });
    const topology = build(builder, "input", "output");
    expect(shape(topology)).toEqual([
      ["KSTREAM-SOURCE-0000000000 <- input", "KSTREAM-TOTABLE-0000000001 []", "KTABLE-TOSTREAM-0000000003 []", "KSTREAM-SINK-0000000004 -> output"],
    ]);
    const driver = new TopologyTestDriver(topology);
    const inputTopic = new TestInputTopic(driver, "input", STRING, STRING);
    const outputTopic = new TestOutputTopic(driver, "output", STRING, STRING);
    inputTopic.pipeInput("A", "01", 5);
    inputTopic.pipeInput("B", "02", 100);
    inputTopic.pipeInput("C", "03", 0);
    inputTopic.pipeInput("D", "04", 0);
    inputTopic.pipeInput("A", "05", 10);
    inputTopic.pipeInput("A", "06", 8);
    expect(outputTopic.readRecordsToList()).toEqual([
      kvt("A", "01", 5),
      kvt("B", "02", 100),
      kvt("C", "03", 0),
      kvt("D", "04", 0),
      kvt("A", "05", 10),
      kvt("A", "06", 8),
    ]);
  });

  it("shouldMaterializeKTableFromKStream", () => {
    const builder = new StreamsBuilder();
    builder.stream("input", consumed).toTable(Materialized.as("store"));
    const topology = build(builder, "input");
    expect(shape(topology)).toEqual([["KSTREAM-SOURCE-0000000000 <- input", "KSTREAM-TOTABLE-0000000001 [store]"]]);
    const driver = new TopologyTestDriver(topology);
    const inputTopic = new TestInputTopic(driver, "input", STRING, STRING);
    inputTopic.pipeInput("A", "01");
    inputTopic.pipeInput("B", "02");
    inputTopic.pipeInput("A", "03");
    expect(
      Object.fromEntries(
        driver
          .store<string, string>("0_0", "store")
          .all()
          .map((e) => [e.key, e.value]),
      ),
    ).toEqual({ A: "03", B: "02" });
  });

  it("shouldSupportKeyChangeKTableFromKStream", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("input", consumed)
      .map((key, value) => ({ key: key.charCodeAt(0) - "A".charCodeAt(0), value }))
      .toTable(Materialized.with(INTEGER))
      .toStream()
      .to("output", { key: INTEGER, value: STRING });
    const topology = build(builder, "input", "output");
    expect(topology.subtopologies).toHaveLength(2);
    expect(topology.subtopologies[0]!.sinkTopics).toEqual(["kafka-test-KSTREAM-TOTABLE-0000000002-repartition"]);
    expect(topology.subtopologies[1]!.sourceTopics).toEqual(["kafka-test-KSTREAM-TOTABLE-0000000002-repartition"]);
    expect(topology.subtopologies[1]!.nodes.map((n) => n.name)).toContain("KSTREAM-TOTABLE-0000000002");
    expect(topology.subtopologies[1]!.stores).toEqual([]);
    const driver = new TopologyTestDriver(topology);
    const inputTopic = new TestInputTopic(driver, "input", STRING, STRING);
    const outputTopic = new TestOutputTopic(driver, "output", INTEGER, STRING);
    inputTopic.pipeInput("A", "01", 5);
    inputTopic.pipeInput("B", "02", 100);
    inputTopic.pipeInput("C", "03", 0);
    inputTopic.pipeInput("D", "04", 0);
    inputTopic.pipeInput("A", "05", 10);
    inputTopic.pipeInput("A", "06", 8);
    expect(outputTopic.readRecordsToList()).toEqual([kvt(0, "01", 5), kvt(1, "02", 100), kvt(2, "03", 0), kvt(3, "04", 0), kvt(0, "05", 10), kvt(0, "06", 8)]);
  });

  it("shouldSupportForeignKeyTableTableJoinWithKTableFromKStream", () => {
    const builder = new StreamsBuilder();
    const leftTable = builder.stream("input1", consumed).toTable();
    const rightTable = builder.stream("input2", consumed).toTable();
    const extractor = (value: string) => value.split("|")[1]!;
    const joiner = (value1: string, value2: string) => `(${value1},${value2})`;
    leftTable.join(rightTable, extractor, joiner).toStream().to("output", { key: STRING, value: STRING });
    const topology = build(builder, "input1", "input2", "output");
    // Kafka's two subtopologies: the left table with the registration sink and the response
    // resolver; the right table with the subscription store and the response sink.
    const subscription = "kafka-test-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-subscription-registration-repartition";
    const response = "kafka-test-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000013-subscription-response-repartition";
    expect(topology.subtopologies.map((s) => ({ sources: [...s.sourceTopics].sort(), sinks: [...s.sinkTopics].sort() }))).toEqual([
      { sources: ["input1", response], sinks: [subscription, "output"] },
      { sources: ["input2", subscription], sinks: [response] },
    ]);
    const driver = new TopologyTestDriver(topology);
    const left = new TestInputTopic(driver, "input1", STRING, STRING);
    const right = new TestInputTopic(driver, "input2", STRING, STRING);
    const outputTopic = new TestOutputTopic(driver, "output", STRING, STRING);
    // Pre-populate the RHS records. This test is all about what happens when we add/remove LHS records
    right.pipeInput("rhs1", "rhsValue1");
    right.pipeInput("rhs2", "rhsValue2");
    right.pipeInput("rhs3", "rhsValue3"); // this unreferenced FK won't show up in any results
    expect(outputTopic.readKeyValuesToMap()).toEqual(new Map());
    left.pipeInput("lhs1", "lhsValue1|rhs1");
    left.pipeInput("lhs2", "lhsValue2|rhs2");
    expect(outputTopic.readKeyValuesToMap()).toEqual(
      new Map([
        ["lhs1", "(lhsValue1|rhs1,rhsValue1)"],
        ["lhs2", "(lhsValue2|rhs2,rhsValue2)"],
      ]),
    );
    // Add another reference to an existing FK
    left.pipeInput("lhs3", "lhsValue3|rhs1");
    expect(outputTopic.readKeyValuesToMap()).toEqual(new Map([["lhs3", "(lhsValue3|rhs1,rhsValue1)"]]));
    left.pipeInput("lhs1", null);
    expect(outputTopic.readKeyValuesToMap()).toEqual(new Map([["lhs1", null]]));
  });

  it("shouldSupportTableTableJoinWithKStreamToKTable", () => {
    const builder = new StreamsBuilder();
    const table1 = builder.stream("left", consumed).toTable();
    const table2 = builder.stream("right", consumed).toTable();
    table1.join(table2, TOSTRING_JOINER).toStream().to("output", { key: STRING, value: STRING });
    const topology = build(builder, "left", "right", "output");
    expect(shape(topology)).toEqual([
      [
        "KSTREAM-SOURCE-0000000000 <- left",
        "KSTREAM-TOTABLE-0000000001 [KSTREAM-TOTABLE-STATE-STORE-0000000002]",
        "KSTREAM-SOURCE-0000000003 <- right",
        "KSTREAM-TOTABLE-0000000004 [KSTREAM-TOTABLE-STATE-STORE-0000000005]",
        "KTABLE-JOINTHIS-0000000006 [KSTREAM-TOTABLE-STATE-STORE-0000000005]",
        "KTABLE-JOINOTHER-0000000007 [KSTREAM-TOTABLE-STATE-STORE-0000000002]",
        "KTABLE-MERGE-0000000008 []",
        "KTABLE-TOSTREAM-0000000009 []",
        "KSTREAM-SINK-0000000010 -> output",
      ],
    ]);
    const driver = new TopologyTestDriver(topology);
    const left = new TestInputTopic(driver, "left", STRING, STRING);
    const right = new TestInputTopic(driver, "right", STRING, STRING);
    const output = new TestOutputTopic(driver, "output", STRING, STRING);
    right.pipeInput("lhs1", "rhsValue1");
    right.pipeInput("rhs2", "rhsValue2");
    right.pipeInput("lhs3", "rhsValue3");
    expect(output.readKeyValuesToMap()).toEqual(new Map());
    left.pipeInput("lhs1", "lhsValue1");
    left.pipeInput("lhs2", "lhsValue2");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs1", "lhsValue1+rhsValue1"]]));
    left.pipeInput("lhs3", "lhsValue3");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs3", "lhsValue3+rhsValue3"]]));
    left.pipeInput("lhs1", "lhsValue4");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs1", "lhsValue4+rhsValue1"]]));
  });

  it("shouldSupportStreamTableJoinWithKStreamToKTable", () => {
    const builder = new StreamsBuilder();
    const stream = builder.stream("streamTopic", consumed);
    const table = builder.stream("tableTopic", consumed).toTable();
    stream.join(table, TOSTRING_JOINER).to("output", { key: STRING, value: STRING });
    const topology = build(builder, "streamTopic", "tableTopic", "output");
    expect(shape(topology)).toEqual([
      [
        "KSTREAM-SOURCE-0000000000 <- streamTopic",
        "KSTREAM-SOURCE-0000000001 <- tableTopic",
        "KSTREAM-TOTABLE-0000000002 [KSTREAM-TOTABLE-STATE-STORE-0000000003]",
        "KSTREAM-JOIN-0000000004 [KSTREAM-TOTABLE-STATE-STORE-0000000003]",
        "KSTREAM-SINK-0000000005 -> output",
      ],
    ]);
    const driver = new TopologyTestDriver(topology);
    const left = new TestInputTopic(driver, "streamTopic", STRING, STRING);
    const right = new TestInputTopic(driver, "tableTopic", STRING, STRING);
    const output = new TestOutputTopic(driver, "output", STRING, STRING);
    right.pipeInput("lhs1", "rhsValue1");
    right.pipeInput("rhs2", "rhsValue2");
    right.pipeInput("lhs3", "rhsValue3");
    expect(output.readKeyValuesToMap()).toEqual(new Map());
    left.pipeInput("lhs1", "lhsValue1");
    left.pipeInput("lhs2", "lhsValue2");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs1", "lhsValue1+rhsValue1"]]));
    left.pipeInput("lhs3", "lhsValue3");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs3", "lhsValue3+rhsValue3"]]));
    left.pipeInput("lhs1", "lhsValue4");
    expect(output.readKeyValuesToMap()).toEqual(new Map([["lhs1", "lhsValue4+rhsValue1"]]));
  });

  it("shouldSupportGroupByCountWithKStreamToKTable", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("input", consumed)
      .toTable()
      .groupBy((_key, value) => ({ key: value, value }), { key: STRING, value: STRING })
      .count()
      .toStream()
      .to("output", { key: STRING, value: Serdes.number() });
    const topology = build(builder, "input", "output");
    const repartition = "kafka-test-KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition";
    expect(shape(topology)).toEqual([
      [
        "KSTREAM-SOURCE-0000000000 <- input",
        "KSTREAM-TOTABLE-0000000001 [KSTREAM-TOTABLE-STATE-STORE-0000000002]",
        "KTABLE-SELECT-0000000003 []",
        `KSTREAM-SINK-0000000005 -> ${repartition}`,
      ],
      [
        `KSTREAM-SOURCE-0000000006 <- ${repartition}`,
        "KTABLE-AGGREGATE-0000000007 [KTABLE-AGGREGATE-STATE-STORE-0000000004]",
        "KTABLE-TOSTREAM-0000000008 []",
        "KSTREAM-SINK-0000000009 -> output",
      ],
    ]);
    const driver = new TopologyTestDriver(topology);
    const inputTopic = new TestInputTopic(driver, "input", STRING, STRING, 0, 0);
    const outputTopic = new TestOutputTopic(driver, "output", STRING, Serdes.number());
    inputTopic.pipeInput("A", "green", 10);
    inputTopic.pipeInput("B", "green", 9);
    inputTopic.pipeInput("A", "blue", 12);
    inputTopic.pipeInput("C", "yellow", 15);
    inputTopic.pipeInput("D", "green", 11);
    expect(outputTopic.readRecordsToList()).toEqual([
      kvt("green", 1, 10),
      kvt("green", 2, 10),
      kvt("green", 1, 12),
      kvt("blue", 1, 12),
      kvt("yellow", 1, 15),
      kvt("green", 2, 12),
    ]);
  });

  it("shouldSupportTriggerMaterializedWithKTableFromKStream", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("input", consumed)
      .toTable()
      .mapValues((value) => value.charCodeAt(0) - "a".charCodeAt(0), Materialized.as("store", { key: STRING, value: INTEGER }))
      .toStream()
      .to("output", { key: STRING, value: INTEGER });
    const topology = build(builder, "input", "output");
    expect(shape(topology)).toEqual([
      [
        "KSTREAM-SOURCE-0000000000 <- input",
        "KSTREAM-TOTABLE-0000000001 []",
        "KTABLE-MAPVALUES-0000000003 [store]",
        "KTABLE-TOSTREAM-0000000004 []",
        "KSTREAM-SINK-0000000005 -> output",
      ],
    ]);
    const driver = new TopologyTestDriver(topology);
    const inputTopic = new TestInputTopic(driver, "input", STRING, STRING, 0, 0);
    const outputTopic = new TestOutputTopic(driver, "output", STRING, INTEGER);
    inputTopic.pipeInput("A", "green", 10);
    inputTopic.pipeInput("B", "green", 9);
    inputTopic.pipeInput("A", "blue", 12);
    inputTopic.pipeInput("C", "yellow", 15);
    inputTopic.pipeInput("D", "green", 11);
    expect(
      Object.fromEntries(
        driver
          .store<string, number>("0_0", "store")
          .all()
          .map((e) => [e.key, e.value]),
      ),
    ).toEqual({ A: 1, B: 6, C: 24, D: 6 });
    expect(outputTopic.readRecordsToList()).toEqual([kvt("A", 6, 10), kvt("B", 6, 9), kvt("A", 1, 12), kvt("C", 24, 15), kvt("D", 6, 11)]);
  });
});
