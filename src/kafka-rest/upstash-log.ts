/**
 * The log over the Upstash Kafka REST dialect, with the `@upstash/kafka` client: a hosted Kafka
 * (Upstash) or another Edge Streams deployment's `/kafka` endpoint. Runs in Workers and in Node.
 *
 * Failures are bounded: the client retries every failure 6 times (~15 s, 4xx included), so calls
 * go through its HTTP layer with `retries: 0` (reached at runtime, checked, see `kafkaHttpLayer`;
 * without it, the public API runs under the same deadline). Only calls that are safe to repeat
 * (reads and commits) are retried here, briefly, on network errors, 5xx, 408 and 429. Every call,
 * retries included, has a budget (`timeoutMs`, UPSTASH_TIMEOUT_MS); one that spends it is
 * `LogUnavailable` — for an append, that means it may or may not have been written.
 *
 * Guarantees depend on the endpoint:
 * - An Edge Streams `/kafka` endpoint: the `ProducerId` travels in the `edge-producer` header and
 *   is enforced by the same log, so appends are idempotent and fenced exactly as in the embedded
 *   log (a retry with the same producer, epoch and sequence is answered `duplicate`, an older epoch
 *   is `ProducerFenced`); a batch is one atomic append; error codes survive (see
 *   src/kafka-rest/errors.ts); a key of null and a key of "" stay distinct.
 * - A plain Kafka REST endpoint (Upstash): no idempotence and no fencing — the header is stored as
 *   an ordinary header (and removed again on fetch), a retried append may write duplicates,
 *   `duplicate` is always false, a batch's offsets may not be contiguous, errors are typed from
 *   the status only, and a null key may come back as "".
 * Either way: no retention call exists in the dialect (`deleteRecordsBefore` throws
 * `UnsupportedByDialect`), commit metadata is not carried (committed offsets read back with
 * metadata ""), a fetch is trimmed to its bounds here after the endpoint's own bound, and the log
 * is remote: it wakes no reader and starts no task (`UPSTASH_CAPABILITIES`), so readers poll.
 */
import { Kafka } from "@upstash/kafka";
import { InvalidRecord, LogError, LogUnavailable, OffsetOutOfRange, RecordTooLarge } from "../log/errors";
import { checkBatch, recordBytes, utf8Length } from "../log/records";
import type {
  AppendResult,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  Log,
  LogCapabilities,
  LogRecord,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
} from "../log/types";
import { epochInstanceId } from "./commit-epoch";
import type { Message, ProduceMetadata, TopicPartitionOffset } from "./dialect";
import { logErrorFromDialect } from "./errors";
import { EDGE_PRODUCER_HEADER, formatProducerHeader } from "./producer-header";
import { topicPartition } from "../names";

export interface UpstashLogOptions {
  /** The REST URL, e.g. `https://…upstash.io` or `https://edge.example/kafka`. */
  readonly url: string;
  readonly username: string;
  readonly password: string;
  /** Budget of one call, retries included. */
  readonly timeoutMs?: number;
  /** Extra attempts for calls that are safe to repeat. */
  readonly retries?: number;
  /** How long the endpoint may wait for records in a fetch (the dialect's `timeout`). */
  readonly fetchWaitMs?: number;
  /** The consumer instance commits are made as; the dialect wants one, the log has none. */
  readonly instanceId?: string;
  /** Largest request body the endpoint takes (its MAX_BODY_BYTES); a bigger batch cannot be one request. */
  readonly maxRequestBytes?: number;
  /** Use only the client's public API (what happens when its HTTP layer is out of reach). */
  readonly publicApiOnly?: boolean;
}

/** The dialect has no call to delete records, so this backend has no retention. */
export class UnsupportedByDialect extends InvalidRecord {}

/** A remote log tells no one of an append, and the dialect cannot delete records. */
export const UPSTASH_CAPABILITIES: LogCapabilities = { wakesReaders: false, startsTasks: false, deletesRecords: false };

interface Request {
  readonly method: "GET" | "POST";
  readonly path: string[];
  readonly body?: unknown;
}
type Transport = (request: Request) => Promise<unknown>;

