/**
 * A key-changing operation followed by a grouping, repartition or join that gets no key serde is
 * refused when the topology is built (Kafka 4.0: no default key serde configured is a config
 * error), with a `TopologyError` naming the fix — never a silent JSON key (`NL` becoming `"NL"`).
 * A serde given by `Grouped`, `Repartitioned`, `Joined`, the aggregation's `Materialized` or
 * `BuildOptions.defaultKeySerde` is used, and the keys stay what that serde writes.
 */
import { describe, expect, it } from "vitest";
import { JoinWindows, Materialized, Serdes, StreamsBuilder, TimeWindows, TopologyError, TopologyTestDriver, type KStream } from "../../src/streams";

const str = Serdes.string();
const topics = { applicationId: "app", topics: { orders: 2, customers: 2, payments: 2, out: 2 } };

/** Orders keyed by order id, with the customer's country in the value. */
function orders(builder: StreamsBuilder): KStream<string, { country: string; amount: number }> {
  return builder.stream("orders", { key: str, value: Serdes.json<{ country: string; amount: number }>() });
}

function refusal(write: (builder: StreamsBuilder) => void): TopologyError {
  const builder = new StreamsBuilder();
  write(builder);
  try {
    builder.build(topics);
  } catch (error) {
    if (error instanceof TopologyError) return error;
    throw error;
  }
  throw new Error("the topology was built");
}

