/**
 * The bench Worker's connector half (scenario connectors, bench/scenarios/connectors.mjs), beside
 * hand-written baselines, on miniflare's local Queues and R2 under `wrangler dev`:
 *
 * - Queue source. `bench-source-log` is consumed the framework's way (workers/queue-consumer.ts
 *   without the application lookup: `planQueueBatch`, one `Log.appendUnseen` per partition of the
 *   topic, ack once it resolved); `bench-source-plain` by the minimal hand-written consumer (one
 *   RPC per batch to a Durable Object that INSERTs each message into a plain SQLite table in one
 *   `transactionSync`, then `ackAll`). The same messages go to both queues at once. Each handler's
 *   invocation is timed with `Date.now()` around its awaited work (clocks move across I/O) and the
 *   times summed per queue, as log-append sums its RPCs.
 * - Queue sink. `BenchConnectors` (`sink-<run>`) holds the same records twice: in a partition's real store, delivered
 *   by the framework's `SinkDelivery` with a `QueueSink` (fetch, cut within Queues' limits,
 *   `sendBatch`, commit the position per batch), and in a plain table, read 100 at a time, sent
 *   with `sendBatch` as the same messages (the record and its id), the position kept in a row per
 *   batch. Both back off alike after a refused `sendBatch`. One RPC each, timed by the Worker, each
 *   started once the queue's consumer (which only acknowledges) took everything sent before
 *   (`sinkDrained`: miniflare's broker refuses sends while it holds 10,000 undelivered messages).
 * - Tiered fetch. `BenchConnectors` (`tiered-<run>`, `local-<run>`) fills a partition (tiered to the R2 bucket, every closed row moved)
 *   and another kept local with the same records, then reads each whole from offset 0 through
 *   `RemoteLogManager.fetchEncoded` (a fresh one: no segment cached). One RPC each, timed by the Worker.
 */
import { DurableObject } from "cloudflare:workers";
import type { LogPartition } from "../durable-objects/log-partition";
import { QueueSink } from "../src/connectors/queue-sink";
import { type QueueMessage, planQueueBatch } from "../src/connectors/queue-source";
import { SinkDelivery } from "../src/connectors/sink-delivery";
import { sinkPartition } from "../src/connectors/partition-sinks";
import { DurableLog } from "../src/log/durable-log";
import { PartitionStore } from "../src/log/partition-store";
import { RemoteLogManager } from "../src/log/remote-log-manager";
import { topicConfig } from "../src/log/topic-config";
import { TopicCatalog } from "../src/log/topics";
import type { TopicPartition } from "../src/log/types";
import { backoffDelay } from "../src/util/backoff";

export interface ConnectorsEnv {
  LOG_PARTITION: DurableObjectNamespace<LogPartition>;
  /** Objects of worker.ts' BenchCompaction, a BenchConnectors (no new class: no migration). */
  BENCH_COMPACTION: DurableObjectNamespace<BenchConnectors>;
  BENCH_SOURCE_LOG: Queue;
  BENCH_SOURCE_PLAIN: Queue;
  BENCH_SINK_QUEUE: Queue;
  BENCH_R2: R2Bucket;
}

/** The topic the framework's source appends to, and its partitions (BENCH_QUEUE_PARTITIONS in the scenario). */
export const SOURCE_TOPIC = "bench-queue";

/** What a queue's consumer did so far: messages, invocations, the sum of their times. In the isolate: `wrangler dev` runs one. */
const consumed = new Map<string, { records: number; batches: number; ms: number; duplicates: number }>();
let sourcePartitions = 1;
/** Messages the sink queue's consumer took, and messages the sink runs sent to it (both in the isolate). */
let sinkConsumed = 0;
let sinkSent = 0;
/** How long a sink run waits for the queue to be drained before it starts. */
const SINK_DRAIN_TIMEOUT_MS = 60_000;

/**
 * Waits until the sink queue's consumer took every message sent so far. Miniflare's queue broker
 * sets a timer per message until it is handed to the consumer, and workerd allows an object 10,000
 * active timers: a `sendBatch` into a broker holding that many is refused ("Unknown Internal Error
 * (15000)", a QuotaExceededError in the broker; workers-sdk#15670). Each side starts on an empty
 * queue, so neither pays for the backlog the other left.
 */
