/**
 * The processor that reads a stream of updates as a table (Kafka's `KTableSource`), behind
 * `StreamsBuilder.table` and `KStream.toTable`: each record is its key's new value (a null value
 * deletes the row), forwarded as a `Change`. A record without a key is no row: dropped, counted.
 *
 * A source table has a store only when it must: when materialized by the user, or once an operator
 * added later needs its rows (a join) or its old values (a grouped table, a left join); it is then
 * materialized in place, its store connected to this same processor. With a store, the old value
 * is the row the store held.
 *
 * With a versioned store (KIP-914) an update older than the key's latest row goes into its history
 * and is forwarded marked not latest (`isLatest: false`: joins and aggregations skip it); one older
 * than the history retention is not taken, and neither forwarded (counted as dropped).
 */
import type { Serde } from "../serdes";
import type { ProcessorNode, TopologyGraph, GraphNode } from "../topology/graph";
import { change, OldValues } from "./change";
import { declareStore, versioning } from "./materialize";
import { erase, processorOf } from "./processors";
import { writeTableUpdate } from "./table-row";

export interface TableSource {
  readonly node: ProcessorNode;
  readonly oldValues: OldValues;
  /** The source's store, materializing it in place when it has none yet. */
  store(): string;
}

export interface TableSourceOptions {
  /** The processor's name prefix: `KTABLE-SOURCE` or `KSTREAM-TOTABLE`. */
  readonly prefix: string;
  /** Its name, when taken already. */
  readonly name?: string;
  /** Set when the user materialized the table: its store exists from the start. */
  readonly storeName: string | undefined;
  /** Set when the user's store is versioned: how long it keeps older versions. */
  readonly historyRetentionMs?: number;
  /** The name to give the store if it is materialized later. */
  readonly laterStoreName: () => string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
}

export function addTableSource(graph: TopologyGraph, parent: GraphNode, options: TableSourceOptions): TableSource {
  let storeName = options.storeName;
  const retention = options.historyRetentionMs;
  const declare = (name: string, historyRetentionMs?: number) =>
    declareStore(graph, { name, keySerde: options.keySerde, valueSerde: options.valueSerde, ...versioning({ historyRetentionMs }) });
  if (storeName !== undefined) declare(storeName, retention);
  const oldValues = new OldValues((force) => {
    if (storeName === undefined && !force) return false;
    store();
    return true;
  });
  const supplier = processorOf<unknown, unknown, unknown, unknown>((record, context) => {
    if (record.key === null) return context.dropRecord("null key in a table");
    if (storeName === undefined) return context.forward({ ...record, value: change(record.value) });
    const update = writeTableUpdate(context, storeName, retention, record, oldValues.sending);
    if (update === undefined) return context.dropRecord("update older than the versioned table's history retention");
    context.forward({ ...record, value: update });
  });
  const node = graph.addProcessor(
    options.prefix,
    { parents: [parent], supplier: erase(supplier), stores: storeName === undefined ? [] : [storeName] },
    options.name,
  );
  function store(): string {
    if (storeName === undefined) {
      storeName = options.laterStoreName();
      declare(storeName);
      graph.connectStore(node, storeName);
    }
    return storeName;
  }
  return { node, oldValues, store };
}
