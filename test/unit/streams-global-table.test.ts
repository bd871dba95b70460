/**
 * GlobalKTable on the task runtime: every task that joins it holds the whole table (reading every
 * partition of its topic), in a change-logged store of its own, restored with the global topic's
 * positions its changelog records carry; global updates move no stream time; a global table used
 * by two subtopologies has a changelog per copy; one joined by nobody is refused.
 */
import { describe, expect, it } from "vitest";
import { Serdes, StreamsBuilder, TopologyError, TopologyTestDriver } from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };

function enrichment(topics = { orders: 3, products: 2, enriched: 1 }) {
  const builder = new StreamsBuilder();
  const products = builder.globalTable("products", str);
  builder
    .stream("orders", str)
    .join(
      products,
      (_id, productId) => productId,
      (productId, name) => `${productId}:${name}`,
    )
    .to("enriched", str);
  return builder.build({ applicationId: "global", topics });
}

describe("GlobalKTable", () => {
  it("gives every task the whole table, whatever partition each row and order is on", () => {
    const topology = enrichment();
    expect(topology.subtopologies[0]!.stores).toEqual([
      expect.objectContaining({
        name: expect.stringMatching(/^products-STATE-STORE-/),
        global: true,
        changelogTopic: expect.stringMatching(/^global-products-STATE-STORE-\d+-changelog$/),
      }),
    ]);
    const driver = new TopologyTestDriver(topology);
    driver.pipe("products", "p1", "tea", { partition: 0 });
    driver.pipe("products", "p2", "cake", { partition: 1 });
    driver.pipe("products", "p3", "jam", { partition: 1 });
    // The rows landed on both partitions of products; every task (3) holds all three.
    expect(new Set(driver.records("products").map((r) => r.partition)).size).toBe(2);
    const store = topology.subtopologies[0]!.stores[0]!.name;
    for (const taskId of topology.taskIds())
      expect(
        driver
          .store(taskId, store)
          .all()
          .map((e) => e.key)
          .sort(),
      ).toEqual(["p1", "p2", "p3"]);
    for (const [order, product] of [
      ["o1", "p1"],
      ["o2", "p2"],
      ["o3", "p3"],
      ["o4", "p9"],
    ])
      driver.pipe("orders", order!, product!);
    expect(
      driver
        .records("enriched")
        .map((r) => [r.key, r.value])
        .sort(),
    ).toEqual([
      ["o1", "p1:tea"],
      ["o2", "p2:cake"],
      ["o3", "p3:jam"],
    ]);
  });

  it("does not move a task's stream time", () => {
    const driver = new TopologyTestDriver(enrichment());
    driver.pipe("products", "p1", "tea", { timestamp: 1_000_000 });
    for (const task of driver.tasks.values()) expect(task.streamTimeMs).toBe(-1);
  });

  it("restores each task's copy from its changelog, positions included: nothing is read twice", () => {
    const topology = enrichment({ orders: 1, products: 2, enriched: 1 });
    const driver = new TopologyTestDriver(topology);
    driver.pipe("products", "p1", "tea");
    driver.pipe("products", "p2", "cake");
    driver.pipe("products", "p1", null);
    const store = topology.subtopologies[0]!.stores[0]!.name;
    const restored = driver.restoreTask("0_0");
    expect(restored.contents(store)).toEqual({ p2: "cake" });
    driver.pipe("orders", "o1", "p2");
    driver.pipe("orders", "o2", "p1");
    expect(driver.records("enriched").map((r) => r.value)).toEqual(["p2:cake"]);
  });

  it("keeps a copy per subtopology that joins it, each with its own changelog", () => {
    const builder = new StreamsBuilder();
    const products = builder.globalTable("products", str);
    builder
      .stream("a", str)
      .join(
        products,
        (_k, v) => v,
        (v, name) => `${v}:${name}`,
      )
      .to("out", str);
    builder
      .stream("b", str)
      .join(
        products,
        (_k, v) => v,
        (v, name) => `${v}:${name}`,
      )
      .to("out", str);
    const topology = builder.build({ applicationId: "two", topics: { a: 2, b: 3, products: 1, out: 1 } });
    expect(topology.subtopologies.map((s) => s.partitions)).toEqual([2, 3]);
    const changelogs = topology.subtopologies.map((s) => s.stores[0]!.changelogTopic);
    expect(changelogs[0]).not.toBe(changelogs[1]);
    expect(topology.topics()[changelogs[0]!]).toBe(2);
    expect(topology.topics()[changelogs[1]!]).toBe(3);
  });

  it("is refused when no stream joins it", () => {
    const builder = new StreamsBuilder();
    builder.globalTable("products", str);
    builder.stream("orders", str).to("out", str);
    expect(() => builder.build({ applicationId: "x", topics: { products: 1, orders: 1, out: 1 } })).toThrow(TopologyError);
  });
});
