/**
 * Sinks' configuration (src/connectors/sink-config.ts): checked when the application is built;
 * what the environment lacks, said by the sink. And what a sink counts against its limits
 * (src/connectors/sink.ts, queue-sink.ts, webhook-sink.ts).
 */
import { describe, expect, it } from "vitest";
import { QUEUE_MESSAGE_OVERHEAD_BYTES, QueueSink } from "../../src/connectors/queue-sink";
import { type SinkRecord, sinkRecord, sinkRecordBytes } from "../../src/connectors/sink";
import { buildSink, checkSinks, type SinkDefinitions } from "../../src/connectors/sink-config";
import { type HttpPost, WebhookSink } from "../../src/connectors/webhook-sink";
import { utf8Length } from "../../src/log/records";

const topics = new Set(["totals", "dead"]);
const check = (sinks: SinkDefinitions) => () => checkSinks(sinks, (topic) => topics.has(topic));

describe("sinks' configuration", () => {
  it("takes a queue sink and a webhook sink", () => {
    expect(
      check({ q: { topic: "totals", queue: "Q" }, h: { topic: "totals", url: "https://example.com/h", secret: "S", deadLetterTopic: "dead" } }),
    ).not.toThrow();
  });

  it.each([
    [{ "bad name!": { topic: "totals", queue: "Q" } }, /sinks.bad name!: a sink's name/],
    [{ s: { topic: "nope", queue: "Q" } }, /sinks.s: unknown topic "nope"/],
    [{ s: { topic: "totals", queue: "Q", url: "https://x", secret: "S" } }, /either a queue .* or a url/],
    [{ s: { topic: "totals", secret: "S" } }, /either a queue .* or a url/],
    [{ s: { topic: "totals", url: "ftp://x", secret: "S" } }, /not an http: or https: URL/],
    [{ s: { topic: "totals", url: "https://x" } }, /secret is the name of the var/],
    [{ s: { topic: "totals", queue: "Q", maxMessageBytes: 200_000 } }, /maxMessageBytes is at most 128000/],
    [{ s: { topic: "totals", queue: "Q", deadLetterTopic: "totals" } }, /cannot go to the topic it delivers/],
    [{ s: { topic: "totals", queue: "Q", retry: { initialMs: 10, maxMs: 5 } } }, /retry is/],
  ] as [SinkDefinitions, RegExp][])("refuses %j", (sinks, error) => {
    expect(check(sinks)).toThrow(error);
  });

  it("builds a sink that fails with the reason when its binding or secret is missing", async () => {
    const post = async () => ({ status: 200, text: async () => "" });
    const queue = buildSink("q", { topic: "totals", queue: "MISSING" }, {}, post);
    expect(await queue.deliver([])).toEqual({ ok: false, retryable: true, error: expect.stringMatching(/no Queue producer binding MISSING/) });
    const hook = buildSink("h", { topic: "totals", urlVar: "URL", secret: "SECRET" }, { URL: "https://example.com" }, post);
    expect(await hook.deliver([])).toMatchObject({ ok: false, error: expect.stringMatching(/no secret SECRET/) });
    expect(buildSink("h", { topic: "totals", urlVar: "URL", secret: "SECRET" }, { URL: "https://example.com", SECRET: "s" }, post).kind).toBe("webhook");
  });
});

describe("what a sink counts against its limits", () => {
  const tp = { topic: 'tötals "x"', partition: 3 };
  const strings = [
    "",
    "plain",
    'quo"te',
    "back\\slash",
    "line\nbreak\ttab\u0001\u001f",
    "del\u007f",
    "é ü ß",
    "日本語",
    "emoji 😀",
    "lone \ud800 surrogate",
    "\u2028\u2029",
  ];
  const records: SinkRecord[] = [];
  for (const [i, text] of strings.entries()) {
    records.push(
      sinkRecord(tp, { offset: i * 1_000_003, key: i % 3 === 0 ? null : text, value: text, timestamp: i === 2 ? -5 : 1_765_000_000_000 + i, headers: [] }),
    );
    records.push(
      sinkRecord(tp, {
        offset: i,
        key: text,
        value: `{"v":${JSON.stringify(text)}}`,
        timestamp: 0,
        headers: strings.slice(0, i % 4).map((h, j) => ({ key: `h${j}${h}`, value: text + h })),
      }),
    );
  }

  it("is each record's JSON, byte for byte, without writing it", () => {
    for (const record of records) expect(sinkRecordBytes(record), JSON.stringify(record)).toBe(utf8Length(JSON.stringify(record)));
  });

  it("a queue's message counts its JSON and Queues' metadata", () => {
    const sink = new QueueSink("Q", { sendBatch: async () => undefined });
    for (const record of records) expect(sink.recordBytes(record)).toBe(utf8Length(JSON.stringify(record)) + QUEUE_MESSAGE_OVERHEAD_BYTES);
    expect(sink.limits).toEqual({ maxRecords: 100, maxBatchBytes: 256_000, maxRecordBytes: 128_000 });
  });

  it("a webhook's batch within its limits is a body of at most maxBytes, the envelope included", async () => {
    let body = "";
    const post: HttpPost = async (_url, init) => {
      body = init.body;
      return { status: 200, text: async () => "" };
    };
    const name = "a-sink-with-a-long-name";
    const counted = records.reduce((sum, r) => sum + new WebhookSink({ sink: name, url: "https://x", secret: "s" }, post).recordBytes(r), 0);
    // maxBytes so that these records fill the batch exactly: the body is then exactly maxBytes.
    for (const maxBytes of [counted + 23 + name.length, 1_000_000]) {
      const sink = new WebhookSink({ sink: name, url: "https://x", secret: "s", maxBytes }, post);
      const fits = records.reduce((sum, r) => sum + sink.recordBytes(r), 0) <= sink.limits.maxBatchBytes;
      expect(fits).toBe(true);
      await sink.deliver(records);
      expect(utf8Length(body)).toBeLessThanOrEqual(maxBytes);
      if (maxBytes < 1_000_000) expect(utf8Length(body)).toBe(maxBytes);
    }
    const tight = new WebhookSink({ sink: name, url: "https://x", secret: "s", maxBytes: counted + 22 + name.length }, post);
    expect(records.reduce((sum, r) => sum + tight.recordBytes(r), 0)).toBeGreaterThan(tight.limits.maxBatchBytes);
  });
});
