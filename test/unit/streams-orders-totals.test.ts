import { describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import {
  createTaskProcessor,
  DeserializationError,
  InMemoryStoreBackend,
  Materialized,
  positionFromHeaders,
  Serdes,
  StreamsBuilder,
  TopologyTestDriver,
  type OutgoingRecord,
} from "../../src/streams";
import { addOrder, MAX_ORDER_AMOUNT, type Order, orderSerde, ordersTotalsTopology, type Totals } from "../../examples/orders-totals/topology";

const orders: [string, number][] = [
  ["alice", 10],
  ["bob", 5],
  ["alice", 2.5],
  ["carol", 100],
  ["bob", 7],
  ["alice", -1],
  ["dave", 3],
  ["erin", 4],
];

describe("the orders-totals example", () => {
  it("has one subtopology over orders, tasks 0_0..0_3, store totals and its changelog", () => {
    const topology = ordersTotalsTopology();
    expect(topology.taskIds()).toEqual(["0_0", "0_1", "0_2", "0_3"]);
    expect(topology.store("totals")?.changelogTopic).toBe("edge-streams-totals-changelog");
    expect(topology.topics()).toEqual({ orders: 4, totals: 4, "edge-streams-totals-changelog": 4 });
    expect(topology.describe()).toMatch(/Store: totals \(changelog: edge-streams-totals-changelog\)/);
  });

  it("folds count and sum per customer in the task owning the customer's partition", () => {
    const driver = new TopologyTestDriver(ordersTotalsTopology());
    for (const [customer, amount] of orders) driver.pipe("orders", customer, JSON.stringify({ amount }));

    const expected: Record<string, Totals> = {
      alice: { count: 3, sum: 11.5 },
      bob: { count: 2, sum: 12 },
      carol: { count: 1, sum: 100 },
      dave: { count: 1, sum: 3 },
      erin: { count: 1, sum: 4 },
    };
    for (const [customer, totals] of Object.entries(expected)) {
      const owner = `0_${partitionForKey(customer, 4)}`;
      expect(driver.store<string, Totals>(owner, "totals").get(customer)).toEqual(totals);
    }
    // The output topic carries every update, on the customer's partition.
    const aliceUpdates = driver.records("totals").filter((r) => r.key === "alice");
    expect(aliceUpdates.map((r) => JSON.parse(r.value!))).toEqual([
      { count: 1, sum: 10 },
      { count: 2, sum: 12.5 },
      { count: 3, sum: 11.5 },
    ]);
    expect(new Set(aliceUpdates.map((r) => r.partition))).toEqual(new Set([partitionForKey("alice", 4)]));
  });

  it("stamps each total with the latest time of its customer's orders, as Kafka's aggregations do", () => {
    const driver = new TopologyTestDriver(ordersTotalsTopology());
    driver.pipe("orders", "alice", JSON.stringify({ amount: 1 }), { timestamp: 100 });
    driver.pipe("orders", "alice", JSON.stringify({ amount: 2 }), { timestamp: 40 });
    driver.pipe("orders", "alice", JSON.stringify({ amount: 3 }), { timestamp: 120 });
    const updates = driver.records("totals").map((r) => [JSON.parse(r.value!), r.timestamp]);
    expect(updates).toEqual([
      [{ count: 1, sum: 1 }, 100],
      [{ count: 2, sum: 3 }, 100],
      [{ count: 3, sum: 6 }, 120],
    ]);
    expect(driver.getWithTimestamp("totals", "alice")).toEqual({ value: { count: 3, sum: 6 }, timestamp: 120 });
  });

  it("writes a changelog that is the exact history of the store writes of each task", () => {
    const driver = new TopologyTestDriver(ordersTotalsTopology());
    for (const [customer, amount] of orders) driver.pipe("orders", customer, JSON.stringify({ amount }));

    for (let partition = 0; partition < 4; partition++) {
      const changelog = driver.records("edge-streams-totals-changelog", partition);
      const inputs = driver.records("orders", partition);
      // One write per order, in input order, each naming the order it reflects.
      expect(changelog.map((r) => positionFromHeaders(r.headers)?.offset)).toEqual(inputs.map((r) => r.offset));
      expect(changelog.map((r) => r.key)).toEqual(inputs.map((r) => r.key));
      const replayed = new Map(changelog.map((r) => [r.key, r.value]));
      expect(Object.fromEntries(replayed)).toEqual(driver.backends.get(`0_${partition}`)!.contents("totals"));
    }
  });

  it("stops on an order that is not {amount: number} by default, and can skip it instead", () => {
    const record = { topic: "orders", partition: 0, offset: 0, key: "zed", value: '{"amount":"12"}', timestamp: 1, headers: [] };
    const sent: OutgoingRecord[] = [];
    const deps = () => ({ stores: new InMemoryStoreBackend(), collector: { send: (r: OutgoingRecord) => void sent.push(r) } });
    expect(() => createTaskProcessor(ordersTotalsTopology(), "0_0", deps()).process(record)).toThrow(DeserializationError);
    const skipping = createTaskProcessor(ordersTotalsTopology("skip"), "0_0", deps());
    skipping.process(record);
    expect(skipping.metrics.skippedRecords).toBe(1);
    expect(sent).toEqual([]);
  });

  it("reads orders with a schema: a finite amount within the bound, other fields dropped", () => {
    expect(orderSerde.deserialize('{"amount":2.5,"note":"x"}')).toEqual({ amount: 2.5 });
    expect(orderSerde.deserialize(`{"amount":${-MAX_ORDER_AMOUNT}}`)).toEqual({ amount: -MAX_ORDER_AMOUNT });
    for (const bad of ['{"amount":"12"}', '{"amount":1e308}', '{"amount":1e309}', "{}", "12", "null", "{oops"]) {
      expect(() => orderSerde.deserialize(bad), bad).toThrow(DeserializationError);
    }
  });

  it("refuses a sum that would not be finite, so JSON never stores it as null", () => {
    expect(addOrder("a", { amount: 1 }, { count: 1, sum: 2 })).toEqual({ count: 2, sum: 3 });
    expect(() => addOrder("a", { amount: 1e308 }, { count: 1, sum: 1e308 })).toThrow(/the sum of a's orders would overflow/);
  });

  it("sends an order whose sum would overflow to the processing handler's dead letters, the totals untouched", () => {
    // The example's serde bounds amounts; without that bound, the aggregator's own guard holds.
    const builder = new StreamsBuilder();
    builder
      .stream("orders", { key: Serdes.string(), value: Serdes.json<Order>() })
      .groupByKey()
      .aggregate<Totals>(() => ({ count: 0, sum: 0 }), addOrder, Materialized.as("totals", { value: Serdes.json<Totals>(), caching: false }));
    const dead = { deadLetterTopic: "dead" };
    const driver = new TopologyTestDriver(builder.build({ applicationId: "guard", topics: { orders: 1, dead: 1 }, onProcessingError: dead }));
    for (let i = 0; i < 2; i++) driver.pipeInput("orders", "alice", { amount: 1e308 });
    expect(driver.get("totals", "alice")).toEqual({ count: 1, sum: 1e308 });
    expect(driver.records("dead").map((r) => r.value)).toEqual(['{"amount":1e+308}']);
  });
});
