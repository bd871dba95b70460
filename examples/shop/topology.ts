/**
 * The third example application: a shop. Order events (`orders`, keyed by order id: a customer, a
 * product and a quantity, or a cancellation) are priced with the product catalog — a GlobalKTable
 * of `products`, which every task holds whole — and kept as the table of current orders (store
 * `orders`). Each order is enriched with its customer from the `customers` table by a foreign-key
 * join (store `orders-enriched`, topic `orders-enriched`), and the revenue of each product category
 * is maintained by regrouping the orders table by category: a changed or cancelled order takes its
 * old amount out of its old category before adding the new one to the new (store
 * `category-totals`, topic `category-totals`); a dashboard gets each category's total at most once a
 * minute (`suppress(untilTimeLimit)`, topic `category-dashboard`). Customers are a versioned table
 * (their history kept for a day), so each order's shipment (topic `shipments`, keyed by customer)
 * goes to the city the customer lived in when the order was placed — even when the order is
 * processed after the customer moved — and waits 10 s for address changes that arrive late (a
 * stream-table join with a grace period). Built from the public API only (`edge-streams`); app.ts
 * makes it an application, worker.ts the Worker that `npm run start:shop` serves.
 */
import { BufferConfig, Materialized, Serdes, Stores, StreamsBuilder, Suppressed, type Topology } from "edge-streams";

export interface Product {
  readonly name: string;
  readonly category: string;
  /** Price in cents. */
  readonly price: number;
}

export interface Customer {
  readonly name: string;
  readonly city: string;
}

/** An order event: the order as it is now, or its cancellation. */
export type OrderEvent = { readonly customerId: string; readonly productId: string; readonly quantity: number } | { readonly cancelled: true };

export interface PricedOrder {
  readonly customerId: string;
  readonly productId: string;
  readonly quantity: number;
  readonly category: string;
  /** quantity × price, in cents. */
  readonly amount: number;
}

export interface EnrichedOrder extends PricedOrder {
  readonly customer: string;
  readonly city: string;
}

/** Where an order goes: the customer's city as of the order's time. */
export interface Shipment {
  readonly orderId: string;
  readonly productId: string;
  readonly quantity: number;
  readonly city: string;
}

export interface CategoryTotal {
  readonly orders: number;
  readonly revenue: number;
}

export const SHOP_APPLICATION_ID = "shop";
/** `orders` and the category totals are repartitioned; `customers` is joined by foreign key, `products` is global. */
export const SHOP_TOPICS = { orders: 4, customers: 4, products: 2, "orders-enriched": 4, "category-totals": 4, "category-dashboard": 4, shipments: 4 } as const;
/** A category's dashboard row waits this long (stream time) after its first change, then shows the latest total. */
export const DASHBOARD_INTERVAL_MS = 60_000;
/** How long customers' past addresses are kept, and how long an order waits for a late address change. */
export const CUSTOMER_HISTORY_MS = 24 * 60 * 60_000;
export const SHIPMENT_GRACE_MS = 10_000;

const str = Serdes.string();

export function shopTopology(): Topology {
  const builder = new StreamsBuilder();
  const products = builder.globalTable("products", { key: str, value: Serdes.json<Product>() }, Materialized.as("products"));
  const customers = builder.table(
    "customers",
    { key: str, value: Serdes.json<Customer>() },
    Materialized.as(Stores.persistentVersionedKeyValueStore("customers", CUSTOMER_HISTORY_MS)),
  );

  const orderEvents = builder.stream("orders", { key: str, value: Serdes.json<OrderEvent>() });
  orderEvents
    .flatMap((orderId, event) =>
      "cancelled" in event ? [] : [{ key: event.customerId, value: { orderId, productId: event.productId, quantity: event.quantity } }],
    )
    .join(customers, (order, customer): Shipment => ({ ...order, city: customer.city }), {
      key: str,
      value: Serdes.json<Omit<Shipment, "city">>(),
      name: "shipments",
      gracePeriodMs: SHIPMENT_GRACE_MS,
    })
    .to("shipments", { key: str, value: Serdes.json<Shipment>() });

  const orders = orderEvents
    // A cancellation (or an order of an unknown product) is priced as null: it deletes the order.
    // Its key selector names no product ("") rather than none: a left join drops a null join key.
    .leftJoin(
      products,
      (_orderId, event) => ("cancelled" in event ? "" : event.productId),
      (event, product): PricedOrder | null =>
        "cancelled" in event || product === null ? null : { ...event, category: product.category, amount: event.quantity * product.price },
    )
    .toTable(Materialized.as("orders", { key: str, value: Serdes.json<PricedOrder | null>() }));

  orders
    .join(
      customers,
      (order) => order?.customerId ?? null,
      (order, customer): EnrichedOrder => ({ ...order!, customer: customer.name, city: customer.city }),
      Materialized.as("orders-enriched", { value: Serdes.json<EnrichedOrder>() }),
    )
    .toStream()
    .to("orders-enriched", { key: str, value: Serdes.json<EnrichedOrder | null>() });

  const categoryTotals = orders
    .groupBy((_orderId, order) => (order === null ? null : { key: order.category, value: order.amount }), {
      key: str,
      value: Serdes.number(),
      name: "orders-by-category",
    })
    .aggregate<CategoryTotal>(
      () => ({ orders: 0, revenue: 0 }),
      (_category, amount, total) => ({ orders: total.orders + 1, revenue: total.revenue + amount }),
      (_category, amount, total) => ({ orders: total.orders - 1, revenue: total.revenue - amount }),
      Materialized.as("category-totals", { key: str, value: Serdes.json<CategoryTotal>() }),
    );
  categoryTotals.toStream().to("category-totals", { key: str, value: Serdes.json<CategoryTotal>() });
  categoryTotals
    // Bounded, so a burst of categories cannot grow it without limit: the oldest rows go out early.
    .suppress(Suppressed.untilTimeLimit(DASHBOARD_INTERVAL_MS, BufferConfig.maxRecords(10_000).emitEarlyWhenFull()).withName("category-dashboard-buffer"))
    .toStream()
    .to("category-dashboard", { key: str, value: Serdes.json<CategoryTotal>() });

  return builder.build({ applicationId: SHOP_APPLICATION_ID, topics: SHOP_TOPICS });
}
