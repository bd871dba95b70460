/**
 * The bench Worker (`bench/wrangler.toml`), driven over HTTP by `bench/run.mjs`. It hosts the
 * project's real `LogPartition` and a minimal baseline Durable Object writing the same table
 * straight to SQLite, generates the records itself and makes the batched RPC calls.
 *
 * Timing: inside workerd clocks only advance across I/O, so each awaited RPC is timed with
 * `Date.now()` around it (the RPC is I/O to the caller) and the records are generated before the
 * timed loop: `rpcMs` is the sum of the calls' durations, nothing else.
 */
import { DurableObject } from "cloudflare:workers";
import { LogPartition } from "../durable-objects/log-partition";
import { DurableLog } from "../src/log/durable-log";
import { PartitionStore } from "../src/log/partition-store";
import { checkBatch } from "../src/log/records";
import { TopicCatalog } from "../src/log/topics";

export { LogPartition };

interface BenchEnv {
  LOG_PARTITION: DurableObjectNamespace<LogPartition>;
  BENCH_SQLITE: DurableObjectNamespace<BaselineSqlite>;
  BENCH_LOG_VARIANT: DurableObjectNamespace<LogAppendVariant>;
}

/** Records as the bench sends them: a key, a value, no headers, no timestamp (the store assigns it). */
type BenchRecord = { key: string; value: string };

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS records (
    offset INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, headers TEXT,
    timestamp INTEGER NOT NULL, bytes INTEGER NOT NULL)`;

/** Bound parameters per row, and rows per multi-row INSERT within the platform's 100-parameter limit. */
const COLUMNS = 6;
const ROWS_PER_STATEMENT = Math.floor(100 / COLUMNS);

/**
 * The baseline: the table `PartitionStore` keeps, written directly, one `transactionSync` per
 * batch. `insertRows` runs one INSERT per record (what the log does), `insertMulti` packs
 * `ROWS_PER_STATEMENT` records per INSERT (a variant, to size what the log could gain).
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
          base + i, r.key, r.value, null, now, r.key.length + r.value.length,
        );
      }
      this.next = base + records.length;
      return { baseOffset: base, count: records.length };
    });
  }

  insertMulti(records: BenchRecord[]): { baseOffset: number; count: number } {
    const sql = this.ctx.storage.sql;
    return this.ctx.storage.transactionSync(() => {
      const base = this.next;
      const now = Date.now();
      for (let start = 0; start < records.length; start += ROWS_PER_STATEMENT) {
        const end = Math.min(start + ROWS_PER_STATEMENT, records.length);
        const values: (string | number | null)[] = [];
        for (let i = start; i < end; i++) {
          const r = records[i]!;
          values.push(base + i, r.key, r.value, null, now, r.key.length + r.value.length);
        }
        sql.exec(multiRowInsert(end - start), ...values);
      }
      this.next = base + records.length;
      return { baseOffset: base, count: records.length };
    });
  }

  count(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM records").one().n;
  }
}

/**
 * A variant of the log's append path, to size a change to `PartitionStore.append` without
 * touching it: the real schema (made by `PartitionStore`), the same validation (`checkBatch`) and
 * `partition_meta` read and update per batch, but `ROWS_PER_STATEMENT` records per INSERT.
 * No producer ids (the bench sends none).
 */
export class LogAppendVariant extends DurableObject<BenchEnv> {
  constructor(ctx: DurableObjectState, env: BenchEnv) {
    super(ctx, env);
    new PartitionStore(ctx.storage); // applies the log's migrations
  }

  append(topic: string, records: BenchRecord[]): { baseOffset: number; count: number } {
    const sql = this.ctx.storage.sql;
    const checked = checkBatch(records, Date.now());
    return this.ctx.storage.transactionSync(() => {
      const meta = sql.exec<{ log_end: number }>("SELECT log_end FROM partition_meta WHERE only = 1").toArray()[0];
      if (!meta) sql.exec("INSERT INTO partition_meta (only, topic, partition, log_start, log_end) VALUES (1, ?, 0, 0, 0)", topic);
      const base = meta?.log_end ?? 0;
      for (let start = 0; start < checked.length; start += ROWS_PER_STATEMENT) {
        const end = Math.min(start + ROWS_PER_STATEMENT, checked.length);
        const values: (string | number | null)[] = [];
        for (let i = start; i < end; i++) {
          const r = checked[i]!;
          values.push(base + i, r.key, r.value, r.headers.length ? JSON.stringify(r.headers) : null, r.timestamp, r.bytes);
        }
        sql.exec(multiRowInsert(end - start), ...values);
      }
      sql.exec("UPDATE partition_meta SET log_end = ? WHERE only = 1", base + checked.length);
      return { baseOffset: base, count: checked.length };
    });
  }

  end(): number {
    return this.ctx.storage.sql.exec<{ log_end: number }>("SELECT log_end FROM partition_meta WHERE only = 1").one().log_end;
  }
}

const multiRowTexts = new Map<number, string>();
function multiRowInsert(rows: number): string {
  let text = multiRowTexts.get(rows);
  if (!text) {
    text = "INSERT INTO records (offset, key, value, headers, timestamp, bytes) VALUES " +
      Array.from({ length: rows }, () => "(?, ?, ?, ?, ?, ?)").join(", ");
    multiRowTexts.set(rows, text);
  }
  return text;
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

/**
 * What the bench can append to: the log; the baseline object with one or many rows per INSERT;
 * the log's append path with many rows per INSERT (`LogAppendVariant`).
 */
const TARGETS = ["log", "sqlite-row", "sqlite-multi", "log-multi"] as const;
type Target = (typeof TARGETS)[number];

function appender(env: BenchEnv, target: Target, run: string): { append: Append; end: () => Promise<number> } {
  if (target === "log") {
    const tp = { topic: `bench-${run}`, partition: 0 };
    const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ [tp.topic]: 1 }));
    return { append: (rs) => log.append(tp, rs), end: async () => (await log.offsets(tp)).latest };
  }
  if (target === "log-multi") {
    const stub = env.BENCH_LOG_VARIANT.getByName(`${target}-${run}`);
    return { append: (rs) => stub.append(`bench-${run}`, rs), end: () => stub.end() };
  }
  const stub = env.BENCH_SQLITE.getByName(`${target}-${run}`);
  const append: Append = target === "sqlite-row" ? (rs) => stub.insertRows(rs) : (rs) => stub.insertMulti(rs);
  return { append, end: () => stub.count() };
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

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/bench/ping") return new Response("ok");
    try {
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
        case "/bench/sqlite-insert": {
          const mode = url.searchParams.get("mode") ?? "row";
          if (mode !== "row" && mode !== "multi") throw new RangeError("mode is row or multi");
          targets = [`sqlite-${mode}`];
          break;
        }
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
} satisfies ExportedHandler<BenchEnv>;
