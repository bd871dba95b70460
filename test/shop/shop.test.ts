/**
 * The third example application (examples/shop) on the real runtime: orders priced from a global
 * product catalog, enriched with their customer by a foreign-key join, and category revenue kept by
 * KTable.groupBy with a subtractor. Every task is wiped and restored through the restore worker,
 * and tasks are crashed mid-commit; the outputs and changelogs must hold every update exactly once
 * and the stores their exact values.
 *
 * Inputs go in phases, each run to quiescence: within a phase no two events touch the same output
 * key, so each key's history is deterministic even though four partitions run concurrently.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { application } from "../../examples/shop/app";
import { DASHBOARD_INTERVAL_MS, SHIPMENT_GRACE_MS, type Shipment } from "../../examples/shop/topology";
import { partitionForKey } from "../../src/log/partitioner";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";

const driver = new TestDriver(env, application);

const product = (id: string, name: string, category: string, price: number) => ({ key: id, value: { name, category, price } });
const customer = (id: string, name: string, city: string) => ({ key: id, value: { name, city } });
const order = (id: string, customerId: string, productId: string, quantity: number) => ({ key: id, value: { customerId, productId, quantity } });
const cancel = (id: string) => ({ key: id, value: { cancelled: true } });

async function valueAt(store: string, key: string): Promise<unknown> {
  const response = await call(`/stores/${store}/keys/${key}`);
  expect(response.status, `${store}/${key}`).toBe(200);
  return (await json<{ value: unknown }>(response)).value;
}

/** Every value a topic holds for a key, in order (null for a tombstone: the log marks it with a header). */
async function historyOf(topic: string, key: string): Promise<unknown[]> {
  const records = (await driver.read(topic)).filter((r) => r.key === key);
  return records.map((r) => (r.headers.some((h) => h.key === TOMBSTONE_HEADER) ? null : JSON.parse(r.value)));
}

async function activeTask(taskId: string) {
  const instance = (await driver.instances()).find((i) => i.taskId === taskId && i.role === "active");
  expect(instance, taskId).toBeDefined();
  return driver.task(instance!);
}

/** The product catalog as one task of the orders subtopology holds it (its own whole copy). */
async function catalogOf(taskId: string): Promise<Record<string, unknown>> {
  const task = await activeTask(taskId);
  const catalog: Record<string, unknown> = {};
  for (const id of ["tea", "cake", "coffee"]) {
    const answer = await task.query("products", id);
    expect(answer.status, taskId).toBe("ok");
    if (answer.status === "ok" && answer.value !== undefined) catalog[id] = JSON.parse(answer.value);
  }
  return catalog;
}

const CATALOG = {
  tea: { name: "Green tea", category: "drinks", price: 450 },
  cake: { name: "Lemon cake", category: "bakery", price: 300 },
  coffee: { name: "Espresso", category: "drinks", price: 300 },
};

/** The task of a subtopology that owns a key (every input topic of the shop has four partitions). */
const taskOf = (subtopology: number, key: string) => `${subtopology}_${partitionForKey(key, 4)}`;

const enriched = (customerName: string, city: string, customerId: string, productId: string, quantity: number, category: string, amount: number) => ({
  customer: customerName,
  city,
  customerId,
  productId,
  quantity,
  category,
  amount,
});

