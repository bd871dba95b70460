/**
 * `cogroup` (Kafka's `CogroupedKStream`): several grouped streams, each with its own aggregator,
 * folded into one aggregate per key — plain, time- or sliding-windowed, or per session. Each
 * grouped stream gets its own aggregation processor (repartitioned first when its key may have
 * changed, the topic named by its `Grouped.name` or the store), all writing the one store, and a
 * merge node after them is the table. Sharing the store puts every input in one subtopology, so the
 * build checks that they are co-partitioned. Records with a null key (and, unwindowed, a null
 * value) are dropped and counted, as each aggregation drops them.
 */
import { TopologyError } from "../errors";
import { Serdes, type Serde } from "../serdes";
import type { AnySupplier, GraphNode } from "../topology/graph";
import type { Windowed } from "../windowed";
import { OldValues } from "./change";
import type { KGroupedStream } from "./kgrouped-stream";
import { KTable } from "./ktable";
import { materializeStore } from "./materialize";
import type { Materialized } from "./materialized";
import { aggregateProcessor, passThrough, type Aggregation } from "./processors";
import { windowingOf } from "./windowed-fold";
import { windowRetention, type Windows, type SessionStoreWindows, type WindowStoreWindows } from "./windows/windows";

type Aggregator<K, V, VA> = (key: K, value: V, aggregate: VA) => VA;

interface CogroupPart<K, VA> {
  readonly grouped: KGroupedStream<K, unknown>;
  readonly aggregator: Aggregator<K, unknown, VA>;
}

/** The store and processors of one cogrouped aggregation (windowed when `windows` is set); `aggregation` makes each part's processor. */
interface CogroupFold<K, VA> {
  readonly materialized: Materialized<K, VA>;
  readonly windows?: Windows;
  readonly aggregation: (storeName: string, aggregator: Aggregator<K, unknown, VA>, oldValues: OldValues) => AnySupplier;
}

function cogroupFold<K, VA, KT, T extends null>(parts: readonly CogroupPart<K, VA>[], fold: CogroupFold<K, VA>): KTable<KT, VA, T> {
  const { graph } = parts[0]!.grouped;
  if (parts.some((p) => p.grouped.graph !== graph)) throw new TopologyError("cannot cogroup grouped streams of different StreamsBuilders");
  const { materialized } = fold;
  // Any part's known key serde serves them all (they are grouped by the same key).
  const known = () => parts.map((part) => part.grouped.knownKeySerde).find((serde) => serde !== undefined);
  const {
    name: storeName,
    keySerde,
    valueSerde,
  } = materializeStore(graph, materialized, {
    generatedName: "COGROUPKSTREAM-AGGREGATE-STATE-STORE",
    kind: fold.windows?.storeKind ?? "key-value",
    keySerde: () => known() ?? parts[0]!.grouped.storeKeySerde(materialized),
    valueSerde: Serdes.json<VA>(),
    // The plain aggregate is cached (Kafka's default): the flush forwards through the merge node like every part's update.
    cached: fold.windows === undefined,
    unversioned: "cogroup",
  });
  // Every repartition first, then the aggregations (Kafka's order, which its names follow).
  const parents = parts.map((part) => part.grouped.aggregationParent(storeName, keySerde));
  const oldValues = new OldValues();
  const aggregations: GraphNode[] = parts.map((part, i) =>
    graph.addProcessor("COGROUPKSTREAM-AGGREGATE", {
      parents: [parents[i]!],
      supplier: fold.aggregation(storeName, part.aggregator, oldValues),
      stores: [storeName],
    }),
  );
  const merge = graph.addProcessor("COGROUPKSTREAM-MERGE", { parents: aggregations, supplier: passThrough, stores: [] });
  const windowing = fold.windows && windowingOf(fold.windows, keySerde);
  const tableKeySerde = (windowing ? Serdes.windowed(keySerde) : keySerde) as Serde<KT>;
  return new KTable<KT, VA, T>(graph, merge, tableKeySerde, valueSerde, storeName, windowing ? { oldValues, windowing } : { oldValues });
}

