/**
 * The bench Worker (`bench/wrangler.toml`), driven over HTTP by `bench/run.mjs`. It hosts the
 * project's real `LogPartition` and hand-written baselines:
 *
 * - `BaselineSqlite` writes the log's record table straight to SQLite. The Worker generates the
 *   records itself and makes the batched RPC calls (`/bench/append`, scenario log-append).
 * - `BaselineTotals` is the example application (orders → per-customer {count, sum}) without the
 *   framework: batches of orders arrive over HTTP (`POST /bench/orders`, the app's ingest body),
 *   the Worker hands each batch to the object by RPC, and the object updates its rows in one
 *   `transactionSync` (scenarios process and http; http also reads its totals back over HTTP,
 *   one customer or a page of a prefix scan).
 *
 * Timing of `/bench/append`: inside workerd clocks only advance across I/O, so each awaited RPC is
 * timed with `Date.now()` around it (the RPC is I/O to the caller) and the records are generated
 * before the timed loop: `rpcMs` is the sum of the calls' durations, nothing else. `/bench/orders`
 * is timed from Node, like the app's ingest.
 */
import { DurableObject } from "cloudflare:workers";
import type { ObjectDirectory } from "../durable-objects/calls";
import { LogPartition as FrameworkLogPartition } from "../durable-objects/log-partition";
import { PartitionStore } from "../src/log/partition-store";
import { topicConfig } from "../src/log/topic-config";
import { DurableLog } from "../src/log/durable-log";
import { partitionForKey } from "../src/log/partitioner";
import { TopicCatalog } from "../src/log/topics";
import { BenchConnectors, benchQueue, type ConnectorsEnv, connectorsRoute } from "./connectors";

/** Nothing subscribes to the bench's partitions, so a partition never calls another object. */
const noObjects: ObjectDirectory = new Proxy({} as ObjectDirectory, {
  get: () => () => {
    throw new Error("the bench Worker hosts no object but log partitions");
  },
});

/** The framework's log partition, as a Worker made by `defineEdgeStreams` exports it, without an application. */
export class LogPartition extends FrameworkLogPartition {
  /** SQLite rows written by this object (each cursor's `rowsWritten`, once the next statement runs: the log consumes each first). */
  private static written = new Map<string, { rows: number; last?: SqlStorageCursor<Record<string, SqlStorageValue>> }>();

  constructor(ctx: DurableObjectState, env: BenchEnv) {
    const count = { rows: 0 } as { rows: number; last?: SqlStorageCursor<Record<string, SqlStorageValue>> };
    const sql = ctx.storage.sql;
    const exec = sql.exec.bind(sql);
    sql.exec = ((query: string, ...bindings: unknown[]) => {
      if (count.last) count.rows += count.last.rowsWritten;
      count.last = exec(query, ...bindings);
      return count.last;
    }) as typeof sql.exec;
    super(ctx, env, noObjects);
    LogPartition.written.set(ctx.id.toString(), count);
  }

  /** Rows written so far (the connectors scenario's rows per record). */
  benchRowsWritten(): number {
    const count = LogPartition.written.get(this.ctx.id.toString())!;
    return count.rows + (count.last?.rowsWritten ?? 0);
  }
}

interface BenchEnv extends Omit<ConnectorsEnv, "BENCH_COMPACTION" | "LOG_PARTITION"> {
  LOG_PARTITION: DurableObjectNamespace<LogPartition>;
  BENCH_COMPACTION: DurableObjectNamespace<BenchCompaction>;
  BENCH_SQLITE: DurableObjectNamespace<BaselineSqlite>;
  BENCH_TOTALS: DurableObjectNamespace<BaselineTotals>;
}

