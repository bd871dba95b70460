/**
 * Counts what windowed-store updates cost: the changelog records a task sends and the store rows
 * it writes, per input record, for each time-aware store kind (window, session, suppression and
 * join buffers). Used by the tests of the changelog layout and to print before/after numbers.
 */
import {
  BufferConfig,
  createTaskProcessor,
  EmitStrategy,
  InMemoryKeyValueStore,
  JoinWindows,
  Materialized,
  Serdes,
  SessionWindows,
  SlidingWindows,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  type InputRecord,
  type OutgoingRecord,
  type StoreBackend,
  type Topology,
} from "../../../src/streams";

/**
 * A backend that counts the rows written to every store as the task's SQLite stores write them:
 * each key written (put or deleted) since the last commit is one row at the commit.
 */
export class CountingBackend implements StoreBackend {
  rowsWritten = 0;
  /** Puts and deletes of entries (data rows of time-keyed stores, an outer join's buffered records), each counted. */
  entryWrites = 0;
  private readonly stores = new Map<string, InMemoryKeyValueStore>();
  private readonly written = new Set<string>();

  commit(): void {
    this.rowsWritten += this.written.size;
    this.written.clear();
  }

  keyValue(storeName: string): InMemoryKeyValueStore {
    let store = this.stores.get(storeName);
    if (!store) {
      store = new InMemoryKeyValueStore();
      const { put, delete: remove } = store;
      store.put = (key, value, timestamp) => {
        if (isEntry(key)) this.entryWrites++;
        this.written.add(`${storeName}\u0000${key}`);
        put.call(store, key, value, timestamp);
      };
      store.delete = (key) => {
        if (isEntry(key)) this.entryWrites++;
        this.written.add(`${storeName}\u0000${key}`);
        remove.call(store, key);
      };
      this.stores.set(storeName, store);
    }
    return store;
  }
}

export type Shape =
  | "tumbling"
  | "tumbling-on-close"
  | "sliding-on-close"
  | "session"
  | "session-on-close"
  | "suppress"
  | "bounded-suppress"
  | "join"
  | "outer-join";

export const SHAPES: readonly Shape[] = [
  "tumbling",
  "tumbling-on-close",
  "sliding-on-close",
  "session",
  "session-on-close",
  "suppress",
  "bounded-suppress",
  "join",
  "outer-join",
];

/** Whether the shape reads two topics (`in` and `other`). */
const joins = (shape: Shape) => shape === "join" || shape === "outer-join";

const str = { key: Serdes.string(), value: Serdes.string() };

export function shapeTopology(shape: Shape): Topology {
  const builder = new StreamsBuilder();
  const stream = builder.stream("in", str);
  if (joins(shape)) {
    const other = builder.stream("other", str);
    const windows = JoinWindows.ofTimeDifferenceAndGrace(30, 20);
    const joiner = (a: string | null, b: string | null) => `${a}+${b}`;
    (shape === "join" ? stream.join(other, joiner, windows) : stream.outerJoin(other, joiner, windows)).to("out", str);
  } else if (shape === "session" || shape === "session-on-close") {
    const sessions = stream.groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(50, 10));
    (shape === "session" ? sessions : sessions.emitStrategy(EmitStrategy.onWindowClose())).count(Materialized.as("s")).toStream().to("out");
  } else if (shape === "sliding-on-close") {
    stream
      .groupByKey()
      .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(100, 10))
      .emitStrategy(EmitStrategy.onWindowClose())
      .count(Materialized.as("w", { retentionMs: 1_000 }))
      .toStream()
      .to("out");
  } else {
    const windowed = stream.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(100, 10));
    const counted =
      shape === "tumbling-on-close"
        ? windowed.emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as("w", { retentionMs: 1_000 }))
        : windowed.count(Materialized.as("w", { retentionMs: 1_000 }));
    const limited = Suppressed.untilTimeLimit(30, BufferConfig.maxRecords(3));
    const suppressed =
      shape === "suppress" ? counted.suppress(Suppressed.untilWindowCloses()) : shape === "bounded-suppress" ? counted.suppress(limited) : counted;
    suppressed.toStream().to("out");
  }
  return builder.build({ applicationId: "cost", topics: { in: 1, other: 1, out: 1 } });
}

/**
 * The input records: `n` records over 4 keys, 10 ms apart, every seventh 45 ms late; for a join,
 * every third goes to the other side.
 */
export function shapeInput(shape: Shape, n: number): InputRecord[] {
  const offsets = { in: 0, other: 0 };
  return Array.from({ length: n }, (_, i) => {
    const topic = joins(shape) && i % 3 === 2 ? "other" : "in";
    const timestamp = 1_000 + 10 * i - (i % 7 === 6 ? 45 : 0);
    return { topic, partition: 0, offset: offsets[topic]++, key: `k${i % 4}`, value: `v${i}`, timestamp, headers: [] };
  });
}

export interface Cost {
  readonly records: number;
  readonly changelogRecords: number;
  /** Of those: puts of entries (data rows), tombstones of entries, and the rest (index and meta rows, counts). */
  readonly entryPuts: number;
  readonly entryTombstones: number;
  readonly otherRecords: number;
  readonly storeRows: number;
  /** Writes of entries made to the stores. */
  readonly entryWrites: number;
  readonly changelog: OutgoingRecord[];
}

/** Whether a changelog record is of an entry (a data row of a time-keyed store, or an outer join's buffered record). */
const isEntry = (key: string | null) => key !== null && (key.startsWith("d") || key.startsWith("e"));

/** Runs `n` records through a fresh task of the shape, flushing (a commit) every `commitEvery` records. */
export function measure(shape: Shape, n: number, commitEvery = 1): Cost {
  const sent: OutgoingRecord[] = [];
  const stores = new CountingBackend();
  const task = createTaskProcessor(shapeTopology(shape), "0_0", { stores, collector: { send: (r) => void sent.push(r) } });
  const input = shapeInput(shape, n);
  const commit = () => {
    task.flush();
    stores.commit();
  };
  input.forEach((record, i) => {
    task.process(record);
    if ((i + 1) % commitEvery === 0) commit();
  });
  commit();
  const changelog = sent.filter((r) => r.topic.endsWith("-changelog"));
  const entries = changelog.filter((r) => isEntry(r.key));
  return {
    records: n,
    changelogRecords: changelog.length,
    entryPuts: entries.filter((r) => r.value !== null).length,
    entryTombstones: entries.filter((r) => r.value === null).length,
    otherRecords: changelog.length - entries.length,
    storeRows: stores.rowsWritten,
    entryWrites: stores.entryWrites,
    changelog,
  };
}
