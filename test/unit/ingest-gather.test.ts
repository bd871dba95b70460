/**
 * AppendGatherer (src/ingest/gather.ts): concurrent ingest appends to one partition go as one
 * append while another is in flight; a lone append goes at once; each member gets its own records'
 * offsets, or the error of the append that held them; the next append is sent by one of its own
 * members, in its own context.
 */
import { describe, expect, it } from "vitest";
import { AppendGatherer, joinMembers, lingerFor, memberBytes, splitResult, takeCount, type GatheredBatch, type GatherMember } from "../../src/ingest/gather";
import { LogUnavailable } from "../../src/log/errors";
import { streaming } from "../../src/log/wake-linger";
import { encodeBatch } from "../../src/log/record-batch";
import type { AppendResult } from "../../src/log/types";

function member(...values: string[]): GatherMember {
  const encoded = encodeBatch(values.map((value) => ({ key: `k-${value}`, value })))!;
  return { text: encoded.text, measure: encoded.measure! };
}

/** A partition: appends wait until `answer` (or `fail`) is called for them, in order; its log is the records appended. */
function partition() {
  const log: string[] = [];
  const sent: { lane: string; batch: GatheredBatch; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const send = (lane: string, batch: GatheredBatch) =>
    new Promise<AppendResult>((resolve, reject) => {
      sent.push({
        lane,
        batch,
        resolve: () => {
          const baseOffset = log.length;
          for (const [, value] of JSON.parse(batch.text) as [string, string][]) log.push(value);
          resolve({ baseOffset, count: batch.measure.sizes.length, duplicate: false });
        },
        reject,
      });
    });
  return { log, sent, send };
}

/** Lets every promise continuation run. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** A linger that never ends by itself: only an append that does not linger (or ends it early) is sent. */
const neverEnds = () => new Promise<void>(() => {});

/** Appends `value` to `orders/0` and answers that append (the latest sent), as a client waiting for each answer sees it. */
async function appendAnswered(gatherer: AppendGatherer, p: ReturnType<typeof partition>, value: string): Promise<AppendResult> {
  const appended = gatherer.append("orders/0", member(value));
  await settle();
  p.sent.at(-1)!.resolve();
  return appended;
}

/** Node's AsyncLocalStorage (the project's types are the Workers'): a context that follows promise continuations, as a request's does. */
interface Contexts {
  run<R>(store: string, fn: () => R): R;
  getStore(): string | undefined;
}
const NODE_ASYNC_HOOKS = "node:async_hooks";
const asyncLocalStorage = (): Promise<new () => Contexts> =>
  (import(/* @vite-ignore */ NODE_ASYNC_HOOKS) as Promise<{ AsyncLocalStorage: new () => Contexts }>).then((m) => m.AsyncLocalStorage);

describe("AppendGatherer", () => {
  it("sends a lone append at once, without a linger", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send, { sleep: () => Promise.reject(new Error("no linger expected")) });
    const appended = gatherer.append("orders/0", member("a", "b"));
    await settle();
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]!.batch.members).toBe(1);
    p.sent[0]!.resolve();
    expect(await appended).toEqual({ baseOffset: 0, count: 2, duplicate: false });
  });

  it("gathers the appends that arrive while one is in flight into one, each answered with its own offsets", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    const waiting = [
      gatherer.append("orders/0", member("b", "c")),
      gatherer.append("orders/0", member("d")),
      gatherer.append("orders/0", member("e", "f", "g")),
    ];
    await settle();
    // Nothing more is sent while the first is in flight.
    expect(p.sent).toHaveLength(1);
    let answered = 0;
    for (const w of waiting) void w.then(() => answered++);
    p.sent[0]!.resolve();
    expect(await first).toEqual({ baseOffset: 0, count: 1, duplicate: false });
    await settle();
    // None is answered before the append holding its records is.
    expect(answered).toBe(0);
    expect(p.sent).toHaveLength(2);
    expect(p.sent[1]!.batch.members).toBe(3);
    p.sent[1]!.resolve();
    expect(await Promise.all(waiting)).toEqual([
      { baseOffset: 1, count: 2, duplicate: false },
      { baseOffset: 3, count: 1, duplicate: false },
      { baseOffset: 4, count: 3, duplicate: false },
    ]);
    expect(p.log).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
    expect(gatherer.waiting("orders/0")).toBe(0);
  });

  it("keeps partitions apart: an append in flight to one does not hold another's", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    void gatherer.append("orders/0", member("a"));
    void gatherer.append("orders/1", member("b"));
    await settle();
    expect(p.sent.map((s) => s.lane)).toEqual(["orders/0", "orders/1"]);
  });

  it("fails every member of a failed append with its error and goes on with those waiting after it", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    const gathered = [gatherer.append("orders/0", member("b")), gatherer.append("orders/0", member("c"))];
    p.sent[0]!.resolve();
    await first;
    await settle();
    expect(p.sent[1]!.batch.members).toBe(2);
    const later = gatherer.append("orders/0", member("d"));
    const error = new Error("the partition did not answer");
    p.sent[1]!.reject(error);
    for (const g of gathered) await expect(g).rejects.toBe(error);
    await settle();
    // The one waiting behind the failed append goes next, alone; nothing of the failed one is sent again.
    expect(p.sent).toHaveLength(3);
    expect(p.sent[2]!.batch.members).toBe(1);
    p.sent[2]!.resolve();
    expect(await later).toEqual({ baseOffset: 1, count: 1, duplicate: false });
    expect(p.log).toEqual(["a", "d"]);
  });

  it("bounds a gathered append by bytes: the rest wait for the next, and a member too big alone goes alone", async () => {
    const p = partition();
    const small = member("x".repeat(100));
    const bytes = memberBytes(small);
    const gatherer = new AppendGatherer(p.send, { maxBytes: bytes * 2 });
    void gatherer.append("orders/0", small);
    await settle();
    const big = member("y".repeat(1_000));
    const waiting = [
      gatherer.append("orders/0", small),
      gatherer.append("orders/0", small),
      gatherer.append("orders/0", small),
      gatherer.append("orders/0", big),
    ];
    p.sent[0]!.resolve();
    await settle();
    expect(p.sent[1]!.batch.members).toBe(2);
    p.sent[1]!.resolve();
    await settle();
    expect(p.sent[2]!.batch.members).toBe(1);
    p.sent[2]!.resolve();
    await settle();
    expect(p.sent[3]!.batch.members).toBe(1);
    expect(p.sent[3]!.batch.text).toBe(big.text);
    p.sent[3]!.resolve();
    await Promise.all(waiting);
    expect(p.log).toHaveLength(5);
  });

  it("sends each append in the context of one of its own members, never of the request answered before", async () => {
    const contexts = new (await asyncLocalStorage())();
    const p = partition();
    const senders: (string | undefined)[] = [];
    const gatherer = new AppendGatherer((lane, batch) => {
      senders.push(contexts.getStore());
      return p.send(lane, batch);
    });
    const first = contexts.run("request-1", () => gatherer.append("orders/0", member("a")));
    await settle();
    const others = ["request-2", "request-3"].map((id) => contexts.run(id, () => gatherer.append("orders/0", member(id))));
    await settle();
    p.sent[0]!.resolve();
    await first;
    await settle();
    p.sent[1]!.resolve();
    await Promise.all(others);
    expect(senders).toEqual(["request-1", "request-2"]);
  });

  it("bounds a member's wait: one still waiting when its own timer fires leaves the queue, answered LogUnavailable", async () => {
    const p = partition();
    const timers: (() => void)[] = [];
    const gatherer = new AppendGatherer(p.send, {
      waitLimitMs: 1_000,
      timer: (fn) => {
        timers.push(fn);
        return () => {};
      },
    });
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    const waiting = gatherer.append("orders/0", member("b"));
    await settle();
    // The second member's timer fires while the first append is still in flight.
    timers[1]!();
    await expect(waiting).rejects.toBeInstanceOf(LogUnavailable);
    p.sent[0]!.resolve();
    await first;
    await settle();
    // It was never sent: the lane is free, and the log holds only the first.
    expect(p.sent).toHaveLength(1);
    expect(gatherer.waiting("orders/0")).toBe(0);
    expect(p.log).toEqual(["a"]);
  });

  it("never leaves a partition stuck when a member's timer fires as it is told to send", async () => {
    const p = partition();
    const timers: (() => void)[] = [];
    const gatherer = new AppendGatherer(p.send, {
      timer: (fn) => {
        timers.push(fn);
        return () => {};
      },
    });
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    const second = gatherer.append("orders/0", member("b"));
    await settle();
    // Its timer fires in the same turn as the append before it is answered (which hands it the lane).
    timers[1]!();
    p.sent[0]!.resolve();
    await first;
    await settle();
    // Either it left (unavailable) or it sent its append: answer that one.
    p.sent[1]?.resolve();
    const outcome = await second.then(
      () => "appended",
      (error: unknown) => (error instanceof LogUnavailable ? "unavailable" : "other"),
    );
    // Whatever it answered, the partition still takes appends.
    const third = gatherer.append("orders/0", member("c"));
    await settle();
    p.sent.at(-1)!.resolve();
    await third;
    expect(outcome).not.toBe("other");
    expect(p.log.at(-1)).toBe("c");
  });

  it("with a linger, paces a streaming partition's appends: at most one per linger, holding what arrived meanwhile", async () => {
    const p = partition();
    let now = 0;
    const lingers: number[] = [];
    let endLinger!: () => void;
    const gatherer = new AppendGatherer(p.send, {
      lingerMs: 40,
      // Two records within the rate window make the partition streaming.
      minRecordsPerS: 10,
      now: () => now,
      sleep: (ms) => {
        lingers.push(ms);
        return new Promise<void>((resolve) => (endLinger = resolve));
      },
    });
    // Alone and below the rate: at once.
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    expect(p.sent).toHaveLength(1);
    p.sent[0]!.resolve();
    await first;
    // The next, 10 ms later, finds the partition streaming: it waits until 40 ms after the last went.
    now = 10;
    const second = gatherer.append("orders/0", member("b"));
    await settle();
    expect(lingers).toEqual([30]);
    expect(p.sent).toHaveLength(1);
    now = 25;
    const third = gatherer.append("orders/0", member("c"));
    now = 40;
    endLinger();
    await settle();
    expect(p.sent).toHaveLength(2);
    expect(p.sent[1]!.batch.members).toBe(2);
    p.sent[1]!.resolve();
    expect((await Promise.all([second, third])).map((r) => r.baseOffset)).toEqual([1, 2]);
  });

  it("ends a linger once the members waiting hold a batch's bytes (Kafka's batch.size)", async () => {
    const p = partition();
    let now = 0;
    const one = memberBytes(member("b"));
    const gatherer = new AppendGatherer(p.send, {
      lingerMs: 40,
      minRecordsPerS: 10,
      batchBytes: one * 3,
      now: () => now,
      // Only the batch filling up sends the append.
      sleep: neverEnds,
    });
    await appendAnswered(gatherer, p, "a");
    now = 10;
    const waiting = [gatherer.append("orders/0", member("b")), gatherer.append("orders/0", member("c"))];
    await settle();
    // Two members' bytes: still lingering.
    expect(p.sent).toHaveLength(1);
    waiting.push(gatherer.append("orders/0", member("d")));
    await settle();
    // The third fills the batch: the append goes at once, holding all three.
    expect(p.sent).toHaveLength(2);
    expect(p.sent[1]!.batch.members).toBe(3);
    p.sent[1]!.resolve();
    expect((await Promise.all(waiting)).map((r) => r.baseOffset)).toEqual([1, 2, 3]);
  });

  it("does not linger again for a while after a linger that no request joined (a client sending one request at a time)", async () => {
    const p = partition();
    let now = 0;
    let lingers = 0;
    const gatherer = new AppendGatherer(p.send, {
      lingerMs: 40,
      minRecordsPerS: 10,
      lingerRetryMs: 1_000,
      now: () => now,
      sleep: async (ms) => {
        lingers++;
        now += ms;
      },
    });
    // One request at a time, each sent once the one before was answered: streaming by its rate.
    for (let i = 0; i < 6; i++) {
      await appendAnswered(gatherer, p, `v${i}`);
      now += 5;
    }
    // The second append lingered, and no one joined it: the next ones within the second go at once.
    expect(lingers).toBe(1);
    expect(p.sent.map((s) => s.batch.members)).toEqual([1, 1, 1, 1, 1, 1]);
    // After the second, the partition lingers again (and goes on lingering while requests join).
    now += 1_000;
    await appendAnswered(gatherer, p, "late");
    const joined = [gatherer.append("orders/0", member("x")), gatherer.append("orders/0", member("y"))];
    await settle();
    expect(lingers).toBe(2);
    expect(p.sent.at(-1)!.batch.members).toBe(2);
    p.sent.at(-1)!.resolve();
    await Promise.all(joined);
  });

  it("goes on lingering after a short linger that no request joined (its end was near: it says nothing)", async () => {
    const p = partition();
    let now = 0;
    const lingers: number[] = [];
    const gatherer = new AppendGatherer(p.send, {
      lingerMs: 40,
      minRecordsPerS: 10,
      now: () => now,
      sleep: async (ms) => {
        lingers.push(ms);
        now += ms;
      },
    });
    // Below the rate: at once, at 0.
    await appendAnswered(gatherer, p, "a");
    // Streaming at 38: lingers until 40, and no one joins those 2 ms.
    now = 38;
    await appendAnswered(gatherer, p, "b");
    // At 45 it lingers again, until 80.
    now = 45;
    const third = gatherer.append("orders/0", member("c"));
    await settle();
    p.sent[2]!.resolve();
    await third;
    expect(lingers).toEqual([2, 35]);
  });

  it("does not hold a big request (LINGER_ALONE_BYTES): it goes at once, with whatever waits beside it", async () => {
    const p = partition();
    let now = 0;
    const small = memberBytes(member("a"));
    const gatherer = new AppendGatherer(p.send, {
      lingerMs: 40,
      minRecordsPerS: 10,
      aloneBytes: small * 2,
      now: () => now,
      sleep: neverEnds,
    });
    await appendAnswered(gatherer, p, "a");
    // Streaming, and a request of two records' bytes or more: not held.
    now = 5;
    const big = gatherer.append("orders/0", member("b", "c", "d"));
    await settle();
    expect(p.sent).toHaveLength(2);
    p.sent[1]!.resolve();
    expect((await big).count).toBe(3);
  });

  it("does not linger while live subscribers wait on the partition (its answer said watched)", async () => {
    let now = 0;
    const sent: { batch: GatheredBatch; resolve: (result: AppendResult) => void }[] = [];
    const gatherer = new AppendGatherer((_, batch) => new Promise<AppendResult>((resolve) => sent.push({ batch, resolve })), {
      lingerMs: 40,
      minRecordsPerS: 10,
      now: () => now,
      sleep: neverEnds,
    });
    const first = gatherer.append("orders/0", member("a"));
    await settle();
    sent[0]!.resolve({ baseOffset: 0, count: 1, duplicate: false, watched: true });
    await first;
    // Streaming by its rate, yet each append goes at once while the watch holds.
    for (let i = 1; i < 4; i++) {
      now += 5;
      const appended = gatherer.append("orders/0", member(`v${i}`));
      await settle();
      expect(sent).toHaveLength(i + 1);
      sent[i]!.resolve({ baseOffset: i, count: 1, duplicate: false });
      await appended;
    }
  });

  it("never lingers below the rate: appends one at a time go at once", async () => {
    const p = partition();
    let now = 0;
    const gatherer = new AppendGatherer(p.send, { lingerMs: 40, now: () => now, sleep: () => Promise.reject(new Error("no linger expected")) });
    for (let i = 0; i < 5; i++) {
      now += 5;
      await appendAnswered(gatherer, p, `v${i}`);
    }
    expect(p.sent.map((s) => s.batch.members)).toEqual([1, 1, 1, 1, 1]);
  });
});

