/**
 * Foreign-key table-table joins (KIP-213: `KTable.join(other, foreignKeyExtractor, joiner)` and
 * `leftJoin`): each left row joins the right row whose key its value names. Left updates travel to
 * the right table's partition of their foreign key as subscriptions, on the topic
 * `<applicationId>-<name>-subscription-registration-repartition`; answers travel back to the left
 * row's partition on `...-subscription-response-repartition`, where they are checked against the
 * row's current value (a stale answer is dropped) and joined. The result is a table of the left
 * keys (its source, which `KTable` wraps), materialized when `materialized` names a store. Both
 * tables send old values (the left one to unsubscribe a row from its old key).
 */
import { TopologyError } from "../../errors";
import { serdeOrDefault, type Serde } from "../../serdes";
import type { GraphNode, StreamPartitioner, TopologyGraph } from "../../topology/graph";
import type { OldValues } from "../change";
import type { Materialized } from "../materialized";
import type { MaterializedTable } from "../table-lookup";
import { addTableSource, type TableSource } from "../table-source";
import { responseJoin } from "./response-join";
import { subscriptionSend } from "./subscription-send";
import { foreignTableJoin, subscriptionReceive } from "./subscription-receive";
import { responseSerde, subscriptionSerde, type Response, type Subscription } from "./wrappers";

/** What the join asks of each table (a `KTable`). */
export interface JoinedTable<K, V> {
  readonly graph: TopologyGraph;
  readonly node: GraphNode;
  readonly keySerde: Serde<K> | undefined;
  readonly valueSerde: Serde<V> | undefined;
  readonly oldValues: OldValues;
  materialize(): MaterializedTable;
}

/** The result table: its source (materialized in place when needed) and serdes. */
export interface ForeignKeyJoinResult<K, VR> {
  readonly output: TableSource;
  readonly keySerde: Serde<K> | undefined;
  readonly valueSerde: Serde<VR> | undefined;
}

export function foreignKeyJoin<K, V, KO, VO, VR>(
  left: JoinedTable<K, V>,
  right: JoinedTable<KO, VO>,
  foreignKeyExtractor: (value: V) => KO | null,
  joiner: (value: V, other: VO | null) => VR,
  leftJoin: boolean,
  materialized: Materialized<K, VR>,
): ForeignKeyJoinResult<K, VR> {
  const { graph } = left;
  if (right.graph !== graph) throw new TopologyError("cannot join tables of different StreamsBuilders");
  right.oldValues.enable(true);
  left.oldValues.enable(true);
  const primaryKeySerde = serdeOrDefault(left.keySerde);
  const foreignKeySerde = serdeOrDefault(right.keySerde);
  const leftValueSerde = serdeOrDefault(left.valueSerde);
  const subscriptions = subscriptionSerde(primaryKeySerde);
  const responses = responseSerde(serdeOrDefault(right.valueSerde));

  // Left: subscriptions out, keyed by foreign key (a left join's null foreign key still goes, to be answered null).
  const registration = graph.newName("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION");
  const send = graph.addProcessor("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION", {
    parents: [left.node],
    supplier: subscriptionSend(foreignKeyExtractor, foreignKeySerde, leftValueSerde, leftJoin),
    stores: [],
  });
  const toForeignKey: StreamPartitioner<KO | null, Subscription<K>> = (key) => (key === null ? 0 : undefined);
  const subscriptionTopic = `${registration}-subscription-registration`;
  graph.addSink("KTABLE-SINK", {
    parents: [send],
    topic: subscriptionTopic,
    repartition: true,
    keySerde: foreignKeySerde as Serde<unknown>,
    valueSerde: subscriptions as Serde<unknown>,
    partitioner: toForeignKey as StreamPartitioner<unknown, unknown>,
  });

  // Right: subscriptions in, kept by foreign key, answered; right updates answer their subscribers.
  const subscriptionSource = graph.addSource("KTABLE-SOURCE", {
    topics: [subscriptionTopic],
    repartition: true,
    keySerde: foreignKeySerde as Serde<unknown>,
    valueSerde: subscriptions as Serde<unknown>,
  });
  const storeName = graph.newName("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE");
  graph.addStore({ name: storeName, kind: "buffer", keySerde: foreignKeySerde as Serde<unknown>, valueSerde: subscriptions as Serde<unknown> });
  const rightTable = right.materialize();
  const side = { storeName, foreignKeySerde, primaryKeySerde, subscriptionSerde: subscriptions, right: rightTable };
  const receive = graph.addProcessor("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR", {
    parents: [subscriptionSource],
    supplier: subscriptionReceive<K, KO, VO>(side),
    stores: [storeName, rightTable.storeName],
  });
  const foreign = graph.addProcessor("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR", {
    parents: [rightTable.node],
    supplier: foreignTableJoin<K, KO, VO>(side),
    stores: [storeName],
  });
  const responseTopic = `${graph.newName("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE")}-subscription-response`;
  const toPrimaryPartition: StreamPartitioner<K, Response<VO>> = (_key, response) => response.primaryPartition;
  graph.addSink("KTABLE-SINK", {
    parents: [receive, foreign],
    topic: responseTopic,
    repartition: true,
    keySerde: primaryKeySerde as Serde<unknown>,
    valueSerde: responses as Serde<unknown>,
    partitioner: toPrimaryPartition as StreamPartitioner<unknown, unknown>,
  });

  // Left again: answers in, checked against the row as it is now, joined.
  const responseSource = graph.addSource("KTABLE-SOURCE", {
    topics: [responseTopic],
    repartition: true,
    keySerde: primaryKeySerde as Serde<unknown>,
    valueSerde: responses as Serde<unknown>,
  });
  const leftTable = left.materialize();
  const resolver = graph.addProcessor("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR", {
    parents: [responseSource],
    supplier: responseJoin<K, V, VO, VR>(leftTable, leftValueSerde, joiner, leftJoin),
    stores: [leftTable.storeName],
  });
  const keySerde = materialized.keySerde ?? left.keySerde;
  const valueSerde = materialized.valueSerde;
  const laterStoreName = graph.newName("KTABLE-FK-JOIN-OUTPUT-STATE-STORE");
  const output = addTableSource(graph, resolver, {
    prefix: "KTABLE-FK-JOIN-OUTPUT",
    storeName: materialized.storeName,
    ...(materialized.historyRetentionMs === undefined ? {} : { historyRetentionMs: materialized.historyRetentionMs }),
    laterStoreName: () => laterStoreName,
    keySerde: serdeOrDefault(keySerde) as Serde<unknown>,
    valueSerde: serdeOrDefault(valueSerde) as Serde<unknown>,
  });
  return { output, keySerde, valueSerde };
}
