/**
 * A private copy of the example topology (orders → totals) under its own names, so a test can run
 * StreamTask directly on topics no other test touches. A bad order fails its task ("fail").
 * Like the example, its store is uncached unless asked (`caching: true`: Kafka's default).
 */
import { Application } from "../../src/application";
import { Materialized } from "../../src/streams/dsl/materialized";
import { StreamsBuilder } from "../../src/streams/dsl/streams-builder";
import { addOrder, orderSerde, type Totals } from "../../examples/orders-totals/topology";
import { Serdes } from "../../src/streams/serdes";

export function totalsApp(id: string, options: { caching?: boolean } = {}): Application {
  const builder = new StreamsBuilder();
  builder
    .stream(`${id}-orders`, { key: Serdes.string(), value: orderSerde })
    .groupByKey()
    .aggregate<Totals>(
      () => ({ count: 0, sum: 0 }),
      addOrder,
      Materialized.as(`${id}-totals`, { value: Serdes.json<Totals>(), caching: options.caching ?? false }),
    )
    .toStream()
    .to(`${id}-out`);
  return new Application(builder.build({ applicationId: id, topics: { [`${id}-orders`]: 1, [`${id}-out`]: 1 }, onDeserializationError: "fail" }));
}
