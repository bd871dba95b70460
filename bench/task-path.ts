/**
 * The task's side of the http shape, per record, in Node (`node bench/task-path.mjs` bundles and
 * runs this): what a task instance does with fetched batches of the example's orders — decode
 * them, process them (deserialize, the aggregation over the `totals` store with its held writes,
 * the changelog and output records), and commit (the collector's batches into the outbox,
 * encoded; the held writes into the store's pages) — with the storage calls answered from memory.
 * Not workerd, and no storage commits, RPCs or fetches: a steady figure for the JavaScript those
 * steps run, to compare a change with what it replaces; the app's own CPU per order is
 * `bench/profile.mjs`'s. Not part of `npm run bench`.
 */
import { z } from "zod";
import { decodeBatches, encodeBatch, type EncodedBatch } from "../src/log/record-batch";
import type { Row, SqlCursor, SqlDatabase, SqlValue } from "../src/storage/sql";
import { Sql } from "../src/storage/sql";
import { Materialized } from "../src/streams/dsl/materialized";
import { StreamsBuilder } from "../src/streams/dsl/streams-builder";
import { createTaskProcessor } from "../src/streams/runtime/task-processor";
import type { InputRecord } from "../src/streams/runtime/types";
import { Serdes } from "../src/streams/serdes";
import { Outbox } from "../src/task/outbox";
import { RecordCollector } from "../src/task/record-collector";
import { SqliteStoreBackend } from "../src/task/sqlite-stores";
import { emptyBook, planRow } from "../src/task/task-book";
import type { TaskStorage } from "../src/task/task-storage";
import { partitionForKey } from "../src/log/partitioner";

/** `kv_pages` in a Map: the four statements `SqlPageRows` makes. */
class PagesInMemory implements SqlDatabase {
  private readonly rows = new Map<string, { page: number; first_key: string; entries: string }>();

  exec<T extends Row>(query: string, ...bindings: SqlValue[]): SqlCursor<T> {
    const result = (rows: Row[]) => ({ toArray: () => rows as T[], [Symbol.iterator]: () => (rows as T[])[Symbol.iterator]() });
    if (query.startsWith("SELECT page, first_key")) return result([...this.rows.values()].map(({ page, first_key }) => ({ page, first_key })));
    if (query.startsWith("SELECT entries")) {
      const row = this.rows.get(`${bindings[0]}/${bindings[1]}`);
      return result(row ? [{ entries: row.entries }] : []);
    }
    if (query.startsWith("INSERT INTO kv_pages")) {
      const [store, page, first_key, entries] = bindings as [string, number, string, string];
      this.rows.set(`${store}/${page}`, { page, first_key, entries });
      return result([]);
    }
    if (query.startsWith("DELETE FROM kv_pages")) {
      this.rows.delete(`${bindings[0]}/${bindings[1]}`);
      return result([]);
    }
    throw new Error(`not answered here: ${query}`);
  }
}

// As in workerd, which refuses `new Function`: zod validates without its generated code.
z.config({ jitless: true });

const PARTITIONS = 4;
const Order = z.object({ amount: z.number().min(-1e15).max(1e15) });

function topology() {
  const builder = new StreamsBuilder();
  builder
    .stream("orders", { key: Serdes.string(), value: Serdes.json(Order) })
    .groupByKey()
    .aggregate<{ count: number; sum: number }>(
      () => ({ count: 0, sum: 0 }),
      (_customer, order, totals) => ({ count: totals.count + 1, sum: totals.sum + order.amount }),
      Materialized.as("totals", { value: Serdes.json<{ count: number; sum: number }>(), caching: false }),
    )
    .toStream()
    .to("totals");
  return builder.build({
    applicationId: "edge-streams",
    topics: { orders: PARTITIONS, totals: PARTITIONS, "orders-dead-letters": 1 },
    deadLetterQueueTopic: "orders-dead-letters",
    onDeserializationError: "continue",
    onProcessingError: "continue",
  });
}

/** The input as the log stores it: batches of `batch` orders of partition 0's customers (2,000 customers over 4 partitions). */
function input(records: number, batch: number): EncodedBatch[] {
  const customers: string[] = [];
  for (let n = 0; customers.length < 500; n++) if (partitionForKey(`profile-${n}`, PARTITIONS) === 0) customers.push(`profile-${n}`);
  const batches: EncodedBatch[] = [];
  for (let base = 0; base < records; base += batch) {
    const orders = [];
    for (let i = base; i < base + batch; i++) orders.push({ key: customers[i % customers.length]!, value: JSON.stringify({ amount: 1 + (i % 97) }) });
    batches.push({ base, appendTime: 1_765_000_000_000 + base, records: encodeBatch(orders)!.text });
  }
  return batches;
}

/** Runs `rounds` rounds of `records` each and prints each round; returns ns per record, the fastest and the median of the rounds after the first three (the warm-up). */
export function run(records = 40_000, batch = 125, perCommit = 500, rounds = 5): { min: number; median: number } {
  const timings: number[] = [];
  const batches = input(records, batch);
  const taskId = "0_0";
  for (let round = 0; round < rounds; round++) {
    const scope = { inTransaction: false };
    const stores = new SqliteStoreBackend(new Sql(new PagesInMemory()), undefined, scope);
    const book = emptyBook();
    const storage = { book: () => book, edit: (fn: (b: typeof book) => void) => fn(book), db: undefined } as unknown as TaskStorage;
    const outbox = new Outbox(storage);
    const collector = new RecordCollector(() => PARTITIONS, new Set(["edge-streams-totals-changelog"]));
    const processor = createTaskProcessor(topology(), taskId, { stores, collector, clock: () => 1_765_000_000_000 });
    let commitId = 0;
    let inCommit = 0;
    let bookBytes = 0;
    const started = performance.now();
    for (const encoded of batches) {
      // A fetch: the records of one stored batch, as the task takes them.
      const fetched: InputRecord[] = decodeBatches([encoded]).map((r) => ({ topic: "orders", partition: 0, ...r }));
      scope.inTransaction = true;
      for (const record of fetched) processor.process(record);
      inCommit += fetched.length;
      if (inCommit >= perCommit) {
        processor.flush();
        collector.writeTo(outbox, commitId++);
        stores.flushWrites();
        bookBytes += planRow(book).row.batches.length;
        // Acknowledged at once: the next commit starts an empty outbox.
        for (const b of book.batches) outbox.remove(b.id);
        outbox.seal(commitId);
        inCommit = 0;
      }
      scope.inTransaction = false;
    }
    const ns = (performance.now() - started) * 1e6;
    const sent = processor.metrics;
    if (round >= 3) timings.push(ns / records);
    console.log(
      `round ${round}: ${(ns / records).toFixed(0)} ns per record (${sent.processedRecords} processed, ${commitId} commits, ${(bookBytes / commitId / 1024).toFixed(0)} KiB of batches a commit)`,
    );
  }
  timings.sort((a, b) => a - b);
  return { min: timings[0] ?? Number.NaN, median: timings[timings.length >> 1] ?? Number.NaN };
}
