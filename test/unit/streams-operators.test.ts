import { describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import {
  createTaskProcessor,
  InMemoryStoreBackend,
  Materialized,
  Serdes,
  StreamsBuilder,
  TopologyTestDriver,
  type KStream,
  type OutgoingRecord,
} from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };

/** Runs `in` → operators → `out` on one partition and returns the output records as [key, value]. */
function run<K, V>(write: (input: KStream<string, string>) => KStream<K, V>, inputs: [string | null, string][]) {
  const builder = new StreamsBuilder();
  write(builder.stream("in", str)).to("out");
  const driver = new TopologyTestDriver(builder.build({ applicationId: "ops", topics: { in: 1, out: 1 } }));
  for (const [key, value] of inputs) driver.pipe("in", key, value);
  return driver.records("out").map((r) => [r.key, r.value]);
}

describe("stateless operators", () => {
  const inputs: [string, string][] = [
    ["a", "apple"],
    ["b", "banana"],
    ["c", "cherry"],
  ];

  it("filter keeps and filterNot drops the records matching the predicate", () => {
    expect(run((s) => s.filter((_k, v) => v.includes("an")), inputs)).toEqual([["b", "banana"]]);
    expect(run((s) => s.filterNot((_k, v) => v.includes("an")), inputs)).toEqual([
      ["a", "apple"],
      ["c", "cherry"],
    ]);
  });

  it("map replaces key and value; mapValues replaces the value and keeps the key serde", () => {
    expect(run((s) => s.map((k, v) => ({ key: v.length, value: k })), inputs.slice(0, 1))).toEqual([["5", '"a"']]);
    expect(run((s) => s.mapValues((v, k) => ({ k, n: v.length })), inputs.slice(0, 1))).toEqual([["a", '{"k":"a","n":5}']]);
  });

  it("flatMap and flatMapValues emit zero or more records per input", () => {
    expect(run((s) => s.flatMap((k, v) => [...v].slice(0, 2).map((ch) => ({ key: ch, value: k }))), inputs.slice(0, 2))).toEqual([
      ['"a"', '"a"'],
      ['"p"', '"a"'],
      ['"b"', '"b"'],
      ['"a"', '"b"'],
    ]);
    expect(run((s) => s.flatMapValues((v) => (v.startsWith("b") ? [] : [v, v.toUpperCase()])), inputs.slice(0, 2))).toEqual([
      ["a", '"apple"'],
      ["a", '"APPLE"'],
    ]);
  });

  it("selectKey replaces the key only; peek sees every record and passes it on", () => {
    const seen: string[] = [];
    expect(run((s) => s.peek((k) => seen.push(k)).selectKey((_k, v) => v.charAt(0)), inputs.slice(0, 2))).toEqual([
      ['"a"', "apple"],
      ['"b"', "banana"],
    ]);
    expect(seen).toEqual(["a", "b"]);
  });

  it("keeps timestamps and headers of the input record", () => {
    const builder = new StreamsBuilder();
    builder
      .stream("in", str)
      .mapValues((v) => v.length)
      .to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "ops", topics: { in: 1, out: 1 } }));
    driver.pipe("in", "k", "four", { timestamp: 1234, headers: [{ key: "trace", value: "t1" }] });
    expect(driver.records("out")).toMatchObject([{ key: "k", value: "4", timestamp: 1234, headers: [{ key: "trace", value: "t1" }] }]);
  });

  it("split routes each record to the first matching branch, else the default branch", () => {
    const builder = new StreamsBuilder();
    const branches = builder
      .stream("in", { key: Serdes.string(), value: Serdes.number() })
      .split("amount-")
      .branch((_k, v) => v >= 100, "big")
      .branch((_k, v) => v >= 10)
      .defaultBranch("small");
    branches["amount-big"].to("big");
    branches["amount-2"]!.to("medium");
    branches["amount-small"].to("small");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "ops", topics: { in: 1, big: 1, medium: 1, small: 1 } }));
    for (const [key, value] of [
      ["x", "500"],
      ["y", "50"],
      ["z", "5"],
      ["w", "100"],
    ] as const)
      driver.pipe("in", key, value);
    expect(driver.records("big").map((r) => r.key)).toEqual(["x", "w"]);
    expect(driver.records("medium").map((r) => r.key)).toEqual(["y"]);
    expect(driver.records("small").map((r) => r.key)).toEqual(["z"]);
  });

  it("split without a default branch drops the records no branch takes", () => {
    const builder = new StreamsBuilder();
    const { even } = builder
      .stream("in", { key: Serdes.string(), value: Serdes.number() })
      .split()
      .branch((_k, v) => v % 2 === 0, "even")
      .noDefaultBranch();
    even.to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "ops", topics: { in: 1, out: 1 } }));
    for (const value of ["1", "2", "3", "4"]) driver.pipe("in", "k", value);
    expect(driver.records("out").map((r) => r.value)).toEqual(["2", "4"]);
  });

  it("merge interleaves two streams as their records arrive", () => {
    const builder = new StreamsBuilder();
    builder.stream("left", str).merge(builder.stream("right", str)).to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "ops", topics: { left: 1, right: 1, out: 1 } }));
    driver.pipe("left", "l", "1");
    driver.pipe("right", "r", "2");
    driver.pipe("left", "l", "3");
    expect(driver.records("out").map((r) => r.value)).toEqual(["1", "2", "3"]);
  });
});

