/** Sinks' configuration (src/connectors/sink-config.ts): checked when the application is built; what the environment lacks, said by the sink. */
import { describe, expect, it } from "vitest";
import { buildSink, checkSinks, type SinkDefinitions } from "../../src/connectors/sink-config";

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