describe("requests on their way (expect)", () => {
  /** Timers by their length, fired by the test: the bounds of the waits. */
  function manualTimers() {
    const timers: { ms: number; fn: () => void }[] = [];
    return {
      timers,
      timer: (fn: () => void, ms: number) => {
        timers.push({ ms, fn });
        return () => {};
      },
      fire: (ms: number) => {
        for (const t of timers) if (t.ms === ms) t.fn();
      },
    };
  }

  it("holds a lane's append for the requests announced on its topic, then sends their members as one", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    const arrivedA = gatherer.expect("orders");
    const arrivedB = gatherer.expect("orders");
    const a = gatherer.append("orders/0", member("a"), "orders");
    arrivedA();
    await settle();
    // B is still being read and parsed: the lane waits for it.
    expect(p.sent).toHaveLength(0);
    const b = gatherer.append("orders/0", member("b", "c"), "orders");
    arrivedB();
    await settle();
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]!.batch.members).toBe(2);
    p.sent[0]!.resolve();
    expect(await Promise.all([a, b])).toEqual([
      { baseOffset: 0, count: 1, duplicate: false },
      { baseOffset: 1, count: 2, duplicate: false },
    ]);
    expect(gatherer.expected("orders")).toBe(0);
  });

  it("sends a lone request at once, whatever requests of other topics are on their way", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    const arrived = gatherer.expect("orders");
    // Another topic's request on its way holds nothing of this one.
    const clicks = gatherer.expect("clicks");
    void gatherer.append("orders/0", member("a"), "orders");
    arrived();
    await settle();
    expect(p.sent).toHaveLength(1);
    gatherer.expect("orders");
    void gatherer.append("clicks/0", member("b"), "clicks");
    clicks();
    await settle();
    expect(p.sent.map((s) => s.lane)).toEqual(["orders/0", "clicks/0"]);
  });

  it("stops waiting for an announced request that leaves without appending (a refused body), or at the bound", async () => {
    const p = partition();
    const t = manualTimers();
    const gatherer = new AppendGatherer(p.send, { timer: t.timer, expectWaitMs: 20 });
    const refused = gatherer.expect("orders");
    const slow = gatherer.expect("orders");
    void gatherer.append("orders/0", member("a"), "orders");
    await settle();
    expect(p.sent).toHaveLength(0);
    refused();
    refused();
    await settle();
    // Still waiting for the slow one, at most 20 ms.
    expect(p.sent).toHaveLength(0);
    t.fire(20);
    await settle();
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]!.batch.members).toBe(1);
    slow();
    expect(gatherer.expected("orders")).toBe(0);
  });

  it("waits for a request that never says it arrived (its end did not run) once, not again", async () => {
    const p = partition();
    const t = manualTimers();
    const gatherer = new AppendGatherer(p.send, { timer: t.timer, expectWaitMs: 20 });
    gatherer.expect("orders");
    const a = gatherer.append("orders/0", member("a"), "orders");
    await settle();
    expect(p.sent).toHaveLength(0);
    t.fire(20);
    await settle();
    expect(p.sent).toHaveLength(1);
    expect(gatherer.expected("orders")).toBe(0);
    p.sent[0]!.resolve();
    await a;
    // The next append of the topic goes at once: the stale request is not waited for again.
    void gatherer.append("orders/1", member("b"), "orders");
    await settle();
    expect(p.sent).toHaveLength(2);
  });

  it("waits only for the requests announced before it sends, not for those that come meanwhile", async () => {
    const p = partition();
    const gatherer = new AppendGatherer(p.send);
    const first = gatherer.expect("orders");
    const a = gatherer.append("orders/0", member("a"), "orders");
    const second = gatherer.expect("orders");
    await settle();
    expect(p.sent).toHaveLength(0);
    // A third request is announced while the lane waits for the second: the lane does not wait for it.
    gatherer.expect("orders");
    void gatherer.append("orders/0", member("b"), "orders");
    first();
    second();
    await settle();
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]!.batch.members).toBe(2);
    p.sent[0]!.resolve();
    await a;
  });
});