describe("sinks", () => {
  function sent(write: (builder: StreamsBuilder) => void): OutgoingRecord[] {
    const builder = new StreamsBuilder();
    write(builder);
    const records: OutgoingRecord[] = [];
    const topology = builder.build({ applicationId: "ops", topics: { in: 1, out: 3 } });
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: { send: (r) => records.push(r) } });
    task.process({ topic: "in", partition: 0, offset: 0, key: "k", value: "v", timestamp: 7, headers: [] });
    return records;
  }

  it("leave the partition to the collector without a partitioner", () => {
    expect(sent((b) => b.stream("in", str).to("out"))).toEqual([{ topic: "out", partition: undefined, key: "k", value: "v", timestamp: 7, headers: [] }]);
  });

  it("use the partitioner and the serdes given to to()", () => {
    const records = sent((b) =>
      b.stream("in", str).to("out", {
        key: Serdes.json<string>(),
        value: Serdes.from(
          (v: string) => v.toUpperCase(),
          (t) => t,
        ),
        partitioner: (_k, _v, n) => n - 1,
      }),
    );
    expect(records).toMatchObject([{ topic: "out", partition: 2, key: '"k"', value: "V" }]);
  });

  it("refuse a partition the topic does not have", () => {
    expect(() => sent((b) => b.stream("in", str).to("out", { partitioner: () => 3 }))).toThrow(/partition 3/);
  });
});

describe("aggregations", () => {
  it("count, reduce and aggregate fold each key into their store and forward every update", () => {
    const builder = new StreamsBuilder();
    const grouped = builder.stream("in", { key: Serdes.string(), value: Serdes.number() }).groupByKey();
    grouped.count(Materialized.as("count")).toStream().to("counts");
    grouped
      .reduce((a, b) => Math.max(a, b), Materialized.as("max"))
      .toStream()
      .to("maxima");
    grouped.aggregate(
      () => [] as number[],
      (_k, v, list) => [...list, v],
      Materialized.as("all"),
    );
    const driver = new TopologyTestDriver(builder.build({ applicationId: "agg", topics: { in: 1, counts: 1, maxima: 1 } }));
    for (const [key, value] of [
      ["a", "3"],
      ["b", "1"],
      ["a", "7"],
      ["a", "5"],
    ] as const)
      driver.pipe("in", key, value);

    expect(driver.get("count", "a")).toBe(3);
    expect(driver.get("max", "a")).toBe(7);
    expect(driver.get("all", "a")).toEqual([3, 7, 5]);
    expect(driver.get("all", "b")).toEqual([1]);
    expect(driver.records("counts").map((r) => [r.key, r.value])).toEqual([
      ["a", "1"],
      ["b", "1"],
      ["a", "2"],
      ["a", "3"],
    ]);
    expect(driver.records("maxima").map((r) => r.value)).toEqual(["3", "1", "7", "7"]);
  });

  it("drops records with a null key instead of aggregating them, and counts them", () => {
    const builder = new StreamsBuilder();
    builder.stream("in", str).groupByKey().count(Materialized.as("count"));
    const driver = new TopologyTestDriver(builder.build({ applicationId: "agg", topics: { in: 1 } }));
    driver.pipe("in", null, "x");
    driver.pipe("in", "k", "y");
    expect(driver.backends.get("0_0")!.contents("count")).toEqual({ k: "1" });
    expect(driver.tasks.get("0_0")!.metrics).toMatchObject({ processedRecords: 2, droppedRecords: 1 });
  });

  it("groupBy sends records through the repartition topic to the task owning the new key", () => {
    const builder = new StreamsBuilder();
    builder
      .stream<string, { city: string }>("visits", { key: Serdes.string() })
      .groupBy((_user, visit) => visit.city, { key: Serdes.string() })
      .count(Materialized.as("per-city"));
    const driver = new TopologyTestDriver(builder.build({ applicationId: "geo", topics: { visits: 4 } }));
    const visits = [
      ["u1", "paris"],
      ["u2", "oslo"],
      ["u3", "paris"],
      ["u4", "lima"],
      ["u5", "paris"],
      ["u6", "oslo"],
    ];
    for (const [user, city] of visits) driver.pipe("visits", user!, JSON.stringify({ city }));

    const repartitioned = driver.records("geo-per-city-repartition");
    expect(repartitioned).toHaveLength(visits.length);
    for (const record of repartitioned) expect(record.partition).toBe(partitionForKey(record.key!, 4));
    for (const [city, count] of [
      ["paris", 3],
      ["oslo", 2],
      ["lima", 1],
    ] as const) {
      const owner = `1_${partitionForKey(city, 4)}`;
      expect(driver.store<string, number>(owner, "per-city").get(city)).toBe(count);
      for (const taskId of ["1_0", "1_1", "1_2", "1_3"].filter((t) => t !== owner)) expect(driver.store(taskId, "per-city").get(city)).toBeUndefined();
    }
  });
});

describe("tables", () => {
  it("materializes a topic as a table and derives tables with mapValues and filter (tombstones for rows that leave it)", () => {
    const builder = new StreamsBuilder();
    const prices = builder.table("prices", { key: Serdes.string(), value: Serdes.number() }, Materialized.as("prices"));
    prices
      .mapValues((cents) => cents / 100)
      .filter((_k, euros) => euros >= 1)
      .toStream()
      .to("expensive");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "tbl", topics: { prices: 1, expensive: 1 } }));
    driver.pipe("prices", "tea", "250");
    driver.pipe("prices", "gum", "50");
    driver.pipe("prices", "tea", "90");

    expect(driver.backends.get("0_0")!.contents("prices")).toEqual({ gum: "50", tea: "90" });
    // gum was never in the filtered table: no tombstone (the filter has old values, as in Kafka); tea leaves it.
    expect(driver.records("expensive").map((r) => [r.key, r.value])).toEqual([
      ["tea", "2.5"],
      ["tea", null],
    ]);
    expect(driver.records("tbl-prices-changelog").map((r) => [r.key, r.value])).toEqual([
      ["tea", "250"],
      ["gum", "50"],
      ["tea", "90"],
    ]);
  });
});