type HttpClientLike = {
  get(request: { path: string[]; body?: unknown; retries?: number }): Promise<unknown>;
  post(request: { path: string[]; body?: unknown; retries?: number }): Promise<unknown>;
};

/**
 * The client's HTTP layer (`Kafka#client`, private in its types) when it has the shape this
 * module relies on — `get`/`post` taking `{path, body, retries}` — else null.
 */
export function kafkaHttpLayer(kafka: Kafka): HttpClientLike | null {
  const client = (kafka as unknown as { client?: Partial<HttpClientLike> & { baseUrl?: unknown } }).client;
  if (!client || typeof client.get !== "function" || typeof client.post !== "function" || typeof client.baseUrl !== "string") return null;
  return client as HttpClientLike;
}

/** The same requests through the public API, which retries by itself (bounded by our deadline). */
function publicApi(kafka: Kafka): Transport {
  return async ({ path, body }) => {
    const [call, a = "", b = ""] = path;
    switch (call) {
      case "topics":
        return kafka.admin().topics();
      case "produce":
        return kafka.producer().produceMany(body as never);
      case "fetch":
        return kafka.consumer().fetch(body as never, { parallel: false });
      case "offsets":
        return kafka.admin().topicPartitionOffsets({
          timestamp: a === "earliest" || a === "latest" ? a : Number(a),
          topicPartitions: body as TopicPartition[],
        });
      case "commit":
        return kafka.consumer().commit({ consumerGroupId: a, instanceId: b, offset: body as TopicPartitionOffset });
      case "committed":
        return kafka.consumer().committed({ consumerGroupId: a, instanceId: b, topicPartitions: body as TopicPartition[] });
      default:
        throw new Error(`no public API for ${path.join("/")}`);
    }
  };
}

/** What `@upstash/kafka` throws for an error answer (checked by shape: bundles may hold two copies). */
function dialectStatus(error: unknown): { status: number; message: string } | null {
  if (!(error instanceof Error) || error.name !== "UpstashError") return null;
  const { status, error: message } = error as Error & { status?: unknown; error?: unknown };
  return typeof status === "number" ? { status, message: typeof message === "string" ? message : error.message } : null;
}

const retryableStatus = (status: number) => status >= 500 || status === 408 || status === 429;

function checkOffset(offset: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidRecord(`offset must be a non-negative integer, got ${offset}`);
}

function checkGroup(group: string): void {
  if (typeof group !== "string" || group.length === 0 || group.length > 255) {
    throw new InvalidRecord("a consumer group id is a string of 1 to 255 characters");
  }
}

export class UpstashLog implements Log {
  readonly capabilities = UPSTASH_CAPABILITIES;
  private readonly transport: Transport;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly fetchWaitMs: number;
  private readonly instanceId: string;
  private readonly maxRequestBytes: number;
  /** True when calls go through the client's HTTP layer without its retries. */
  readonly boundedRetries: boolean;

  constructor(options: UpstashLogOptions) {
    const kafka = new Kafka({ url: options.url, username: options.username, password: options.password });
    const layer = options.publicApiOnly ? null : kafkaHttpLayer(kafka);
    this.boundedRetries = layer !== null;
    this.transport = layer
      ? ({ method, path, body }) => (method === "GET" ? layer.get({ path, body, retries: 0 }) : layer.post({ path, body, retries: 0 }))
      : publicApi(kafka);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.fetchWaitMs = options.fetchWaitMs ?? 1_000;
    this.instanceId = options.instanceId ?? "edge-streams-log";
    this.maxRequestBytes = options.maxRequestBytes ?? 1024 * 1024;
  }

  /** Its appends never start this deployment's tasks: external producers' appends are the same. */
  forExternalProducers(): Log {
    return this;
  }