/** Records as the bench sends them: a key, a value, no headers, no timestamp (the store assigns it). */
type BenchRecord = { key: string; value: string };

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS records (
    offset INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, headers TEXT,
    timestamp INTEGER NOT NULL, bytes INTEGER NOT NULL)`;

/**
 * The baseline of log-append: the table `PartitionStore` keeps, written directly, one INSERT per
 * record and one `transactionSync` per batch.
 */
export class BaselineSqlite extends DurableObject<BenchEnv> {
  private next: number;

  constructor(ctx: DurableObjectState, env: BenchEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(SCHEMA);
    const row = ctx.storage.sql.exec<{ next: number }>("SELECT COALESCE(MAX(offset) + 1, 0) AS next FROM records").one();
    this.next = row.next;
  }

  insertRows(records: BenchRecord[]): { baseOffset: number; count: number } {
    const sql = this.ctx.storage.sql;
    return this.ctx.storage.transactionSync(() => {
      const base = this.next;
      const now = Date.now();
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        sql.exec(
          "INSERT INTO records (offset, key, value, headers, timestamp, bytes) VALUES (?, ?, ?, ?, ?, ?)",
          base + i,
          r.key,
          r.value,
          null,
          now,
          r.key.length + r.value.length,
        );
      }
      this.next = base + records.length;
      return { baseOffset: base, count: records.length };
    });
  }

  count(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM records").one().n;
  }
}

/** An order as the baseline receives it: the customer and the amount. */
type Order = { customer: string; amount: number };
type Totals = { count: number; sum: number };

/**
 * The baseline of process: what the example app computes (per customer the count and sum of its
 * orders), hand-written: one upsert per order, one `transactionSync` per batch, no log, no outbox.
 */
export class BaselineTotals extends DurableObject<BenchEnv> {
  constructor(ctx: DurableObjectState, env: BenchEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS totals (
      customer TEXT PRIMARY KEY, count INTEGER NOT NULL, sum REAL NOT NULL) WITHOUT ROWID`);
  }

  /** Adds a batch of orders; returns how many it applied. */
  aggregate(orders: Order[]): number {
    const sql = this.ctx.storage.sql;
    return this.ctx.storage.transactionSync(() => {
      for (const { customer, amount } of orders) {
        sql.exec(
          `INSERT INTO totals (customer, count, sum) VALUES (?, 1, ?)
           ON CONFLICT (customer) DO UPDATE SET count = count + 1, sum = sum + excluded.sum`,
          customer,
          amount,
        );
      }
      return orders.length;
    });
  }

  total(customer: string): Totals | null {
    return this.ctx.storage.sql.exec<Totals>("SELECT count, sum FROM totals WHERE customer = ?", customer).toArray()[0] ?? null;
  }

  /** Up to `limit` customers starting with `prefix` after `cursor` (exclusive), in key order, as the app's store scan pages them. */
  scan(prefix: string, cursor: string | null, limit: number): { items: { key: string; value: Totals }[]; next: string | null } {
    const from = cursor !== null && cursor >= prefix ? cursor : null;
    const rows = this.ctx.storage.sql
      .exec<{ customer: string } & Totals>(
        `SELECT customer, count, sum FROM totals
         WHERE customer >= ? AND (? IS NULL OR customer > ?) AND substr(customer, 1, length(?)) = ?
         ORDER BY customer LIMIT ?`,
        prefix,
        from,
        from,
        prefix,
        prefix,
        limit,
      )
      .toArray();
    const items = rows.map((r) => ({ key: r.customer, value: { count: r.count, sum: r.sum } }));
    return { items, next: items.length === limit ? items[items.length - 1]!.key : null };
  }
}

/** The orders of an ingest body `{"records": [{"key", "value": {"amount"}}]}`, checked by hand. */
function ordersOf(body: unknown): Order[] {
  const records = (body as { records?: unknown } | null)?.records;
  if (!Array.isArray(records) || records.length === 0) throw new RangeError("records is a non-empty array");
  return records.map((record: unknown, i) => {
    const { key, value } = (record ?? {}) as { key?: unknown; value?: { amount?: unknown } | null };
    const amount = value?.amount;
    if (typeof key !== "string" || typeof amount !== "number" || !Number.isFinite(amount)) {
      throw new RangeError(`records[${i}] is not {"key": string, "value": {"amount": number}}`);
    }
    return { customer: key, amount };
  });
}

/**
 * `POST /bench/orders?object=<name>`: applies a batch of orders to a `BaselineTotals` object.
 * `GET /bench/orders/total?object=<name>&key=<customer>`: one customer's totals (or 404).
 * `GET /bench/orders/totals?object=<name>&prefix=&cursor=&limit=`: the customers starting with
 * `prefix`, a page of `limit` (1–1000) after `cursor`, `{"items": [{"key","value"}], "next"}` as
 * the app's `GET /stores/totals/keys` pages them.
 * `GET /bench/keys?partitions=&partition=&count=&prefix=`: the first `count` keys `<prefix><n>`
 * that Kafka's default partitioner (`partitionForKey`) puts on `partition`.
 */