async function sinkDrained(): Promise<number> {
  const t0 = Date.now();
  while (sinkConsumed < sinkSent) {
    if (Date.now() - t0 > SINK_DRAIN_TIMEOUT_MS) throw new Error(`sink queue not drained: ${sinkConsumed} of ${sinkSent}`);
    await scheduler.wait(20);
  }
  return Date.now() - t0;
}

/** A message as the bench sends it: a key and a value object. */
type Body = { key: string; value: { id: number; p: string } };

const FILLER = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".repeat(4);
function body(i: number, valueBytes: number): Body {
  return { key: `k${String(i).padStart(9, "0")}`, value: { id: i, p: FILLER.slice(i % 61, (i % 61) + Math.max(0, valueBytes - 20)) } };
}

/** The `queue()` handler of the bench Worker. */
export async function benchQueue(batch: MessageBatch, env: ConnectorsEnv): Promise<void> {
  if (batch.queue === "bench-sink") {
    sinkConsumed += batch.messages.length;
    batch.ackAll();
    return;
  }
  const t0 = Date.now();
  let duplicates = 0;
  if (batch.queue === "bench-source-log") {
    const catalog = new TopicCatalog({ [SOURCE_TOPIC]: sourcePartitions });
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    const messages = batch.messages as readonly Message<Body>[];
    const plan = planQueueBatch(
      batch.queue,
      messages as readonly QueueMessage[],
      { topic: SOURCE_TOPIC },
      {
        serdes: undefined,
        partitions: () => sourcePartitions,
        deadLetterTopic: undefined,
      },
    );
    const byId = new Map(messages.map((m) => [m.id, m]));
    const results = await Promise.all(plan.appends.map(({ topic, partition, records }) => log.appendUnseen({ topic, partition }, records)));
    results.forEach((r, i) => {
      duplicates += r.duplicates ?? 0;
      for (const id of plan.appends[i]!.messageIds) byId.get(id)!.ack();
    });
    for (const { id } of plan.unplaced) byId.get(id)!.retry();
  } else if (batch.queue === "bench-source-plain") {
    const rows = (batch.messages as readonly Message<Body>[]).map((m) => ({
      id: m.id,
      key: m.body.key,
      body: JSON.stringify(m.body.value),
      timestamp: m.timestamp.getTime(),
    }));
    await env.BENCH_COMPACTION.getByName("queue-plain").insert(rows);
    batch.ackAll();
  } else {
    batch.retryAll();
    return;
  }
  const stats = consumed.get(batch.queue) ?? { records: 0, batches: 0, ms: 0, duplicates: 0 };
  stats.records += batch.messages.length;
  stats.batches++;
  stats.ms += Date.now() - t0;
  stats.duplicates += duplicates;
  consumed.set(batch.queue, stats);
}

/** Rows the bench's log partitions wrote (worker.ts counts them); set by worker.ts. */
export type RowsOf = (name: string) => Promise<number>;

/**
 * `POST /bench/queue-source/send?records=&valueBytes=&partitions=`: the same messages to both
 * source queues (sendBatch of 100); `GET /bench/queue-source/stats`: what each consumer did, and
 * the rows written by the source's partitions and the baseline's table.
 */
