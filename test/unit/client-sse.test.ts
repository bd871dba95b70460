/** edge-streams/client's pure parts: the streaming server-sent events parser and the back-off. */
import { describe, expect, it } from "vitest";
import { backoffDelay, retryableStatus, retryAfterMs, SseParser } from "edge-streams/client";

const stream = 'event: start\ndata: {"a":1}\n\n: keep-alive\n\ndata: one\nid: t1\n\ndata: two\ndata: lines\n\nevent: snapshot-end\ndata: {}\nid: t2\n\n';

describe("SseParser", () => {
  it("gives the same events whatever the chunks are cut at", () => {
    const whole = new SseParser().push(stream);
    expect(whole).toEqual([
      { event: "start", data: '{"a":1}', id: undefined, hasId: false },
      { event: "message", data: "one", id: "t1", hasId: true },
      // No id line: the last id stays, as EventSource's lastEventId does.
      { event: "message", data: "two\nlines", id: "t1", hasId: false },
      { event: "snapshot-end", data: "{}", id: "t2", hasId: true },
    ]);
    for (let size = 1; size <= 7; size++) {
      const parser = new SseParser();
      const events = [];
      for (let i = 0; i < stream.length; i += size) events.push(...parser.push(stream.slice(i, i + size)));
      expect(events, `chunks of ${size}`).toEqual(whole);
    }
  });

  it("takes CRLF and CR line ends, a CRLF cut between chunks, a byte order mark, and no space after the colon", () => {
    const parser = new SseParser();
    const events = [...parser.push("\ufeffdata:a\r"), ...parser.push("\nid:1\r\n\r\ndata: b\r\r")];
    expect(events).toEqual([
      { event: "message", data: "a", id: "1", hasId: true },
      { event: "message", data: "b", id: "1", hasId: false },
    ]);
  });

  it("dispatches nothing for an event without data, keeps an id given alone, ignores unknown fields and reads retry", () => {
    const parser = new SseParser("t0");
    expect(parser.push("id: t5\n\nfoo: bar\nevent: x\n\n")).toEqual([]);
    expect(parser.push("retry: 1500\ndata: d\n\n")).toEqual([{ event: "message", data: "d", id: "t5", hasId: false, retry: 1500 }]);
  });

  it("forgets a partial event on reset (a connection cut mid-event) but keeps the last id", () => {
    const parser = new SseParser();
    parser.push("data: whole\nid: a\n\ndata: half");
    parser.reset();
    expect(parser.push("data: next\n\n")).toEqual([{ event: "message", data: "next", id: "a", hasId: false }]);
  });
});

describe("back-off", () => {
  it("grows by the factor between half and all of the step, up to the cap", () => {
    const low = () => 0;
    const high = () => 1;
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, { initialMs: 100 }, high))).toEqual([100, 200, 400, 800]);
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, { initialMs: 100 }, low))).toEqual([50, 100, 200, 400]);
    expect(backoffDelay(30, { initialMs: 100, maxMs: 5_000 }, high)).toBe(5_000);
    expect(backoffDelay(0, {}, high)).toBe(500);
  });

  it("reads Retry-After in seconds or as a date; retries what may succeed later only", () => {
    expect(retryAfterMs("3")).toBe(3_000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs("soon")).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
    expect([400, 401, 403, 404, 409].map(retryableStatus)).toEqual([false, false, false, false, false]);
    expect([408, 429, 500, 502, 503].map(retryableStatus)).toEqual([true, true, true, true, true]);
  });
});
