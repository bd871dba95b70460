/**
 * edge-streams/client's reconnection rules, with a scripted `fetch` (the real Worker is in
 * test/client.test.ts and test/node/client-browser.test.ts): resume with Last-Event-ID, no retry
 * where a retry cannot help, Retry-After honoured, snapshots assembled and marked.
 */
import { describe, expect, it } from "vitest";
import { type TailEvent, tail, type WatchEvent, watch, watchPrefix } from "edge-streams/client";
import { until } from "../support/until";

type Step = { status?: number; body?: string; headers?: Record<string, string> } | "network-error";

/** A fetch that answers the scripted steps in turn (the last forever) and records each request's headers. */
function scripted(steps: Step[]) {
  const calls: { url: string; headers: Record<string, string> }[] = [];
  const fetch = async (url: string, init: { headers: Record<string, string> }) => {
    calls.push({ url, headers: init.headers });
    const step = steps[Math.min(calls.length - 1, steps.length - 1)]!;
    if (step === "network-error") throw new TypeError("fetch failed");
    const status = step.status ?? 200;
    const headers = { "Content-Type": status === 200 ? "text/event-stream" : "application/json", ...step.headers };
    return new Response(step.body ?? "", { status, headers });
  };
  return { fetch, calls };
}

const options = (fetch: unknown) => ({
  baseUrl: "http://edge.test",
  token: "tok",
  fetch: fetch as typeof globalThis.fetch,
  backoff: { initialMs: 1, maxMs: 5 },
});

