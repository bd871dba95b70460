/**
 * How sinks are configured (`defineEdgeStreams(topology, { sinks })`, docs/configuration.md#sinks):
 * sink name → a topic and where its records go — a Queue producer binding, or a webhook URL and
 * the name of the var holding its secret. Checked when the application is built (`checkSinks`);
 * what only the environment can say (the binding, the secret) when a partition builds its sinks
 * (`buildSink`): a sink missing its binding or secret delivers nothing and says why, its records
 * kept until it is fixed.
 */
import { ConfigError } from "../config-error";
import { QUEUE_MAX_MESSAGE_BYTES, QueueSink, type QueueProducer } from "./queue-sink";
import { MisconfiguredSink, type Sink } from "./sink";
import { type HttpPost, WebhookSink } from "./webhook-sink";

/** The delays between retries of a failing delivery: `initialMs`, doubled each time, at most `maxMs`. */
export interface RetryPolicy {
  readonly initialMs?: number;
  readonly maxMs?: number;
}

interface CommonSinkDefinition {
  /** The topic delivered: every partition of it, each in offset order. */
  readonly topic: string;
  /** Where records the sink cannot deliver go (as dead letters): default, the topology's `deadLetterQueueTopic`. */
  readonly deadLetterTopic?: string;
  readonly retry?: RetryPolicy;
}

export interface QueueSinkDefinition extends CommonSinkDefinition {
  /** The `[[queues.producers]]` binding of the Queue. */
  readonly queue: string;
  /** A message larger than this (its JSON plus 100 bytes) is dead-lettered; at most and by default 128,000 (Queues' limit). */
  readonly maxMessageBytes?: number;
}

export interface WebhookSinkDefinition extends CommonSinkDefinition {
  /** The URL POSTed to (`http:` or `https:`); or `urlVar`, the var holding it. */
  readonly url?: string;
  readonly urlVar?: string;
  /** The name of the var (a secret: `wrangler secret put`) whose value signs each request. */
  readonly secret: string;
  /** Records per request: default 100. */
  readonly maxRecords?: number;
  /** Bytes per request body: default 1,000,000 (a record larger is dead-lettered). */
  readonly maxBytes?: number;
  /** A request not answered within this is a failure (retried): default 10,000. */
  readonly timeoutMs?: number;
}

export type SinkDefinition = QueueSinkDefinition | WebhookSinkDefinition;
export type SinkDefinitions = Readonly<Record<string, SinkDefinition>>;

export const DEFAULT_RETRY: Required<RetryPolicy> = { initialMs: 1_000, maxMs: 300_000 };
const SINK_NAME = /^[A-Za-z0-9._-]{1,100}$/;
const URL_PATTERN = /^https?:\/\/[^/?#\s]+/;

export function isQueueSink(definition: SinkDefinition): definition is QueueSinkDefinition {
  return "queue" in definition && definition.queue !== undefined;
}

export function retryPolicy(definition: SinkDefinition): Required<RetryPolicy> {
  return { ...DEFAULT_RETRY, ...definition.retry };
}

/**
 * Throws `ConfigError` for a sink whose name, topic, kind or bounds are wrong: `hasTopic` says
 * which topics the application has.
 */
export function checkSinks(sinks: SinkDefinitions, hasTopic: (topic: string) => boolean): void {
  for (const [name, definition] of Object.entries(sinks)) {
    const fail = (message: string): never => {
      throw new ConfigError(`sinks.${name}: ${message}`);
    };
    if (!SINK_NAME.test(name)) fail("a sink's name is 1 to 100 letters, digits, '.', '_' or '-'");
    if (typeof definition !== "object" || definition === null) fail("a sink is { topic, queue } or { topic, url, secret }");
    if (!hasTopic(definition.topic)) fail(`unknown topic ${JSON.stringify(definition.topic)}`);
    if (definition.deadLetterTopic !== undefined && !hasTopic(definition.deadLetterTopic))
      fail(`unknown deadLetterTopic ${JSON.stringify(definition.deadLetterTopic)}`);
    if (definition.deadLetterTopic === definition.topic) fail("a sink's dead letters cannot go to the topic it delivers");
    const { initialMs, maxMs } = retryPolicy(definition);
    if (!positiveInteger(initialMs) || !positiveInteger(maxMs) || maxMs < initialMs)
      fail("retry is { initialMs, maxMs }: positive integers, maxMs ≥ initialMs");
    const web = definition as WebhookSinkDefinition;
    const queue = isQueueSink(definition);
    const hasUrl = web.url !== undefined || web.urlVar !== undefined;
    if (queue === hasUrl) fail("a sink names either a queue (its binding) or a url (or urlVar), not both");
    if (queue) {
      if (typeof definition.queue !== "string" || definition.queue === "") fail("queue is the name of a [[queues.producers]] binding");
      const max = definition.maxMessageBytes;
      if (max !== undefined && (!positiveInteger(max) || max > QUEUE_MAX_MESSAGE_BYTES)) fail(`maxMessageBytes is at most ${QUEUE_MAX_MESSAGE_BYTES}`);
      continue;
    }
    if (web.url !== undefined && web.urlVar !== undefined) fail("url and urlVar: give one");
    if (web.url !== undefined && !URL_PATTERN.test(web.url)) fail(`url ${JSON.stringify(web.url)} is not an http: or https: URL`);
    if (typeof web.secret !== "string" || web.secret === "") fail("secret is the name of the var (a secret) that signs requests");
    for (const [key, value] of [
      ["maxRecords", web.maxRecords],
      ["maxBytes", web.maxBytes],
      ["timeoutMs", web.timeoutMs],
    ] as const) {
      if (value !== undefined && !positiveInteger(value)) fail(`${key} is a positive integer`);
    }
  }
}

function positiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/**
 * The sink of a definition in an environment (the Worker's bindings and vars). A missing or wrong
 * binding, URL or secret makes a `MisconfiguredSink`: every delivery fails with the reason.
 */
export function buildSink(name: string, definition: SinkDefinition, env: Readonly<Record<string, unknown>>, post: HttpPost): Sink {
  if (isQueueSink(definition)) {
    const binding = env[definition.queue] as Partial<QueueProducer> | undefined;
    if (typeof binding?.sendBatch !== "function") {
      return new MisconfiguredSink(
        "queue",
        definition.queue,
        `sinks.${name}: no Queue producer binding ${definition.queue} (add it under [[queues.producers]])`,
      );
    }
    return new QueueSink(definition.queue, binding as QueueProducer, definition.maxMessageBytes);
  }
  const url = definition.url ?? env[definition.urlVar!];
  const target = definition.url ?? `$${definition.urlVar}`;
  if (typeof url !== "string" || !URL_PATTERN.test(url)) {
    return new MisconfiguredSink("webhook", target, `sinks.${name}: var ${definition.urlVar} is not an http: or https: URL`);
  }
  const secret = env[definition.secret];
  if (typeof secret !== "string" || secret === "") {
    return new MisconfiguredSink("webhook", target, `sinks.${name}: no secret ${definition.secret} (wrangler secret put ${definition.secret})`);
  }
  return new WebhookSink({ sink: name, url, secret, maxRecords: definition.maxRecords, maxBytes: definition.maxBytes, timeoutMs: definition.timeoutMs }, post);
}