describe("shop example on the real runtime", () => {
  it("has the topology it documents: a global catalog joined by the orders subtopology", () => {
    expect(application.applicationId).toBe("shop");
    const subtopologies = application.topology.subtopologies;
    expect(subtopologies.map((s) => s.globalSourceTopics)).toEqual([[], ["products"], []]);
    // The foreign-key join's subscription and response topics and the regrouping are internal.
    for (const suffix of ["-subscription-registration-repartition", "-subscription-response-repartition", "-orders-by-category-repartition"]) {
      expect(
        [...application.internalTopics].some((t) => t.endsWith(suffix)),
        suffix,
      ).toBe(true);
    }
  });

  it("prices, enriches and totals orders exactly once through a wipe of every task and crashes mid-commit", async () => {
    await driver.pipe(
      "products",
      Object.entries(CATALOG).map(([id, p]) => product(id, p.name, p.category, p.price)),
    );
    await driver.pipe("customers", [customer("c1", "Ada", "Paris"), customer("c2", "Bob", "Rome")]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [order("o1", "c1", "tea", 2), order("o2", "c2", "cake", 1)]);
    await driver.runUntilQuiet();
    expect(await valueAt("category-totals", "drinks")).toEqual({ orders: 1, revenue: 900 });
    expect(await valueAt("category-totals", "bakery")).toEqual({ orders: 1, revenue: 300 });
    expect(await valueAt("orders-enriched", "o1")).toEqual(enriched("Ada", "Paris", "c1", "tea", 2, "drinks", 900));

    // The global catalog is whole in every task of the orders subtopology; a scan lists it once.
    for (let partition = 0; partition < 4; partition++) expect(await catalogOf(`1_${partition}`)).toEqual(CATALOG);
    const scan = await json<{ items: { key: string; value: unknown }[] }>(await call("/stores/products/keys"));
    expect(scan.items.map((i) => i.key)).toEqual(["cake", "coffee", "tea"]);
    expect(scan.items.map((i) => i.value)).toEqual([CATALOG.cake, CATALOG.coffee, CATALOG.tea]);
    expect(await valueAt("products", "coffee")).toEqual(CATALOG.coffee);

    // Every active task is wiped while restoration is held: queries answer 503 until it is restored.
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    // A task whose changelogs are all empty has nothing to restore and runs again at once.
    for (const instance of (await driver.instances()).filter((i) => i.role === "active")) {
      expect((await driver.task(instance).corrupt()).incarnation, instance.taskId).toBeGreaterThan(0);
    }
    for (const path of ["/stores/category-totals/keys/drinks", "/stores/products/keys/tea", "/stores/orders-enriched/keys/o1", "/stores/customers/keys/c1"]) {
      expect((await call(path)).status, path).toBe(503);
    }
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    expect(await valueAt("category-totals", "drinks")).toEqual({ orders: 1, revenue: 900 });
    expect(await valueAt("category-totals", "bakery")).toEqual({ orders: 1, revenue: 300 });
    expect(await valueAt("orders", "o2")).toEqual({ customerId: "c2", productId: "cake", quantity: 1, category: "bakery", amount: 300 });
    expect(await valueAt("orders-enriched", "o2")).toEqual(enriched("Bob", "Rome", "c2", "cake", 1, "bakery", 300));
    expect(await valueAt("customers", "c1")).toEqual({ name: "Ada", city: "Paris" });
    for (let partition = 0; partition < 4; partition++) expect(await catalogOf(`1_${partition}`)).toEqual(CATALOG);

    // The restored stores carry on: o2 moves from bakery to drinks (the old amount is subtracted from
    // the old category), then o1 is cancelled and Bob moves.
    await driver.pipe("orders", [order("o2", "c2", "tea", 1)]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [cancel("o1")]);
    await driver.pipe("customers", [customer("c2", "Bob", "Milan")]);
    await driver.runUntilQuiet();
    expect(await valueAt("orders-enriched", "o2")).toEqual(enriched("Bob", "Milan", "c2", "tea", 1, "drinks", 450));
    expect((await call("/stores/orders-enriched/keys/o1")).status).toBe(404);

    // A crash mid-send of the task pricing o3, then a crash after the commit of the task totalling drinks.
    const pricing = await activeTask(taskOf(1, "o3"));
    await pricing.crash("mid-send");
    await driver.pipe("orders", [order("o3", "c1", "coffee", 2)]);
    await expect(pricing.drain()).rejects.toThrow();
    await driver.runUntilQuiet();
    const totalling = await activeTask(taskOf(2, "drinks"));
    await totalling.crash("after-commit");
    await driver.pipe("orders", [order("o4", "c2", "coffee", 1)]);
    // The order reaches the totalling task through two others: run those first, then its commit dies.
    await (await activeTask(taskOf(1, "o4"))).drain();
    await expect(totalling.drain()).rejects.toThrow();
    await driver.runUntilQuiet();

    const drinks = [
      { orders: 1, revenue: 900 },
      { orders: 2, revenue: 1350 },
      { orders: 1, revenue: 450 },
      { orders: 2, revenue: 1050 },
      { orders: 3, revenue: 1350 },
    ];
    expect(await valueAt("category-totals", "drinks")).toEqual(drinks.at(-1));
    expect(await historyOf("category-totals", "drinks")).toEqual(drinks);
    expect(await historyOf("shop-category-totals-changelog", "drinks")).toEqual(drinks);
    expect(await historyOf("category-totals", "bakery")).toEqual([
      { orders: 1, revenue: 300 },
      { orders: 0, revenue: 0 },
    ]);
    expect(await historyOf("orders-enriched", "o1")).toEqual([enriched("Ada", "Paris", "c1", "tea", 2, "drinks", 900), null]);
    expect(await historyOf("orders-enriched", "o2")).toEqual([
      enriched("Bob", "Rome", "c2", "cake", 1, "bakery", 300),
      enriched("Bob", "Rome", "c2", "tea", 1, "drinks", 450),
      enriched("Bob", "Milan", "c2", "tea", 1, "drinks", 450),
    ]);
    expect(await historyOf("orders-enriched", "o3")).toEqual([enriched("Ada", "Paris", "c1", "coffee", 2, "drinks", 600)]);
    expect(await historyOf("orders-enriched", "o4")).toEqual([enriched("Bob", "Milan", "c2", "coffee", 1, "drinks", 300)]);
  });

  it("shows a category on the dashboard once a minute of stream time after its first change, with the latest total, through a wipe of its buffer", async () => {
    // Ahead of every wall-clock timestamp the other tests' records carry.
    const t0 = Date.now() + 3_600_000;
    const booksTask = taskOf(2, "books");
    await driver.pipe("products", [product("book", "Field guide", "books", 1000)]);
    await driver.pipe("customers", [customer("c3", "Cy", "Oslo")]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [{ ...order("b1", "c3", "book", 1), timestamp: t0 }]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [{ ...order("b2", "c3", "book", 2), timestamp: t0 + 1_000 }]);
    await driver.runUntilQuiet();
    expect(await historyOf("category-totals", "books")).toEqual([
      { orders: 1, revenue: 1000 },
      { orders: 2, revenue: 3000 },
    ]);
    // Held: a minute has not passed since the first change.
    expect(await historyOf("category-dashboard", "books")).toEqual([]);

    // The task holding the buffer is wiped and restored through the restore worker.
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    const owner = (await driver.instances()).find((i) => i.role === "active" && i.taskId === booksTask)!;
    expect((await driver.task(owner).corrupt()).state).toBe("RESTORING");
    expect((await call("/stores/category-totals/keys/books")).status).toBe(503);
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();

    // The restored buffer still holds books since t0: a change a minute later shows the latest total, once.
    await driver.pipe("orders", [{ ...order("b3", "c3", "book", 3), timestamp: t0 + DASHBOARD_INTERVAL_MS }]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [{ ...order("b4", "c3", "book", 1), timestamp: t0 + DASHBOARD_INTERVAL_MS + 1_000 }]);
    await driver.runUntilQuiet();
    const dashboard = (await driver.read("category-dashboard")).filter((r) => r.key === "books");
    expect(dashboard.map((r) => JSON.parse(r.value))).toEqual([{ orders: 3, revenue: 6000 }]);
    expect(dashboard.map((r) => r.timestamp)).toEqual([t0 + DASHBOARD_INTERVAL_MS]);
    expect(await valueAt("category-totals", "books")).toEqual({ orders: 4, revenue: 7000 });
  });

  it("ships each order to the customer's city as of the order's time, through a wipe of the versioned table and the grace buffer", async () => {
    // Ahead of every timestamp the other tests' records carry.
    const t = Date.now() + 7_200_000;
    const customerTask = taskOf(0, "c5");
    const shipped = async () =>
      (await driver.read("shipments"))
        .filter((r) => r.key === "c5")
        .map((r) => {
          const shipment = JSON.parse(r.value) as Shipment;
          return [shipment.orderId, shipment.city, r.timestamp];
        });
    await driver.pipe("customers", [{ ...customer("c5", "Eve", "Oslo"), timestamp: t }]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [{ ...order("s1", "c5", "tea", 1), timestamp: t + 1_000 }]);
    await driver.runUntilQuiet();
    // Eve moves after s1 was placed, while s1 still waits out the grace period.
    await driver.pipe("customers", [{ ...customer("c5", "Eve", "Bergen"), timestamp: t + 5_000 }]);
    await driver.runUntilQuiet();
    await driver.pipe("orders", [{ ...order("s2", "c5", "tea", 2), timestamp: t + 12_000 }]);
    await driver.runUntilQuiet();
    expect(await shipped()).toEqual([["s1", "Oslo", t + 1_000]]);

    // The task holding the versioned customers table and the join's buffer (s2 waits in it) is wiped.
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    const owner = (await driver.instances()).find((i) => i.role === "active" && i.taskId === customerTask)!;
    expect((await driver.task(owner).corrupt()).state).toBe("RESTORING");
    expect((await call("/stores/customers/keys/c5")).status).toBe(503);
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    expect(await valueAt("customers", "c5")).toEqual({ name: "Eve", city: "Bergen" });

    // An order older than the grace period joins at once with the restored history: Oslo then.
    await driver.pipe("orders", [{ ...order("s3", "c5", "tea", 1), timestamp: t + 1_500 }]);
    await driver.runUntilQuiet();
    // The restored buffer still holds s2: it leaves once stream time is the grace period past it.
    await driver.pipe("orders", [{ ...order("s4", "c5", "tea", 1), timestamp: t + 12_000 + SHIPMENT_GRACE_MS }]);
    await driver.runUntilQuiet();
    expect(await shipped()).toEqual([
      ["s1", "Oslo", t + 1_000],
      ["s3", "Oslo", t + 1_500],
      ["s2", "Bergen", t + 12_000],
    ]);
  });
});