/** A step of the aggregation: the aggregator, from the initializer's value for a new key or window. */
const stepOf =
  <K, VA>(initializer: () => VA, aggregator: Aggregator<K, unknown, VA>): Aggregation<K, unknown, VA> =>
  (key, value, current) =>
    aggregator(key, value, current === undefined ? initializer() : current);

export class CogroupedKStream<K, VA> {
  private readonly parts: CogroupPart<K, VA>[];

  /** Made by `KGroupedStream.cogroup`. */
  constructor(first: KGroupedStream<K, unknown>, aggregator: Aggregator<K, unknown, VA>) {
    this.parts = [{ grouped: first, aggregator }];
  }

  /** Adds a grouped stream with its aggregator (a grouped stream added again replaces its aggregator). */
  cogroup<V>(grouped: KGroupedStream<K, V>, aggregator: Aggregator<K, V, VA>): CogroupedKStream<K, VA> {
    const part = { grouped: grouped as unknown as KGroupedStream<K, unknown>, aggregator: aggregator as Aggregator<K, unknown, VA> };
    const index = this.parts.findIndex((p) => p.grouped === part.grouped);
    if (index >= 0) this.parts[index] = part;
    else this.parts.push(part);
    return this;
  }

  /** The aggregate of every grouped stream's values per key, starting as `initializer()`. */
  aggregate(initializer: () => VA, materialized: Materialized<K, VA> = {}): KTable<K, VA> {
    return cogroupFold<K, VA, K, never>(this.parts, {
      materialized,
      aggregation: (storeName, aggregator, oldValues) => aggregateProcessor(storeName, stepOf(initializer, aggregator), oldValues),
    });
  }

  /** Windowed cogrouped aggregations: time (tumbling, hopping) and sliding windows (`TimeWindows`, `SlidingWindows`), or sessions (`SessionWindows`). */
  windowedBy(windows: WindowStoreWindows): TimeWindowedCogroupedKStream<K, VA>;
  windowedBy(windows: SessionStoreWindows): SessionWindowedCogroupedKStream<K, VA>;
  windowedBy(windows: Windows): TimeWindowedCogroupedKStream<K, VA> | SessionWindowedCogroupedKStream<K, VA> {
    // Windows kept in a session store merge: their aggregations take a merger.
    return windows.storeKind === "session" ? new SessionWindowedCogroupedKStream(this.parts, windows) : new TimeWindowedCogroupedKStream(this.parts, windows);
  }
}

export class TimeWindowedCogroupedKStream<K, VA> {
  /** Made by `CogroupedKStream.windowedBy`. */
  constructor(
    private readonly parts: readonly CogroupPart<K, VA>[],
    private readonly windows: Windows,
  ) {}

  /** The aggregate of every grouped stream's values per key and window, starting as `initializer()`. */
  aggregate(initializer: () => VA, materialized: Materialized<K, VA> = {}): KTable<Windowed<K>, VA> {
    const { windows } = this;
    const retentionMs = windowRetention(windows, materialized);
    return cogroupFold<K, VA, Windowed<K>, never>(this.parts, {
      materialized,
      windows,
      aggregation: (storeName, aggregator, oldValues) =>
        windows.aggregateProcessor({ storeName, retentionMs, oldValues, step: stepOf(initializer, aggregator) }),
    });
  }
}

export class SessionWindowedCogroupedKStream<K, VA> {
  /** Made by `CogroupedKStream.windowedBy`. */
  constructor(
    private readonly parts: readonly CogroupPart<K, VA>[],
    private readonly windows: Windows,
  ) {}

  /** The aggregate of every grouped stream's values per key and session; `merger` combines two sessions' aggregates when they merge. */
  aggregate(initializer: () => VA, merger: (key: K, left: VA, right: VA) => VA, materialized: Materialized<K, VA> = {}): KTable<Windowed<K>, VA, null> {
    const { windows } = this;
    const retentionMs = windowRetention(windows, materialized);
    return cogroupFold<K, VA, Windowed<K>, null>(this.parts, {
      materialized,
      windows,
      aggregation: (storeName, aggregator, oldValues) =>
        windows.aggregateProcessor({ storeName, retentionMs, oldValues, step: stepOf(initializer, aggregator), merge: { initializer, merger } }),
    });
  }
}
