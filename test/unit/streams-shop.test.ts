/**
 * The shop example (examples/shop) through TopologyTestDriver: orders priced from the global
 * product catalog, enriched with their customer by a foreign-key join, and category revenue kept
 * by regrouping the orders table — a changed order moves its amount between categories, a
 * cancellation takes it out, a renamed customer re-enriches every order of theirs. The driver is
 * the public one (`edge-streams/testing`), as a user's test would import it.
 */
import { describe, expect, it } from "vitest";
import { TopologyTestDriver } from "edge-streams/testing";
import { shopTopology, type CategoryTotal, type EnrichedOrder, type Shipment } from "../../examples/shop/topology";

const json = (value: unknown) => JSON.stringify(value);

function shop() {
  const topology = shopTopology();
  const driver = new TopologyTestDriver(topology);
  return {
    topology,
    driver,
    product: (id: string, name: string, category: string, price: number) => driver.pipe("products", id, json({ name, category, price })),
    customer: (id: string, name: string, city: string) => driver.pipe("customers", id, json({ name, city })),
    order: (id: string, customerId: string, productId: string, quantity: number) => driver.pipe("orders", id, json({ customerId, productId, quantity })),
    cancel: (id: string) => driver.pipe("orders", id, json({ cancelled: true })),
    total: (category: string) => driver.get<string, CategoryTotal>("category-totals", category),
    enriched: (id: string) => driver.get<string, EnrichedOrder>("orders-enriched", id),
  };
}

describe("shop example", () => {
  it("has the subtopologies of its operators: customers, orders (with the global catalog), category totals", () => {
    const { topology } = shop();
    expect(topology.subtopologies.map((s) => [s.sourceTopics.filter((t) => !t.endsWith("-repartition")), s.globalSourceTopics])).toEqual([
      [["customers"], []],
      [["orders"], ["products"]],
      [[], []],
    ]);
  });

  it("creates its internal topics with Kafka Streams' configs: changelogs compacted, repartition topics purged, the global table's topic compacted", () => {
    const specs = shop().topology.topicSpecs();
    const policy = (topic: string) => [specs[topic]!.config["cleanup.policy"], specs[topic]!.config["purge.on.commit"]];
    const internal = Object.keys(specs).filter((t) => t.startsWith("shop-"));
    const repartitions = internal.filter((t) => t.endsWith("-repartition"));
    // The foreign-key join's subscription and response topics, and the regrouping by category.
    for (const suffix of ["-subscription-registration-repartition", "-subscription-response-repartition", "-orders-by-category-repartition"]) {
      expect(
        repartitions.some((t) => t.endsWith(suffix)),
        suffix,
      ).toBe(true);
    }
    for (const topic of repartitions) expect(policy(topic), topic).toEqual(["delete", true]);
    for (const topic of internal.filter((t) => t.endsWith("-changelog"))) expect(policy(topic), topic).toEqual(["compact", false]);
    expect(internal.filter((t) => !t.endsWith("-changelog") && !t.endsWith("-repartition"))).toEqual([]);
    expect(policy("products")).toEqual(["compact", false]);
    expect(policy("orders")).toEqual(["delete", false]);
    expect(specs.orders!.config["retention.ms"]).toBe(7 * 24 * 60 * 60 * 1000);
  });

  it("prices, enriches and totals orders, and moves amounts when orders change or are cancelled", () => {
    const s = shop();
    s.product("tea", "Green tea", "drinks", 450);
    s.product("cake", "Lemon cake", "bakery", 300);
    s.customer("c1", "Ada", "Paris");
    s.customer("c2", "Bob", "Rome");
    s.order("o1", "c1", "tea", 2);
    s.order("o2", "c2", "cake", 1);
    s.order("o3", "c1", "cake", 3);
    expect(s.total("drinks")).toEqual({ orders: 1, revenue: 900 });
    expect(s.total("bakery")).toEqual({ orders: 2, revenue: 1200 });
    expect(s.enriched("o1")).toMatchObject({ customer: "Ada", city: "Paris", amount: 900, category: "drinks" });

    // o3 changes product: its amount leaves bakery and joins drinks.
    s.order("o3", "c1", "tea", 1);
    expect(s.total("bakery")).toEqual({ orders: 1, revenue: 300 });
    expect(s.total("drinks")).toEqual({ orders: 2, revenue: 1350 });
    // o2 is cancelled: out of bakery, and its enriched row is deleted.
    s.cancel("o2");
    expect(s.total("bakery")).toEqual({ orders: 0, revenue: 0 });
    expect(s.enriched("o2")).toBeUndefined();
    // Ada moves: both her orders are enriched again.
    s.customer("c1", "Ada", "Lyon");
    expect(s.enriched("o1")).toMatchObject({ city: "Lyon" });
    expect(s.enriched("o3")).toMatchObject({ city: "Lyon" });
    const enrichedOutput = s.driver.records("orders-enriched").map((r) => [r.key, r.value === null ? null : (JSON.parse(r.value) as EnrichedOrder).city]);
    expect(enrichedOutput.filter(([key]) => key === "o2")).toEqual([
      ["o2", "Rome"],
      ["o2", null],
    ]);
  });

  it("ships each order to the customer's city as of the order's time, after waiting for late address changes", () => {
    const { driver } = shop();
    const at = (topic: string, key: string, value: unknown, timestamp: number) => driver.pipe(topic, key, json(value), { timestamp });
    const shipments = () => driver.records("shipments").map((r) => (JSON.parse(r.value!) as Shipment).orderId + "@" + (JSON.parse(r.value!) as Shipment).city);
    at("customers", "c1", { name: "Ada", city: "Paris" }, 1_000);
    at("orders", "o1", { customerId: "c1", productId: "tea", quantity: 1 }, 2_000);
    // Ada moves after o1 was placed; o1 still waits (grace) and is shipped to Paris.
    at("customers", "c1", { name: "Ada", city: "Lyon" }, 5_000);
    expect(shipments()).toEqual([]);
    at("orders", "o2", { customerId: "c1", productId: "tea", quantity: 1 }, 13_000);
    expect(shipments()).toEqual(["o1@Paris"]);
    // An order older than the grace period joins at once, as of its own time.
    at("orders", "o3", { customerId: "c1", productId: "tea", quantity: 1 }, 1_500);
    expect(shipments()).toEqual(["o1@Paris", "o3@Paris"]);
    // A cancellation ships nothing; o2 leaves once stream time is 10 s past it.
    at("orders", "o1", { cancelled: true }, 20_000);
    at("orders", "o4", { customerId: "c1", productId: "tea", quantity: 1 }, 30_000);
    expect(shipments()).toEqual(["o1@Paris", "o3@Paris", "o2@Lyon"]);
    // The customers store answers with the latest row.
    expect(driver.get("customers", "c1")).toEqual({ name: "Ada", city: "Lyon" });
  });
});