async function ordersRoute(request: Request, url: URL, env: BenchEnv): Promise<Response> {
  if (url.pathname === "/bench/keys") {
    const partitions = intParam(url, "partitions", 4, 1, 10_000);
    const partition = intParam(url, "partition", 0, 0, partitions - 1);
    const count = intParam(url, "count", 1000, 1, 1_000_000);
    const prefix = url.searchParams.get("prefix") ?? "customer-";
    const keys: string[] = [];
    for (let n = 0; keys.length < count; n++) {
      const key = `${prefix}${n}`;
      if (partitionForKey(key, partitions) === partition) keys.push(key);
    }
    return Response.json({ keys });
  }
  const object = url.searchParams.get("object") ?? "totals";
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(object)) throw new RangeError("object must be a short name");
  const stub = env.BENCH_TOTALS.getByName(object);
  if (url.pathname === "/bench/orders" && request.method === "POST") {
    const orders = ordersOf(await request.json());
    return Response.json({ applied: await stub.aggregate(orders) });
  }
  if (url.pathname === "/bench/orders/totals") {
    const limit = intParam(url, "limit", 100, 1, 1000);
    return Response.json(await stub.scan(url.searchParams.get("prefix") ?? "", url.searchParams.get("cursor"), limit));
  }
  if (url.pathname === "/bench/orders/total") {
    const total = await stub.total(url.searchParams.get("key") ?? "");
    return total ? Response.json(total) : Response.json({ error: "no such customer" }, { status: 404 });
  }
  return new Response("not found", { status: 404 });
}

const FILLER = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".repeat(4);
/** Distinct batches prepared up front and cycled through, so generation stays out of the timing. */
const POOL_BATCHES = 8;

/** Record `i`: a 10-byte key and a value of `valueBytes` ASCII bytes (≥ 20). */
function record(i: number, valueBytes: number): BenchRecord {
  const id = String(i).padStart(9, "0");
  const head = `{"id":${id},"p":"`;
  const pad = FILLER.slice(i % 61, (i % 61) + Math.max(0, valueBytes - head.length - 2));
  return { key: `k${id}`, value: `${head}${pad}"}` };
}

function batchPool(batch: number, valueBytes: number): BenchRecord[][] {
  return Array.from({ length: POOL_BATCHES }, (_, b) => Array.from({ length: batch }, (_, j) => record(b * batch + j, valueBytes)));
}

type Append = (records: BenchRecord[]) => Promise<{ baseOffset: number; count: number }>;

/** What the bench can append to: the log, or the baseline object (one row per INSERT). */
const TARGETS = ["log", "sqlite-row"] as const;
type Target = (typeof TARGETS)[number];

function appender(env: BenchEnv, target: Target, run: string): { append: Append; end: () => Promise<number> } {
  if (target === "log") {
    const tp = { topic: `bench-${run}`, partition: 0 };
    const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ [tp.topic]: 1 }));
    return { append: (rs) => log.append(tp, rs), end: async () => (await log.offsets(tp)).latest };
  }
  const stub = env.BENCH_SQLITE.getByName(`${target}-${run}`);
  return { append: (rs) => stub.insertRows(rs), end: () => stub.count() };
}

interface TargetResult {
  records: number;
  batches: number;
  /** Sum of the durations of the timed RPC calls. */
  rpcMs: number;
}

/**
 * Appends `records` records in batches of `batch` to each target, batch by batch in rotating order
 * (so the targets share the same moments and drift hits them alike). Each target first gets one
 * untimed batch on its fresh object (creation, migrations); its final size is checked at the end.
 */
