/**
 * edge-streams/client against the real Worker in workerd (its `fetch` is the Worker's own): one
 * customer ordering 1,000 times, in requests of 100, while its task is migrated, corrupted,
 * crashed (at once, and at a lifecycle crash point) and every Durable Object restarted; the
 * customer's total is watched three ways at once — its key (`watch`), a prefix of it
 * (`watchPrefix`) and the output topic's partition (`tail`). Each client reconnects by itself and
 * resumes from its last event: `count` goes 1, 2, …, 1,000 once each, in all three. Also a prefix's
 * snapshot through a crash, a topic tail through a restart of every object, and the answers it
 * does not retry (401, 404).
 */
import { abortAllDurableObjects } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ConnectionOptions, type TailEvent, tail, type WatchEvent, watch, watchPrefix } from "edge-streams/client";
import { TestDriver } from "../platform/testing/test-driver";
import { call } from "./support/api";
import { keyOn, keysOn } from "./support/keys";
import { application } from "./support/orders-app";
import { TEST_API_TOKEN } from "./support/tokens";
import { recovered } from "./support/recovered";
import { injectFault, STORM_FAULTS } from "./support/storm";
import { until } from "./support/until";

const driver = new TestDriver(env, application);
const PARTITION = 2;
const TASK = `0_${PARTITION}`;
const FAULTS = 6;
/** The storm's orders (issue #34's 1,000), spread over its rounds, posted BATCH per request. */
const ORDERS = 1_000;
const BATCH = 100;

type Total = { count: number; sum: number };

/** Cutters of the responses the clients read (dropped connections): `cutConnections` calls them. */
const cutters = new Set<() => void>();

function cutConnections(): void {
  for (const cut of cutters) {
    try {
      cut();
    } catch {
      // the response had ended already
    }
  }
  cutters.clear();
}

/** The Worker's own fetch, each answer's body cuttable (`cutConnections`). */
async function workerFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const response = await exports.default.fetch(new Request(input, init));
  if (!response.body) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start: (controller) => {
        cutters.add(() => controller.error(new Error("connection cut")));
      },
    }),
  );
  return new Response(body, response);
}

/** The client's options: the Worker's own fetch, short back-offs. */
const options = (extra: ConnectionOptions = {}): ConnectionOptions => ({
  baseUrl: "http://edge.test",
  token: TEST_API_TOKEN,
  fetch: workerFetch,
  backoff: { initialMs: 50, maxMs: 1_000 },
  ...extra,
});

async function orders(key: string, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += BATCH) {
    const records = Array.from({ length: Math.min(BATCH, count - sent) }, () => ({ key, value: { amount: 1 } }));
    expect((await call("/topics/orders/records", { body: { records } })).status).toBe(200);
  }
}

/** The counts a watch saw: from its snapshot (when the key exists) and each change. */
function counts(events: readonly WatchEvent<Total>[]): number[] {
  const seen: number[] = [];
  for (const e of events) {
    if (e.type === "change" && e.value) seen.push(e.value.count);
    if (e.type === "snapshot" && e.entries[0]?.value) seen.push(e.entries[0].value.count);
  }
  return seen;
}