  /** One call within the budget; repeated on transient failures when `safeToRepeat`. */
  private async call<T>(request: Request, safeToRepeat: boolean): Promise<T> {
    const what = `${request.method} /${request.path.join("/")}`;
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      let failure: unknown;
      try {
        return (await this.withDeadline(this.transport(request), deadline, what)) as T;
      } catch (error) {
        failure = error;
      }
      if (failure instanceof LogError) throw failure; // the deadline passed
      const answered = dialectStatus(failure);
      const transient = answered === null || retryableStatus(answered.status);
      const pause = 50 * 4 ** attempt;
      if (!safeToRepeat || !transient || attempt >= this.retries || Date.now() + pause >= deadline) {
        if (answered) throw logErrorFromDialect(answered.status, answered.message);
        throw new LogUnavailable(`${what}: ${failure instanceof Error ? failure.message : String(failure)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  private withDeadline<T>(work: Promise<T>, deadline: number, what: string): Promise<T> {
    // The request cannot be aborted (the client takes no signal); its late outcome is ignored.
    work.catch(() => undefined);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new LogUnavailable(`${what}: no answer within ${this.timeoutMs} ms (an append may or may not have been written)`)),
        Math.max(0, deadline - Date.now()),
      );
    });
    return Promise.race([work, expired]).finally(() => {
      if (timer !== undefined) clearTimeout(timer);
    });
  }

  async topics(): Promise<ReadonlyMap<string, number>> {
    const topics = await this.call<Record<string, number>>({ method: "GET", path: ["topics"] }, true);
    return new Map(Object.entries(topics));
  }

  async append(tp: TopicPartition, records: readonly ProducerRecord[], producer?: ProducerId): Promise<AppendResult> {
    // Checked here as the embedded log checks them: a bad batch costs no call and changes nothing.
    checkBatch(records, Date.now());
    if (records.some((r) => r.headers?.some((h) => h.key === EDGE_PRODUCER_HEADER))) {
      throw new InvalidRecord(`the header name ${EDGE_PRODUCER_HEADER} is reserved`);
    }
    const producerHeader = producer ? [formatProducerHeader(producer)] : [];
    const body = records.map((r) => {
      const headers = [...(r.headers ?? []), ...producerHeader];
      return {
        topic: tp.topic,
        partition: tp.partition,
        value: r.value,
        ...(r.key === null ? {} : { key: r.key }),
        ...(r.timestamp === undefined ? {} : { timestamp: r.timestamp }),
        ...(headers.length ? { headers } : {}),
      };
    });
    // Splitting would break the batch's atomicity, so a batch one request cannot carry is refused.
    const bytes = utf8Length(JSON.stringify(body));
    if (bytes > this.maxRequestBytes) {
      throw new RecordTooLarge(`the batch is ${bytes} bytes as a request; the endpoint takes at most ${this.maxRequestBytes}`);
    }
    // Never repeated here: against a plain endpoint a repeat could duplicate the batch. Callers
    // that append with a ProducerId can retry safely against an Edge Streams endpoint.
    const metadata = await this.call<ProduceMetadata[]>({ method: "POST", path: ["produce"], body }, false);
    const first = Array.isArray(metadata) ? metadata[0] : undefined;
    if (!first || metadata.length !== records.length || typeof first.offset !== "number") {
      throw new LogUnavailable(`produce to ${topicPartition(tp)}: unexpected answer`);
    }
    return { baseOffset: first.offset, count: records.length, duplicate: metadata.every((m) => m.duplicate === true) };
  }

  async fetch(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<FetchResult> {
    checkOffset(offset);
    for (const [name, value] of [
      ["maxRecords", bounds.maxRecords],
      ["maxBytes", bounds.maxBytes],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1) throw new InvalidRecord(`${name} must be a positive integer, got ${value}`);
    }
    // The dialect's fetch does not tell the kept range: ask for it alongside.
    const [range, messages] = await Promise.all([
      this.offsets(tp),
      this.call<Message[]>({ method: "POST", path: ["fetch"], body: { topic: tp.topic, partition: tp.partition, offset, timeout: this.fetchWaitMs } }, true),
    ]);
    const fetched = messages.filter((m) => m.topic === tp.topic && m.partition === tp.partition && m.offset >= offset).sort((a, b) => a.offset - b.offset);
    // Records appended after the offsets call may be fetched: their existence settles the range.
    if (offset < range.earliest || (offset > range.latest && fetched.length === 0)) {
      throw new OffsetOutOfRange(`offset ${offset} is outside ${topicPartition(tp)} [${range.earliest}, ${range.latest}]`);
    }
    const records: LogRecord[] = [];
    let bytes = 0;
    for (const message of fetched) {
      if (records.length >= bounds.maxRecords) break;
      const record = toLogRecord(message);
      const size = recordBytes(record.key, record.value, record.headers);
      if (records.length > 0 && bytes + size > bounds.maxBytes) break;
      bytes += size;
      records.push(record);
    }
    const nextOffset = records.length ? records[records.length - 1]!.offset + 1 : offset;
    return { records, nextOffset, earliest: range.earliest, latest: Math.max(range.latest, nextOffset) };
  }

  private async offsetAt(tp: TopicPartition, at: "earliest" | "latest" | number): Promise<number> {
    const answer = await this.call<TopicPartitionOffset[]>(
      { method: "POST", path: ["offsets", String(at)], body: [{ topic: tp.topic, partition: tp.partition }] },
      true,
    );
    const offset = answer.find((o) => o.topic === tp.topic && o.partition === tp.partition)?.offset;
    if (typeof offset !== "number") throw new LogUnavailable(`offsets of ${topicPartition(tp)}: unexpected answer`);
    return offset;
  }

  async offsets(tp: TopicPartition): Promise<OffsetRange> {
    const [earliest, latest] = await Promise.all([this.offsetAt(tp, "earliest"), this.offsetAt(tp, "latest")]);
    return { earliest, latest };
  }

  async offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<number> {
    if (!Number.isSafeInteger(timestamp)) throw new InvalidRecord("timestamp must be an integer");
    // Every record is at or after a negative time; Kafka answers -1 when none is at or after it.
    const offset = await this.offsetAt(tp, timestamp < 0 ? "earliest" : timestamp);
    return offset >= 0 ? offset : this.offsetAt(tp, "latest");
  }

  async deleteRecordsBefore(tp: TopicPartition): Promise<OffsetRange> {
    throw new UnsupportedByDialect(`cannot delete records of ${topicPartition(tp)}: the Kafka REST dialect has no call for it`);
  }

  async commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Promise<void> {
    checkGroup(group);
    checkOffset(committed.offset);
    // Committing the same offset twice is harmless, so this call may be repeated. Metadata is
    // dropped; the epoch travels as the instance id (an Edge Streams endpoint fences by it).
    const instance = committed.epoch === undefined ? this.instanceId : epochInstanceId(committed.epoch);
    await this.call(
      {
        method: "POST",
        path: ["commit", encodeURIComponent(group), encodeURIComponent(instance)],
        body: { topic: tp.topic, partition: tp.partition, offset: committed.offset },
      },
      true,
    );
  }

  async committedOffset(group: string, tp: TopicPartition): Promise<CommittedOffset | null> {
    checkGroup(group);
    const answer = await this.call<TopicPartitionOffset[]>(
      {
        method: "POST",
        path: ["committed", encodeURIComponent(group), encodeURIComponent(this.instanceId)],
        body: [{ topic: tp.topic, partition: tp.partition }],
      },
      true,
    );
    const offset = answer.find((o) => o.topic === tp.topic && o.partition === tp.partition)?.offset;
    if (typeof offset !== "number") throw new LogUnavailable(`committed offset of ${topicPartition(tp)}: unexpected answer`);
    return offset < 0 ? null : { offset, metadata: "" };
  }
}

function toLogRecord(message: Message): LogRecord {
  return {
    offset: message.offset,
    key: message.key ?? null,
    value: message.value,
    headers: (message.headers ?? []).filter((h) => h.key !== EDGE_PRODUCER_HEADER).map((h) => ({ key: h.key, value: String(h.value ?? "") })),
    timestamp: message.timestamp,
  };
}