export async function connectorsRoute(url: URL, env: ConnectorsEnv, rowsOf: RowsOf): Promise<Response | undefined> {
  const int = (name: string, fallback: number) => {
    const v = Number(url.searchParams.get(name) ?? fallback);
    if (!Number.isInteger(v) || v < 1 || v > 10_000_000) throw new RangeError(`${name} must be a positive integer`);
    return v;
  };
  switch (url.pathname) {
    case "/bench/queue-source/send": {
      const records = int("records", 10_000);
      const from = Number(url.searchParams.get("from") ?? 0);
      sourcePartitions = int("partitions", 1);
      const valueBytes = int("valueBytes", 90);
      for (let start = 0; start < records; start += 100) {
        const chunk = Array.from({ length: Math.min(100, records - start) }, (_, i) => ({
          body: body(from + start + i, valueBytes),
          contentType: "json" as const,
        }));
        await Promise.all([env.BENCH_SOURCE_LOG.sendBatch(chunk), env.BENCH_SOURCE_PLAIN.sendBatch(chunk)]);
      }
      return Response.json({ sent: records });
    }
    case "/bench/queue-source/stats": {
      let logRows = 0;
      for (let p = 0; p < sourcePartitions; p++) logRows += await rowsOf(`${SOURCE_TOPIC}/${p}`);
      return Response.json({
        log: consumed.get("bench-source-log") ?? null,
        plain: consumed.get("bench-source-plain") ?? null,
        logRowsWritten: logRows,
        plainRowsWritten: await env.BENCH_COMPACTION.getByName("queue-plain").written(),
      });
    }
    case "/bench/queue-sink": {
      const records = int("records", 10_000);
      const run = url.searchParams.get("run") ?? "0";
      const stub = env.BENCH_COMPACTION.getByName(`sink-${run}`);
      await stub.sinkFill(records, int("valueBytes", 90));
      const out: Record<string, { records: number; failures: number; errors: string[]; ms: number; drainMs: number }> = {};
      const order = (url.searchParams.get("order") ?? "log,plain").split(",");
      for (const target of order) {
        const drainMs = await sinkDrained();
        const t0 = Date.now();
        const n = target === "log" ? await stub.deliverFramework() : await stub.deliverPlain();
        out[target] = { ...n, ms: Date.now() - t0, drainMs };
        sinkSent += n.records;
      }
      return Response.json(out);
    }
    case "/bench/tiered-fetch": {
      const records = int("records", 100_000);
      const run = url.searchParams.get("run") ?? "0";
      const tiered = env.BENCH_COMPACTION.getByName(`tiered-${run}`);
      const local = env.BENCH_COMPACTION.getByName(`local-${run}`);
      const filled = await Promise.all([tiered.tieredFill(records, true), local.tieredFill(records, false)]);
      const out: Record<string, unknown> = { filled };
      const order = (url.searchParams.get("order") ?? "tiered,local").split(",");
      for (const target of order) {
        const t0 = Date.now();
        const n = await (target === "tiered" ? tiered : local).readAll();
        out[target] = { records: n, ms: Date.now() - t0 };
      }
      return Response.json(out);
    }
    default:
      return undefined;
  }
}

const SINK_TP: TopicPartition = { topic: "bench-sink", partition: 0 };
/** Both producers' back-off after a refused sendBatch. */
const SINK_RETRY = { initialMs: 100, maxMs: 1000 };

const TIERED_TP: TopicPartition = { topic: "bench-tiered", partition: 0 };

/**
 * The connectors scenario's objects, each used in one role by its name: `queue-plain` the
 * hand-written consumer's table (one row per message); `sink-<run>` the same records in a
 * partition's store (delivered by the framework's sink) and in a plain table (sent by hand);
 * `tiered-<run>` / `local-<run>` a partition tiered to R2 or kept local. worker.ts'
 * BenchCompaction extends it, so the bench adds no Durable Object class.
 */
export class BenchConnectors extends DurableObject<ConnectorsEnv> {
  private partitionStore: PartitionStore | undefined;
  private rowsWritten = 0;

  private get logStore(): PartitionStore {
    this.partitionStore ??= new PartitionStore(this.ctx.storage);
    return this.partitionStore;
  }

  insert(messages: { id: string; key: string; body: string; timestamp: number }[]): number {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS messages (id TEXT NOT NULL, key TEXT, body TEXT NOT NULL, timestamp INTEGER NOT NULL)");
    this.ctx.storage.transactionSync(() => {
      for (const m of messages) this.rowsWritten += sql.exec("INSERT INTO messages VALUES (?, ?, ?, ?)", m.id, m.key, m.body, m.timestamp).rowsWritten;
    });
    return messages.length;
  }

  /** Rows the hand-written consumer wrote. */
  written(): number {
    return this.rowsWritten;
  }