async function drive(env: BenchEnv, targets: Target[], run: string, records: number, batch: number, valueBytes: number) {
  const pool = batchPool(batch, valueBytes);
  const sinks = targets.map((target) => ({ target, ...appender(env, target, run), next: 0, rpcMs: 0 }));
  for (const sink of sinks) {
    const first = await sink.append(pool[0]!);
    sink.next = first.baseOffset + first.count;
  }
  let sent = 0;
  let batches = 0;
  while (sent < records) {
    const full = pool[batches % POOL_BATCHES]!;
    const count = Math.min(batch, records - sent);
    const chunk = count === full.length ? full : full.slice(0, count);
    for (let k = 0; k < sinks.length; k++) {
      const sink = sinks[(batches + k) % sinks.length]!;
      const t0 = Date.now();
      const result = await sink.append(chunk);
      sink.rpcMs += Date.now() - t0;
      if (result.baseOffset !== sink.next || result.count !== count) {
        throw new Error(`${sink.target} returned ${JSON.stringify(result)}; expected base ${sink.next}, count ${count}`);
      }
      sink.next += count;
    }
    sent += count;
    batches++;
  }
  const out: Partial<Record<Target, TargetResult>> = {};
  for (const sink of sinks) {
    const stored = await sink.end();
    if (stored !== sink.next) throw new Error(`${sink.target} holds ${stored} records, expected ${sink.next}`);
    out[sink.target] = { records: sent, batches, rpcMs: sink.rpcMs };
  }
  return out;
}

function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  const value = raw === null ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}]`);
  return value;
}

/**
 * Compaction's throughput on a partition's real storage: `fill` writes `records` updates of `keys`
 * keys to a compacted partition (no alarm: a bare `PartitionStore`), and `compact` runs
 * maintenance passes, within their usual budget, until nothing is left — one RPC, timed by the
 * caller (clocks inside an object only advance across I/O).
 */
export class BenchCompaction extends BenchConnectors {
  private readonly store = new PartitionStore(this.ctx.storage);
  private readonly tp = { topic: "bench-compaction", partition: 0 };

  fill(records: number, keys: number): number {
    this.store.offsets(this.tp);
    this.store.configure(this.tp, topicConfig("changelog"));
    const value = "v".repeat(80);
    for (let start = 0; start < records; start += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, records - start) }, (_, i) => ({ key: `key-${(start + i) % keys}`, value }));
      this.store.append(this.tp, batch);
    }
    return this.store.stats(this.tp).records;
  }

  compact(): { passes: number; records: number } {
    let passes = 0;
    while (this.store.maintain(this.tp, Date.now()).more) passes++;
    return { passes: passes + 1, records: this.store.stats(this.tp).records };
  }
}

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/bench/ping") return new Response("ok");
    if (url.pathname === "/bench/compaction") {
      const records = intParam(url, "records", 200_000, 1, 5_000_000);
      const keys = intParam(url, "keys", 1_000, 1, 1_000_000);
      const stub = env.BENCH_COMPACTION.getByName(`run-${url.searchParams.get("run") ?? "0"}`);
      const filled = await stub.fill(records, keys);
      const t0 = Date.now();
      const result = await stub.compact();
      return Response.json({ filled, ...result, ms: Date.now() - t0 });
    }
    try {
      const connectors = await connectorsRoute(url, env as unknown as ConnectorsEnv, (name) => env.LOG_PARTITION.getByName(name).benchRowsWritten());
      if (connectors) return connectors;
      if (url.pathname.startsWith("/bench/orders") || url.pathname === "/bench/keys") return await ordersRoute(request, url, env);
      const records = intParam(url, "records", 100_000, 1, 10_000_000);
      const batch = intParam(url, "batch", 1000, 1, 10_000);
      const valueBytes = intParam(url, "valueBytes", 90, 20, 100_000);
      const run = url.searchParams.get("run") ?? "0";
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(run)) throw new RangeError("run must be a short name");
      let targets: Target[];
      switch (url.pathname) {
        case "/bench/append": {
          const names = (url.searchParams.get("targets") ?? "log,sqlite-row").split(",");
          if (!names.every((t): t is Target => (TARGETS as readonly string[]).includes(t)) || new Set(names).size !== names.length) {
            throw new RangeError(`targets is a list of distinct ${TARGETS.join(", ")}`);
          }
          targets = names;
          break;
        }
        case "/bench/log-append":
          targets = ["log"];
          break;
        case "/bench/sqlite-insert":
          targets = ["sqlite-row"];
          break;
        default:
          return new Response("not found", { status: 404 });
      }
      const result = await drive(env, targets, run, records, batch, valueBytes);
      return Response.json(result);
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return Response.json({ error: message }, { status: error instanceof RangeError ? 400 : 500 });
    }
  },
  queue: (batch, env) => benchQueue(batch, env as unknown as ConnectorsEnv),
} satisfies ExportedHandler<BenchEnv>;