describe("a grouping after a key change needs a key serde", () => {
  it.each([
    [
      "selectKey + groupByKey()",
      (b: StreamsBuilder) =>
        orders(b)
          .selectKey((_id, order) => order.country)
          .groupByKey()
          .count(),
      /groupByKey\(\) after KSTREAM-KEY-SELECT-\d+ needs a key serde.*groupByKey\(\{ key: Serdes\.string\(\) \}\)/,
    ],
    [
      "groupBy(selector)",
      (b: StreamsBuilder) =>
        orders(b)
          .groupBy((_id, order) => order.country)
          .count(),
      /groupBy\(selector, \{ key: Serdes\.string\(\) \}\)/,
    ],
    [
      "map + windowed aggregation",
      (b: StreamsBuilder) =>
        orders(b)
          .map((_id, order) => ({ key: order.country, value: order.amount }))
          .groupByKey()
          .windowedBy(TimeWindows.ofSizeWithNoGrace(1000))
          .count(),
      /groupByKey\(\) after KSTREAM-MAP-\d+/,
    ],
    [
      "flatMap + repartition()",
      (b: StreamsBuilder) =>
        orders(b)
          .flatMap((_id, order) => [{ key: order.country, value: order }])
          .repartition()
          .to("out"),
      /repartition\(\) after KSTREAM-FLATMAP-\d+.*repartition\(\{ key: Serdes\.string\(\) \}\)/,
    ],
    [
      "process + toTable()",
      (b: StreamsBuilder) =>
        orders(b)
          .process<string, number>(() => ({ process: () => {} }))
          .toTable(),
      /toTable\(\) after KSTREAM-PROCESSOR-\d+/,
    ],
    [
      "a stream-stream join of two re-keyed streams",
      (b: StreamsBuilder) =>
        orders(b)
          .selectKey((_id, order) => order.country)
          .join(
            b.stream("payments", { key: str, value: str }).selectKey((_id, country) => country),
            (order, payment) => ({ order, payment }),
            JoinWindows.ofTimeDifferenceWithNoGrace(1000),
          )
          .to("out"),
      /join\(\) after KSTREAM-KEY-SELECT-\d+.*join\(other, joiner, windows, \{ key: Serdes\.string\(\) \}\)/,
    ],
    [
      "KTable.groupBy",
      (b: StreamsBuilder) =>
        b
          .table("customers", { key: str, value: Serdes.json<{ country: string }>() })
          .groupBy((_id, customer) => ({ key: customer.country, value: 1 }))
          .count(),
      /KTable groupBy\(\) after KTABLE-SOURCE-\d+.*groupBy\(selector, \{ key: Serdes\.string\(\) \}\)/,
    ],
  ])("%s is refused at build time, naming the fix", (_name, write, message) => {
    const error = refusal(write);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/or set defaultKeySerde in build\(\)/);
  });

  it("takes the serde from Grouped, the aggregation's Materialized, or the topology's default", () => {
    const byCountry = (b: StreamsBuilder) => orders(b).selectKey((_id, order) => order.country);
    const grouped = new StreamsBuilder();
    byCountry(grouped).groupByKey({ key: str }).count(Materialized.as("n"));
    expect(grouped.build(topics).store("n")!.keySerde).toBe(str);

    const materialized = new StreamsBuilder();
    byCountry(materialized)
      .groupByKey()
      .count(Materialized.as("n", { key: str }));
    expect(materialized.build(topics).store("n")!.keySerde).toBe(str);

    const table = new StreamsBuilder();
    table
      .table("customers", { key: str, value: Serdes.json<{ country: string }>() })
      .groupBy((_id, customer) => ({ key: customer.country, value: 1 }))
      .count(Materialized.as("per-country", { key: str }));
    expect(() => table.build(topics)).not.toThrow();

    const defaulted = new StreamsBuilder();
    byCountry(defaulted).groupByKey().count(Materialized.as("n"));
    const topology = defaulted.build({ ...topics, defaultKeySerde: str });
    const driver = new TopologyTestDriver(topology);
    driver.pipeInput("orders", "o1", { country: "NL", amount: 3 });
    expect(driver.records("app-n-repartition").map((r) => r.key)).toEqual(["NL"]);
    expect(driver.get("n", "NL")).toBe(1);
  });

  it('keeps a string key a string through the repartition topic and the store (NL, not "NL")', () => {
    const builder = new StreamsBuilder();
    orders(builder)
      .groupBy((_id, order) => order.country, { key: str })
      .count(Materialized.as("orders-per-country"))
      .toStream()
      .to("out", { key: str });
    const driver = new TopologyTestDriver(builder.build(topics));
    driver.pipeInput("orders", "o1", { country: "NL", amount: 3 });
    driver.pipeInput("orders", "o2", { country: "NL", amount: 4 });
    expect(driver.records("app-orders-per-country-repartition").map((r) => r.key)).toEqual(["NL", "NL"]);
    expect(driver.records("app-orders-per-country-changelog").map((r) => r.key)).toEqual(["NL", "NL"]);
    expect(driver.records("out").map((r) => [r.key, r.value])).toEqual([
      ["NL", "1"],
      ["NL", "2"],
    ]);
  });

  it("repartitions a re-keyed stream joined with a table with the table's key serde", () => {
    const builder = new StreamsBuilder();
    const customers = builder.table("customers", { key: str, value: Serdes.json<{ name: string }>() }, Materialized.as("customers"));
    builder
      .stream("payments", { key: str, value: str })
      .selectKey((_id, customer) => customer)
      .join(customers, (customer, row) => `${customer}:${row.name}`)
      .to("out", { key: str, value: str });
    const driver = new TopologyTestDriver(builder.build(topics));
    driver.pipeInput("customers", "c1", { name: "Ada" });
    driver.pipeInput("payments", "p1", "c1");
    const repartition = Object.keys(builder.build(topics).topics()).find((t) => t.endsWith("-repartition"))!;
    expect(driver.records(repartition).map((r) => r.key)).toEqual(["c1"]);
    expect(driver.records("out").map((r) => [r.key, r.value])).toEqual([["c1", "c1:Ada"]]);
  });

  it("lets streams keep a key serde they know: merged default sources, mapValues, a grouping without key change", () => {
    const merged = new StreamsBuilder();
    merged.stream("orders").merge(merged.stream("payments")).groupByKey().count(Materialized.as("a"));
    expect(() => merged.build(topics)).not.toThrow();
    const builder = new StreamsBuilder();
    orders(builder)
      .mapValues((order) => order.amount)
      .groupByKey()
      .count(Materialized.as("b"));
    expect(() => builder.build(topics)).not.toThrow();
  });
});