  sinkFill(records: number, valueBytes: number): number {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, timestamp INTEGER NOT NULL)");
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS outbox_position (only INTEGER PRIMARY KEY, next INTEGER NOT NULL)");
    const store = this.logStore;
    store.offsets(SINK_TP);
    store.configure(SINK_TP, topicConfig("user"));
    const now = Date.now();
    for (let start = 0; start < records; start += 100) {
      const batch = Array.from({ length: Math.min(100, records - start) }, (_, i) => {
        const b = body(start + i, valueBytes);
        return { key: b.key, value: JSON.stringify(b.value), timestamp: now };
      });
      store.append(SINK_TP, batch);
      this.ctx.storage.transactionSync(() => {
        for (const [i, r] of batch.entries()) this.ctx.storage.sql.exec("INSERT INTO outbox VALUES (?, ?, ?, ?)", start + i, r.key, r.value, r.timestamp);
      });
    }
    return records;
  }

  /** Records delivered, and the sendBatch calls refused (each retried, with their errors). */
  async deliverFramework(): Promise<{ records: number; failures: number; errors: string[] }> {
    const errors: string[] = [];
    const queue = this.env.BENCH_SINK_QUEUE;
    const producer = {
      sendBatch: (messages: Iterable<MessageSendRequest>) =>
        queue.sendBatch(messages).catch((error: unknown) => {
          errors.push(String(error));
          throw error;
        }),
    };
    const delivery = new SinkDelivery(
      { name: "bench", sink: new QueueSink("BENCH_SINK_QUEUE", producer), deadLetterTopic: undefined, retry: SINK_RETRY },
      sinkPartition(
        this.logStore,
        SINK_TP,
        async () => {},
        async () => {},
      ),
    );
    for (;;) {
      const next = await delivery.run(Date.now(), Date.now() + 600_000);
      if (next === undefined) break;
      // A refused sendBatch (see sinkDrained): the sink backs off and sends the same batch again.
      if (next > Date.now()) await scheduler.wait(next - Date.now());
    }
    const { position, failures } = delivery.status();
    return { records: position, failures, errors };
  }

  /**
   * The hand-written producer doing the same work: read the next 100 records from a plain table,
   * send each as the same message the sink sends (the record with its id), then keep the position
   * (one row per batch: a producer that resumes after a crash needs it); a refused `sendBatch` is
   * sent again after the same back-off as the sink's.
   */
  async deliverPlain(): Promise<{ records: number; failures: number; errors: string[] }> {
    const sql = this.ctx.storage.sql;
    const errors: string[] = [];
    let failuresInRow = 0;
    for (;;) {
      const next = sql.exec<{ next: number }>("SELECT next FROM outbox_position WHERE only = 1").toArray()[0]?.next ?? 0;
      const rows = sql
        .exec<{ seq: number; key: string; value: string; timestamp: number }>(
          "SELECT seq, key, value, timestamp FROM outbox WHERE seq >= ? ORDER BY seq LIMIT 100",
          next,
        )
        .toArray();
      if (rows.length === 0) return { records: next, failures: errors.length, errors };
      const messages = rows.map((r) => ({
        body: {
          id: `${SINK_TP.topic}/${SINK_TP.partition}/${r.seq}`,
          ...SINK_TP,
          offset: r.seq,
          timestamp: r.timestamp,
          key: r.key,
          value: r.value,
          headers: [],
        },
        contentType: "json" as const,
      }));
      try {
        await this.env.BENCH_SINK_QUEUE.sendBatch(messages);
      } catch (error) {
        errors.push(String(error));
        await scheduler.wait(backoffDelay(SINK_RETRY.initialMs, SINK_RETRY.maxMs, failuresInRow++));
        continue;
      }
      failuresInRow = 0;
      sql.exec("INSERT INTO outbox_position (only, next) VALUES (1, ?) ON CONFLICT (only) DO UPDATE SET next = excluded.next", next + rows.length);
    }
  }

  /** A partition filled with the records, tiered to R2 (all but its newest row) or kept local. */
  async tieredFill(records: number, tiered: boolean): Promise<{ records: number; segments: number }> {
    const store = this.logStore;
    store.offsets(TIERED_TP);
    store.configure(TIERED_TP, tiered ? topicConfig("user", { "remote.storage.enable": true, "local.retention.bytes": 0 }) : topicConfig("user"));
    const now = Date.now();
    for (let start = 0; start < records; start += 100) {
      const batch = Array.from({ length: Math.min(100, records - start) }, (_, i) => {
        const b = body(start + i, 90);
        return { key: b.key, value: JSON.stringify(b.value), timestamp: now };
      });
      store.append(TIERED_TP, batch);
    }
    if (tiered) {
      const remote = new RemoteLogManager(store, this.env.BENCH_R2, "bench");
      while ((await remote.maintain(TIERED_TP, Date.now())).more);
    }
    return { records, segments: store.stats(TIERED_TP).remote?.segments ?? 0 };
  }

  /** Reads the partition whole from offset 0 (a fresh remote log manager: no segment cached). */
  async readAll(): Promise<number> {
    const remote = new RemoteLogManager(this.logStore, this.env.BENCH_R2, "bench");
    let offset = 0;
    let read = 0;
    for (;;) {
      const fetched = await remote.fetchEncoded(TIERED_TP, offset, { maxRecords: 1000, maxBytes: 1 << 20 });
      read += fetched.nextOffset - offset;
      if (fetched.nextOffset >= fetched.latest) return read;
      offset = fetched.nextOffset;
    }
  }
}
