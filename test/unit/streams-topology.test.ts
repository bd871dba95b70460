import { describe, expect, it } from "vitest";
import { Materialized, Serdes, StreamsBuilder, TopologyError, type Processor } from "../../src/streams";
import { ordersTotalsTopology } from "../../examples/orders-totals/topology";

const app = { applicationId: "app" };

describe("subtopologies", () => {
  it("keeps a keyed aggregation without key change in the source's subtopology", () => {
    const topology = ordersTotalsTopology();
    expect(topology.subtopologies).toHaveLength(1);
    const [sub] = topology.subtopologies;
    expect(sub).toMatchObject({ id: 0, partitions: 4, sourceTopics: ["orders"], repartitionSourceTopics: [], sinkTopics: ["totals"] });
    expect(sub!.stores.map(({ name, kind, changelogTopic }) => ({ name, kind, changelogTopic }))).toEqual([
      { name: "totals", kind: "key-value", changelogTopic: "edge-streams-totals-changelog" },
    ]);
    expect(topology.topics()).toEqual({ orders: 4, totals: 4, "edge-streams-totals-changelog": 4 });
    expect(topology.taskIds()).toEqual(["0_0", "0_1", "0_2", "0_3"]);
  });

  it("inserts <applicationId>-<store>-repartition after map + groupByKey and starts a new subtopology", () => {
    const builder = new StreamsBuilder();
    builder
      .stream<string, string>("clicks", { key: Serdes.string(), value: Serdes.string() })
      .map((_user, page) => ({ key: page, value: 1 }))
      .groupByKey({ key: Serdes.string() })
      .count(Materialized.as("counts"))
      .toStream()
      .to("page-counts");
    const topology = builder.build({ ...app, topics: { clicks: 3, "page-counts": 5 } });

    expect(
      topology.subtopologies.map(({ id, sourceTopics, repartitionSourceTopics, sinkTopics }) => ({ id, sourceTopics, repartitionSourceTopics, sinkTopics })),
    ).toEqual([
      { id: 0, sourceTopics: ["clicks"], repartitionSourceTopics: [], sinkTopics: ["app-counts-repartition"] },
      { id: 1, sourceTopics: ["app-counts-repartition"], repartitionSourceTopics: ["app-counts-repartition"], sinkTopics: ["page-counts"] },
    ]);
    expect(topology.subtopologies[0]!.stores).toEqual([]);
    expect(topology.subtopologies[1]!.stores.map((s) => s.changelogTopic)).toEqual(["app-counts-changelog"]);
    // Internal topics take the partition count of the sources of the subtopology writing them.
    expect(topology.topics()).toEqual({ clicks: 3, "page-counts": 5, "app-counts-repartition": 3, "app-counts-changelog": 3 });
    expect(topology.taskIds()).toEqual(["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]);
    expect(topology.describe()).toContain("Sub-topology: 1");
    expect(topology.describe()).toContain("Source: KSTREAM-SOURCE-");
  });

  it("names the repartition topic after Grouped.name when given (groupBy always repartitions)", () => {
    const builder = new StreamsBuilder();
    builder
      .stream<string, { region: string }>("users")
      .groupBy((_id, user) => user.region, { key: Serdes.string(), name: "by-region" })
      .count(Materialized.as("per-region"));
    const topology = builder.build({ ...app, topics: { users: 2 } });
    expect(topology.subtopologies.map((s) => s.repartitionSourceTopics)).toEqual([[], ["app-by-region-repartition"]]);
    expect(Object.keys(topology.topics()).sort()).toEqual(["app-by-region-repartition", "app-per-region-changelog", "users"]);
  });

  type Source = ReturnType<typeof source>;
  it.each([
    ["selectKey", 2, (s: Source) => s.selectKey((k) => k.toUpperCase())],
    ["flatMap", 2, (s: Source) => s.flatMap((k, v) => [{ key: k, value: v }])],
    ["map then filter", 2, (s: Source) => s.map((k, v) => ({ key: k, value: v })).filter(() => true)],
    ["process", 2, (s: Source) => s.process<string, string>(() => ({ process: () => {} }))],
    ["mapValues", 1, (s: Source) => s.mapValues((v) => `${v}!`)],
    [
      "filter + peek + flatMapValues",
      1,
      (s: Source) =>
        s
          .filter(() => true)
          .peek(() => {})
          .flatMapValues((v) => [v]),
    ],
  ])("%s before groupByKey gives %i subtopologies", (_name, expected, operator) => {
    const builder = new StreamsBuilder();
    operator(source(builder)).groupByKey({ key: Serdes.string() }).count(Materialized.as("c"));
    expect(builder.build({ ...app, topics: { in: 2 } }).subtopologies).toHaveLength(expected);
  });

  it("chains repartitions, each topic with its writer's partition count", () => {
    const builder = new StreamsBuilder();
    source(builder)
      .selectKey((_k, v) => v)
      .groupByKey({ key: Serdes.string() })
      .count(Materialized.as("first"))
      .toStream()
      .selectKey((k) => `${k}`.length)
      .groupByKey({ key: Serdes.number() })
      .count(Materialized.as("second"));
    const topology = builder.build({ ...app, topics: { in: 6 } });
    expect(topology.subtopologies.map((s) => s.sourceTopics)).toEqual([["in"], ["app-first-repartition"], ["app-second-repartition"]]);
    expect(topology.topics()).toMatchObject({ "app-first-repartition": 6, "app-second-repartition": 6, "app-second-changelog": 6 });
  });

  it("numbers subtopologies by the creation order of their sources, deterministically", () => {
    const write = () => {
      const builder = new StreamsBuilder();
      builder.stream("b").to("out");
      builder.stream("a").groupByKey().count(Materialized.as("a-count"));
      return builder.build({ ...app, topics: { a: 1, b: 2, out: 1 } });
    };
    const topology = write();
    expect(topology.subtopologies.map((s) => s.sourceTopics)).toEqual([["b"], ["a"]]);
    expect(topology.taskIds()).toEqual(["0_0", "0_1", "1_0"]);
    expect(write().describe()).toBe(topology.describe());
  });

  it("puts processors sharing a store into one subtopology", () => {
    const builder = new StreamsBuilder().addStateStore("shared");
    const noop = (): Processor<unknown, unknown> => ({ process: () => {} });
    builder.stream("a").process(noop, "shared");
    builder.stream("b").process(noop, "shared");
    const topology = builder.build({ ...app, topics: { a: 2, b: 2 } });
    expect(topology.subtopologies.map((s) => s.sourceTopics)).toEqual([["a", "b"]]);
  });
});

describe("build-time checks", () => {
  it("refuses an aggregation over merged topics that are not co-partitioned, naming topics and counts", () => {
    const builder = new StreamsBuilder();
    builder.stream("orders").merge(builder.stream("refunds")).groupByKey().count(Materialized.as("n"));
    expect(() => builder.build({ ...app, topics: { orders: 4, refunds: 3 } })).toThrow(TopologyError);
    expect(() => builder.build({ ...app, topics: { orders: 4, refunds: 3 } })).toThrow(/orders \(4 partitions\), refunds \(3 partitions\)/);
    const ok = builder.build({ ...app, topics: { orders: 4, refunds: 4 } });
    expect(ok.subtopologies.map((s) => s.sourceTopics)).toEqual([["orders", "refunds"]]);
  });

  it("gives a repartition topic read with a topic of another partition count that topic's count (Kafka's rule)", () => {
    const builder = new StreamsBuilder();
    const rekeyed = builder
      .stream("a")
      .selectKey((k) => k)
      .groupByKey({ key: Serdes.json() })
      .count(Materialized.as("x"))
      .toStream();
    // A store shared with a stream of "b" pulls "b" into the subtopology of the repartition topic.
    builder.stream("b").process(() => ({ process: () => {} }), "x");
    rekeyed.to("out");
    const topology = builder.build({ ...app, topics: { a: 2, b: 3, out: 1 } });
    expect(topology.topics()["app-x-repartition"]).toBe(3);
    expect(topology.subtopologies.map((s) => s.partitions)).toEqual([2, 3]);
  });

  it("refuses a subtopology reading a repartition topic of a chosen count and a topic of another count", () => {
    const builder = new StreamsBuilder();
    const rekeyed = builder
      .stream("a")
      .selectKey((k) => k)
      .repartition({ name: "x", numberOfPartitions: 2, key: Serdes.json() });
    rekeyed.groupByKey().count(Materialized.as("y"));
    builder.stream("b").process(() => ({ process: () => {} }), "y");
    expect(() => builder.build({ ...app, topics: { a: 2, b: 3 } })).toThrow(/app-x-repartition \(2 partitions\), b \(3 partitions\)/);
  });

  it.each([
    ["an unknown source topic", (b: StreamsBuilder) => b.stream("nope").to("out"), /unknown topic "nope"/],
    ["an unknown sink topic", (b: StreamsBuilder) => b.stream("in").to("nope"), /unknown topic "nope"/],
    [
      "a duplicate store name",
      (b: StreamsBuilder) => {
        b.stream("in").groupByKey().count(Materialized.as("dup"));
        b.addStateStore("dup");
      },
      /store name "dup" is used more than once/,
    ],
    ["a processor using an unknown store", (b: StreamsBuilder) => b.stream("in").process(() => ({ process: () => {} }), "ghost"), /store "ghost"/],
    [
      "two sources of one topic",
      (b: StreamsBuilder) => {
        b.stream("in").to("out");
        b.stream("in").to("out");
      },
      /read by both/,
    ],
    ["an illegal store name", (b: StreamsBuilder) => b.stream("in").groupByKey().count(Materialized.as("a/b")), /not a legal name/],
  ])("refuses %s", (_name, write, message) => {
    const builder = new StreamsBuilder();
    write(builder);
    expect(() => builder.build({ ...app, topics: { in: 1, out: 1 } })).toThrow(TopologyError);
    expect(() => builder.build({ ...app, topics: { in: 1, out: 1 } })).toThrow(message);
  });

  it("refuses an undeclared dead letter topic and declared internal topics", () => {
    const builder = new StreamsBuilder();
    builder.stream("in").groupByKey().count(Materialized.as("c"));
    expect(() => builder.build({ ...app, topics: { in: 1 }, onDeserializationError: { deadLetterTopic: "dlq" } })).toThrow(/dead letter topic "dlq"/);
    expect(() => builder.build({ ...app, topics: { in: 1, "app-c-changelog": 1 } })).toThrow(/internal topic/);
    expect(builder.build({ ...app, topics: { in: 1, dlq: 1 }, onDeserializationError: { deadLetterTopic: "dlq" } }).topics()).toHaveProperty("dlq", 1);
  });
});

function source(builder: StreamsBuilder) {
  return builder.stream("in", { key: Serdes.string(), value: Serdes.string() });
}
