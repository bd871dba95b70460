/**
 * Where `Materialized` becomes a store: the one place that names an operator's store (the user's
 * name, else Kafka's generated `<PREFIX>-STATE-STORE-<index>`), fills in its serdes, keeps it
 * versioned or refuses that, puts it behind the record cache, and declares it in the graph.
 */
import { TopologyError } from "../errors";
import { serdeOrDefault, type Serde } from "../serdes";
import type { TopologyGraph } from "../topology/graph";
import type { Materialized } from "./materialized";

/** How an operator uses its store, and its defaults for what `Materialized` leaves out. */
export interface StoreUse<KS, VS> {
  /** The prefix of the store's generated name, when `Materialized` gives none. */
  readonly generatedName: string;
  /** Default `"key-value"`. */
  readonly kind?: "key-value" | "window" | "session";
  /** The key serde when `Materialized` has none; asked after the store is named. */
  readonly keySerde: () => KS;
  /** The value serde when `Materialized` has none. */
  readonly valueSerde: VS;
  /** Aggregations: behind the record cache unless `Materialized` turns it off (Kafka's default). */
  readonly cached?: boolean;
  /** Set by operators whose store cannot be versioned (their name, for the error): a versioned `Materialized` is refused. */
  readonly unversioned?: string;
  /** A global table's store. */
  readonly global?: boolean;
}

/** A store as declared: its name, its serdes (undefined: the default serde), whether it is versioned. */
export interface MaterializedStore<KS, VS> {
  readonly name: string;
  readonly keySerde: KS;
  readonly valueSerde: VS;
  /** Set for a versioned store: how long, in stream time, it keeps older versions. */
  readonly historyRetentionMs?: number;
}

/** Names, fills in and declares the store `materialized` describes for an operator that uses it as `use` says. */
export function materializeStore<K, V, KS extends Serde<K> | undefined, VS extends Serde<V> | undefined>(
  graph: TopologyGraph,
  materialized: Materialized<K, V>,
  use: StoreUse<KS, VS>,
): MaterializedStore<KS | Serde<K>, VS | Serde<V>> {
  if (use.unversioned !== undefined) refuseVersioned(materialized, use.unversioned);
  const name = materialized.storeName ?? graph.newName(use.generatedName);
  const retention = materialized.historyRetentionMs;
  const store = {
    name,
    keySerde: materialized.keySerde ?? use.keySerde(),
    valueSerde: (materialized.valueSerde ?? use.valueSerde) as VS | Serde<V>,
    ...(retention === undefined ? {} : { historyRetentionMs: retention }),
  };
  declareStore(graph, store, { kind: use.kind, caching: use.cached === true && cachingOf(materialized), global: use.global });
  return store;
}

/** Declares a table's or an aggregation's store in the graph, undefined serdes standing for the default serde. */
export function declareStore(
  graph: TopologyGraph,
  store: MaterializedStore<Serde<unknown> | undefined, Serde<unknown> | undefined>,
  how: { readonly kind?: "key-value" | "window" | "session"; readonly caching?: boolean; readonly global?: boolean } = {},
): void {
  const { historyRetentionMs } = store;
  graph.addStore({
    name: store.name,
    ...(how.kind === undefined || how.kind === "key-value" ? {} : { kind: how.kind }),
    keySerde: serdeOrDefault(store.keySerde),
    valueSerde: serdeOrDefault(store.valueSerde),
    ...(how.caching ? { caching: true } : {}),
    ...(how.global ? { global: true } : {}),
    ...(historyRetentionMs === undefined ? {} : { historyRetentionMs }),
  });
}

/** What a table over this store records of it: its history retention when versioned (see `TableParts`). */
export function versioning(store: { readonly historyRetentionMs?: number }): { historyRetentionMs?: number } {
  return store.historyRetentionMs === undefined ? {} : { historyRetentionMs: store.historyRetentionMs };
}

/** Whether an aggregation's store is cached: as asked, by default yes; a versioned store never (Kafka's are not either). */
function cachingOf(materialized: Materialized<unknown, unknown>): boolean {
  return materialized.historyRetentionMs === undefined && materialized.caching !== false;
}

/** Aggregations keep their results in plain stores: a versioned `Materialized` is refused there. */
function refuseVersioned(materialized: Materialized<unknown, unknown>, operator: string): void {
  if (materialized.historyRetentionMs !== undefined) {
    throw new TopologyError(`${operator}: a versioned store (${materialized.storeName}) can materialize a table, not an aggregation`);
  }
}