describe("joining members", () => {
  it("joins encoded batches into one, their measures with them", () => {
    const a = encodeBatch([{ key: "a", value: "1", timestamp: 5 }])!;
    const b = encodeBatch([
      { key: "b", value: "22" },
      { key: null, value: "ü", timestamp: 9 },
    ])!;
    const joined = joinMembers([
      { text: a.text, measure: a.measure! },
      { text: b.text, measure: b.measure! },
    ]);
    const whole = encodeBatch([
      { key: "a", value: "1", timestamp: 5 },
      { key: "b", value: "22" },
      { key: null, value: "ü", timestamp: 9 },
    ])!;
    expect(joined.text).toBe(whole.text);
    expect(joined.measure).toEqual(whole.measure);
    expect(joined.members).toBe(2);
  });

  it("splits a gathered result into each member's offsets", () => {
    expect(splitResult({ baseOffset: 10, count: 6, duplicate: false }, [1, 3, 2]).map((r) => [r.baseOffset, r.count])).toEqual([
      [10, 1],
      [11, 3],
      [14, 2],
    ]);
  });

  it("takes the oldest waiting members while they fit, and always the first", () => {
    expect(takeCount([{ bytes: 10 }, { bytes: 10 }, { bytes: 10 }], 25)).toBe(2);
    expect(takeCount([{ bytes: 100 }, { bytes: 1 }], 25)).toBe(1);
    expect(takeCount([], 25)).toBe(0);
  });

  it("lingers only while streaming, until the linger after the last append", () => {
    expect(lingerFor(100, 110, 40, true)).toBe(30);
    expect(lingerFor(100, 150, 40, true)).toBe(0);
    expect(lingerFor(100, 110, 40, false)).toBe(0);
    expect(lingerFor(100, 110, 0, true)).toBe(0);
    const recent = [
      { at: 0, records: 100 },
      { at: 150, records: 100 },
    ];
    // 200 records within 200 ms: 1,000 a second.
    expect(streaming(recent, 190, 1_000)).toBe(true);
    // The first has left the window.
    expect(streaming(recent, 210, 1_000)).toBe(false);
    expect(recent).toHaveLength(1);
  });
});