describe("the client's connection", () => {
  it("starts from a snapshot, and after the stream ends resumes with Last-Event-ID: changes only", async () => {
    const { fetch, calls } = scripted([
      { body: 'data: {"key":"a","value":{"count":1}}\nid: t1\n\ndata: {"key":"a","value":{"count":2}}\nid: t2\n\n' },
      { body: 'data: {"key":"a","value":{"count":3}}\nid: t3\n\n' },
      { status: 503, headers: { "Retry-After": "60" }, body: '{"error":"unavailable","message":"busy"}' },
    ]);
    const events: WatchEvent<{ count: number }>[] = [];
    const sub = watch<{ count: number }>("totals", "a/b", (e) => events.push(e), options(fetch));
    await until(async () => events.some((e) => e.type === "error" && e.error.status === 503), 5_000, "the 503");
    sub.close();
    expect(await sub.finished).toBeUndefined();
    expect(calls[0]).toEqual({ url: "http://edge.test/stores/totals/keys/a%2Fb/watch", headers: { Accept: "text/event-stream", Authorization: "Bearer tok" } });
    expect(calls[1]!.headers["Last-Event-ID"]).toBe("t2");
    expect(calls[2]!.headers["Last-Event-ID"]).toBe("t3");
    const data = events.filter((e) => e.type !== "error");
    expect(data).toEqual([
      { type: "snapshot", reason: "initial", entries: [{ key: "a", value: { count: 1 } }], id: "t1" },
      { type: "change", key: "a", value: { count: 2 }, id: "t2" },
      { type: "change", key: "a", value: { count: 3 }, id: "t3" },
    ]);
    const busy = events.find((e) => e.type === "error" && e.error.status === 503);
    expect(busy).toMatchObject({ error: { code: "unavailable", message: "busy" } });
    // Retry-After (60 s) wins over the tiny back-off.
    expect(busy?.type === "error" && busy.retryInMs).toBe(60_000);
    expect(sub.lastEventId).toBe("t3");
  });

  it("does not retry 400, 401, 403 or 404: it reports the error and ends", async () => {
    for (const status of [400, 401, 403, 404]) {
      const { fetch, calls } = scripted([{ status, body: `{"error":"e${status}","message":"no"}` }]);
      const events: WatchEvent[] = [];
      const sub = watch("totals", "a", (e) => events.push(e), { ...options(fetch), lastEventId: "old" });
      const error = await sub.finished;
      expect(error).toMatchObject({ status, code: `e${status}`, message: "no" });
      expect(calls.length).toBe(1);
      expect(calls[0]!.headers["Last-Event-ID"]).toBe("old");
      expect(events).toEqual([{ type: "error", error, retryInMs: undefined }]);
    }
  });

  it("retries network failures and an `event: error` from the server, with the id it had", async () => {
    const { fetch, calls } = scripted([
      "network-error",
      { body: "data: {}\nid: x1\n\nevent: error\ndata: boom\n\n" },
      { status: 502 },
      { body: 'data: {"key":"k","value":null}\nid: x2\n\n' },
    ]);
    const events: WatchEvent[] = [];
    const sub = watch("totals", "k", (e) => events.push(e), options(fetch));
    await until(async () => events.filter((e) => e.type === "change").length >= 1, 5_000, "a change after three failures");
    sub.close();
    expect(calls.slice(0, 5).map((c) => c.headers["Last-Event-ID"])).toEqual([undefined, undefined, "x1", "x1", "x2"]);
    const errors = events.filter((e) => e.type === "error");
    expect(errors.slice(0, 3).map((e) => e.error.message)).toEqual([expect.stringContaining("fetch failed"), expect.stringContaining("boom"), "HTTP 502"]);
    expect(errors.every((e) => e.retryInMs !== undefined)).toBe(true);
  });

  it("assembles a prefix snapshot, marks a resync, and starts a snapshot cut off midway again", async () => {
    const { fetch } = scripted([
      // Cut off in the middle of the first snapshot: nothing delivered.
      { body: 'data: {"key":"p1","value":1}\n\n' },
      {
        body: 'data: {"key":"p1","value":1}\n\ndata: {"key":"p2","value":2}\n\nevent: snapshot-end\ndata: {"prefix":"p","keys":2}\nid: s1\n\ndata: {"key":"p1","value":5}\nid: s2\n\nevent: resync\ndata: {"reason":"compacted"}\n\nevent: snapshot\ndata: {"key":"p2","value":7}\n\nevent: snapshot-end\ndata: {"prefix":"p","keys":1}\nid: s3\n\n',
      },
      // A resume whose token is too old: a marked snapshot, no resync before it.
      { body: 'event: snapshot-end\ndata: {"prefix":"p","keys":0}\nid: s4\n\n' },
      { status: 404 },
    ]);
    const events: WatchEvent<number>[] = [];
    const sub = watchPrefix<number>("totals", "p", (e) => events.push(e), options(fetch));
    await sub.finished;
    expect(events.filter((e) => e.type !== "error")).toEqual([
      {
        type: "snapshot",
        reason: "initial",
        entries: [
          { key: "p1", value: 1 },
          { key: "p2", value: 2 },
        ],
        id: "s1",
      },
      { type: "change", key: "p1", value: 5, id: "s2" },
      { type: "snapshot", reason: "resync", entries: [{ key: "p2", value: 7 }], id: "s3" },
      { type: "snapshot", reason: "resync", entries: [], id: "s4" },
    ]);
  });

  it("tails a topic: start, records with offsets as ids, gaps; resumes after the last record", async () => {
    const record = (offset: number) => ({ topic: "orders", partition: 2, offset, timestamp: 1, key: "k", value: { amount: offset }, headers: [] });
    const { fetch, calls } = scripted([
      {
        body: `event: start\ndata: {"topic":"orders","partition":2,"from":0}\n\ndata: ${JSON.stringify(record(0))}\nid: 0\n\nevent: gap\ndata: {"from":1,"to":3}\n\ndata: ${JSON.stringify(record(4))}\nid: 4\n\n`,
      },
      { status: 403 },
    ]);
    const events: TailEvent[] = [];
    const sub = tail("orders", { partition: 2, from: "earliest" }, (e) => events.push(e), options(fetch));
    await sub.finished;
    expect(calls[0]!.url).toBe("http://edge.test/topics/orders/watch?partition=2&from=earliest");
    expect(calls[1]!.headers["Last-Event-ID"]).toBe("4");
    expect(events.map((e) => e.type)).toEqual(["start", "record", "gap", "record", "error", "error"]);
    expect(events[2]).toEqual({ type: "gap", from: 1, to: 3 });
    expect(events[3]).toEqual({ type: "record", record: record(4), id: "4" });
  });

  it("stops on close and on its signal; a callback that throws ends the subscription with that error", async () => {
    const { fetch } = scripted(["network-error"]);
    const controller = new AbortController();
    const sub = watch("totals", "k", () => undefined, { ...options(fetch), signal: controller.signal });
    controller.abort();
    expect(await sub.finished).toBeUndefined();

    const body = scripted([{ body: 'data: {"key":"k","value":1}\nid: a\n\n' }]);
    const failing = watch(
      "totals",
      "k",
      (e) => {
        if (e.type === "snapshot") throw new Error("my bug");
      },
      options(body.fetch),
    );
    expect((await failing.finished)?.message).toContain("my bug");
    expect(body.calls.length).toBe(1);
    expect(() => watch("totals", "k", () => undefined, { fetch: body.fetch as typeof globalThis.fetch })).toThrow(/baseUrl/);
  });
});
