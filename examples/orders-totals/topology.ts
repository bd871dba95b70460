/**
 * The topology of the default example (docs/http-api.md): per customer, the count and sum of the
 * amounts of all its orders, kept in store `totals` and published on topic `totals`. Its topics'
 * partition count comes from the `PARTITIONS` var (default 4): the same application runs with
 * 128 or 1,024 partitions.
 */
import { intVar, Materialized, Serdes, StreamsBuilder, type DeserializationHandler, type ProcessingHandler, type Topology } from "edge-streams";
import { z } from "zod";

/**
 * The largest amount of one order, either way (refunds are negative): a bound far below where
 * sums of many orders could overflow (a sum of 1e15-sized amounts stays finite for 1e293 orders).
 */
export const MAX_ORDER_AMOUNT = 1e15;

/** An order: `{"amount": n}` with a finite `n` within ±`MAX_ORDER_AMOUNT` (other fields are dropped). */
export const Order = z.object({ amount: z.number().min(-MAX_ORDER_AMOUNT).max(MAX_ORDER_AMOUNT) });
export type Order = z.infer<typeof Order>;

export interface Totals {
  readonly count: number;
  readonly sum: number;
}

/**
 * Orders as JSON, checked on the way in: an amount that is not a finite number within the bound
 * would corrupt every later sum of its customer. HTTP ingest refuses such an order (`400
 * InvalidRecord`); one written through `/kafka` is a deserialization error for the topology's
 * handler (the application sends it to its dead-letter topic).
 */
export const orderSerde = Serdes.json(Order);

/**
 * A customer's totals with one more order. A sum that would not be a finite number (JSON has no
 * Infinity: it would be stored as `null`) is refused: the error goes to the topology's
 * processing-error handler, and the totals stay as they were.
 */
export function addOrder(customer: string, order: Order, totals: Totals): Totals {
  const sum = totals.sum + order.amount;
  if (!Number.isFinite(sum)) throw new RangeError(`the sum of ${customer}'s orders would overflow: ${totals.sum} + ${order.amount}`);
  return { count: totals.count + 1, sum };
}

export const ORDERS_APPLICATION_ID = "edge-streams";
/** Partitions of `orders` and `totals` unless the `PARTITIONS` var says otherwise. */
export const DEFAULT_PARTITIONS = 4;
/** The most `PARTITIONS` may ask for. */
export const MAX_PARTITIONS = 10_000;
export const ORDERS_TOPICS = { orders: DEFAULT_PARTITIONS, totals: DEFAULT_PARTITIONS } as const;

/** The partition count of `orders` and `totals` the environment asks for (`PARTITIONS`, default 4). */
export function partitionsOf(env: object): number {
  return intVar(env, "PARTITIONS", DEFAULT_PARTITIONS, { min: 1, max: MAX_PARTITIONS });
}

/**
 * orders → group by customer → aggregate into `totals` → topic `totals`. One subtopology, tasks
 * 0_0 … 0_<partitions − 1> (0_0..0_3 by default).
 * `caching` puts `totals` behind the record cache (Kafka's default for a topology of one's own;
 * the bench measures it): the example application itself keeps it off, as its contract requires.
 */
export function ordersTotalsTopology(
  errors: DeserializationHandler | { readonly deadLetterQueueTopic: string } = "fail",
  partitions: number = DEFAULT_PARTITIONS,
  { caching = false }: { caching?: boolean } = {},
): Topology {
  const builder = new StreamsBuilder();
  builder
    .stream("orders", { key: Serdes.string(), value: orderSerde })
    .groupByKey()
    .aggregate<Totals>(
      () => ({ count: 0, sum: 0 }),
      addOrder,
      // Uncached by default: the contract promises every update on the changelog and on topic `totals`.
      Materialized.as("totals", { value: Serdes.json<Totals>(), caching }),
    )
    .toStream()
    .to("totals");
  const orders = { orders: partitions, totals: partitions };
  if (typeof errors === "object" && "deadLetterQueueTopic" in errors) {
    // Kafka's shape: a dead letter queue for the application (`errors.dead.letter.queue.topic.name`),
    // used by the built-in "continue" handlers. An order that cannot be read, or whose aggregation
    // throws (an overflowing sum), goes there with Kafka's error headers, and its partition goes on
    // with the next order.
    const { deadLetterQueueTopic } = errors;
    return builder.build({
      applicationId: ORDERS_APPLICATION_ID,
      topics: { ...orders, [deadLetterQueueTopic]: 1 },
      deadLetterQueueTopic,
      onDeserializationError: "continue",
      onProcessingError: "continue",
    });
  }
  // A dead-letter topic is declared along with the application's own topics.
  const topics = typeof errors === "object" && "deadLetterTopic" in errors ? { ...orders, [errors.deadLetterTopic]: 1 } : orders;
  // An order the aggregation refuses (an overflowing sum) goes where unreadable ones go.
  const onDeserializationError = errors as DeserializationHandler;
  const onProcessingError: ProcessingHandler =
    typeof onDeserializationError === "function" ? "fail" : onDeserializationError === "skip" ? "continue" : onDeserializationError;
  return builder.build({ applicationId: ORDERS_APPLICATION_ID, topics, onDeserializationError, onProcessingError });
}