describe("edge-streams/client on the real Worker", () => {
  it("watches a key, a prefix and the output topic through migrations, corruptions, crashes and restarts: count 1..1,000 once each, reconnecting by itself", {
    timeout: 240_000,
  }, async () => {
    const key = keyOn(PARTITION, "client-storm");
    await driver.instances();
    await driver.runUntilQuiet();
    const events: WatchEvent<Total>[] = [];
    const prefixEvents: WatchEvent<Total>[] = [];
    const tailEvents: TailEvent<string>[] = [];
    const sub = watch<Total>("totals", key, (e) => events.push(e), options());
    const prefixSub = watchPrefix<Total>("totals", "client-storm", (e) => prefixEvents.push(e), options());
    const tailSub = tail<string>("totals", { partition: PARTITION, from: "latest" }, (e) => tailEvents.push(e), options());
    const tailed = () =>
      tailEvents.flatMap((e) => (e.type === "record" && e.record.key === key ? [(JSON.parse(e.record.value as string) as Total).count] : []));
    await until(async () => events.length > 0 && prefixEvents.length > 0 && tailEvents.length > 0, 20_000, "the first snapshots and the tail's start");
    expect(events[0]).toMatchObject({ type: "snapshot", reason: "initial", entries: [{ key, value: null }] });
    expect(prefixEvents[0]).toMatchObject({ type: "snapshot", reason: "initial", entries: [] });
    expect(tailEvents[0]).toMatchObject({ type: "start", topic: "totals", partition: PARTITION });

    let sent = 0;
    for (let round = 0; round < FAULTS; round++) {
      const want = Math.round((ORDERS * (round + 1)) / FAULTS);
      const half = Math.floor((want - sent) / 2);
      await orders(key, half);
      // The five faults of a storm, then every object restarted again; a restart also drops the
      // clients' connections (the streams themselves outlive it), and the clients come back.
      const fault = STORM_FAULTS[round] ?? "restart";
      await injectFault(driver, TASK, fault);
      if (fault === "restart") cutConnections();
      await orders(key, want - sent - half);
      sent = want;
      await recovered(driver, TASK);
      await until(
        async () => (counts(events).at(-1) ?? 0) >= want && (counts(prefixEvents).at(-1) ?? 0) >= want && (tailed().at(-1) ?? 0) >= want,
        60_000,
        `count ${want} at the three subscribers`,
      );
    }
    const all = Array.from({ length: ORDERS }, (_, i) => i + 1);
    expect(counts(events)).toEqual(all);
    expect(counts(prefixEvents)).toEqual(all);
    expect(tailed()).toEqual(all);
    // Resumed, not restarted: no snapshot after the first (a resync would be a fresh start).
    expect(events.filter((e) => e.type === "snapshot").length).toBe(1);
    expect(prefixEvents.filter((e) => e.type === "snapshot").length).toBe(1);
    expect(tailEvents.some((e) => e.type === "gap")).toBe(false);
    const offsets = tailEvents.flatMap((e) => (e.type === "record" ? [e.record.offset] : []));
    expect(offsets).toEqual(Array.from({ length: offsets.length }, (_, i) => offsets[0]! + i));
    // The clients came back by themselves after their streams were cut.
    for (const seen of [events, prefixEvents, tailEvents]) {
      expect(seen.filter((e) => e.type === "error" && e.retryInMs !== undefined).length).toBeGreaterThanOrEqual(1);
      expect(seen.some((e) => e.type === "error" && e.retryInMs === undefined)).toBe(false);
    }
    prefixSub.close();
    tailSub.close();

    // The next change comes next; a new subscription from the last id sees only what follows.
    const lastId = sub.lastEventId;
    sub.close();
    expect(await sub.finished).toBeUndefined();
    await orders(key, 1);
    await driver.runUntilQuiet();
    const later: WatchEvent<Total>[] = [];
    const resumed = watch<Total>("totals", key, (e) => later.push(e), options({ lastEventId: lastId }));
    await until(async () => later.some((e) => e.type === "change"), 30_000, "the change after the last id");
    resumed.close();
    expect(later.filter((e) => e.type !== "error")).toEqual([
      { type: "change", key, value: { count: ORDERS + 1, sum: ORDERS + 1 }, id: expect.stringMatching(/^w1\./) },
    ]);
  });

  it("watches a prefix: a snapshot of the keys present, then each change, across a crash of the task", async () => {
    const [a, b] = keysOn(1, 2, "client-prefix");
    await orders(a!, 2);
    await driver.runUntilQuiet();
    const events: WatchEvent<Total>[] = [];
    const sub = watchPrefix<Total>("totals", "client-prefix", (e) => events.push(e), options());
    await until(async () => events.some((e) => e.type === "snapshot"), 20_000, "the prefix snapshot");
    expect(events.find((e) => e.type === "snapshot")).toMatchObject({ reason: "initial", entries: [{ key: a, value: { count: 2, sum: 2 } }] });
    await abortAllDurableObjects();
    await orders(b!, 1);
    await orders(a!, 1);
    await driver.runUntilQuiet();
    await until(async () => events.filter((e) => e.type === "change").length >= 2, 30_000, "two changes");
    sub.close();
    expect(events.filter((e) => e.type === "change").map((e) => e.type === "change" && [e.key, e.value?.count])).toEqual([
      [b, 1],
      [a, 3],
    ]);
  });

  it("tails an output topic from the start through a restart of every object: each record once, offsets consecutive", async () => {
    const key = keyOn(PARTITION, "client-tail");
    await orders(key, 3);
    await driver.runUntilQuiet();
    const events: TailEvent<string>[] = [];
    const sub = tail<string>("totals", { partition: PARTITION, from: "earliest" }, (e) => events.push(e), options());
    const mine = () => events.flatMap((e) => (e.type === "record" && e.record.key === key ? [JSON.parse(e.record.value as string).count as number] : []));
    await until(async () => mine().length >= 3, 20_000, "the first three totals");
    await abortAllDurableObjects();
    await orders(key, 2);
    await recovered(driver, TASK);
    await until(async () => mine().length >= 5, 30_000, "the totals after the restart");
    sub.close();
    expect(events[0]).toMatchObject({ type: "start", topic: "totals", partition: PARTITION, from: 0 });
    expect(mine()).toEqual([1, 2, 3, 4, 5]);
    const offsets = events.flatMap((e) => (e.type === "record" ? [e.record.offset] : []));
    expect(offsets).toEqual(Array.from({ length: offsets.length }, (_, i) => i));
    expect(events.some((e) => e.type === "gap")).toBe(false);
  });

  it("reports 401 and 404 once, without retrying", async () => {
    let calls = 0;
    const counted = options();
    const fetch = counted.fetch as typeof globalThis.fetch;
    const counting = {
      ...counted,
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        calls++;
        return fetch(input, init);
      },
    };
    const unauthorized = watch("totals", "x", () => undefined, { ...counting, token: "wrong" });
    expect(await unauthorized.finished).toMatchObject({ status: 401, code: "unauthorized" });
    const missing = watch("no-such-store", "x", () => undefined, counting);
    expect(await missing.finished).toMatchObject({ status: 404 });
    expect(calls).toBe(2);
  });
});
