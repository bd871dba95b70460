/**
 * The restorer (src/restore/restorer.ts) on its own: a real registry in a scratch Durable Object's
 * storage, a real log over `LogPartition` objects with this file's own topics, and fake task
 * instances that apply batches the way `StreamTask.applyRestoreBatch` does (only at their position
 * and incarnation) and reply like it. Listener calls (§5) count records, not batches; a round
 * touches at most `parallelism` instances; all of a round's corruption goes in one report. Most
 * tests take plain batches (no read-ahead), one per round, so that they can count listener calls
 * per batch; restore windows (several batches read ahead, compacted into one) have their own.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { restartDurableObject } from "./support/restart";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { TopicCatalog } from "../src/log/topics";
import { decodeBatches } from "../src/log/record-batch";
import type { TopicPartition } from "../src/log/types";
import { RestoreRegistry, type Registration } from "../src/restore/registry";
import { Restorer, type CorruptedInstance, type RestorerOptions } from "../src/restore/restorer";
import type { TaskRole } from "../src/task/state";
import type { RestoreBatch, RestoreReply } from "../src/task/protocol";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";

const BATCH = 25;
/** What a round of the restore worker reads in tests: a batch and one more read ahead (RESTORE_READ_AHEAD=1, vitest.config.ts). */
const WINDOW = 2 * BATCH;
let scratch = 0;
let topics = 0;

/** A topic of its own for each use, so tests sharing the file's storage never see each other's records. */
function newTopic(partitions = 1): { name: string; catalog: TopicCatalog } {
  const name = `listener-test-${++topics}-changelog`;
  return { name, catalog: new TopicCatalog({ [name]: partitions }) };
}

/** Runs `fn` inside a fresh Durable Object, with a restore registry on its storage. */
async function withRegistry<T>(fn: (registry: RestoreRegistry) => Promise<T>): Promise<T> {
  const stub = env.RESTORE_WORKER.getByName(`scratch-${++scratch}`);
  return runInDurableObject(stub, (_instance, state) => fn(new RestoreRegistry(state.storage)));
}

/** A one-partition changelog of its own holding `count` records, and the log to read it. */
async function changelogWith(count: number): Promise<{ name: string; log: DurableLog; tp: TopicPartition }> {
  const { name, catalog } = newTopic();
  const log = new DurableLog(env.LOG_PARTITION, catalog);
  const tp = { topic: name, partition: 0 };
  await appendRecords(log, tp, count);
  return { name, log, tp };
}

async function appendRecords(log: DurableLog, tp: TopicPartition, count: number, prefix = "k"): Promise<void> {
  const records = Array.from({ length: count }, (_, i) => ({ key: `${prefix}-${i % 7}`, value: JSON.stringify({ n: i }) }));
  for (let start = 0; start < records.length; start += 100) await log.append(tp, records.slice(start, start + 100));
}

/**
 * Task instances as the restore worker sees them: each holds, per changelog, the position its
 * store reflects and applies a batch only there and only for its incarnation (I4).
 */
class FakeInstances {
  readonly positions = new Map<string, number | null>();
  readonly incarnations = new Map<string, number>();
  readonly roles = new Map<string, TaskRole>();
  /** Every batch delivered, applied or not. */
  readonly delivered: { instance: string; topic: string; partition: number; fromOffset: number; nextOffset: number; records: number; applied: boolean }[] = [];

  add(instance: string, role: TaskRole, incarnation = 0): void {
    this.roles.set(instance, role);
    this.incarnations.set(instance, incarnation);
  }

  position(instance: string, tp: TopicPartition): number | null {
    return this.positions.get(`${instance}|${tp.topic}/${tp.partition}`) ?? null;
  }

  readonly apply = async (instance: string, batch: RestoreBatch): Promise<RestoreReply> => {
    const key = `${instance}|${batch.topic}/${batch.partition}`;
    const incarnation = this.incarnations.get(instance)!;
    const role = this.roles.get(instance)!;
    const at = this.positions.get(key) ?? null;
    const applicable = batch.incarnation === incarnation && batch.fromOffset === (at ?? batch.earliest);
    if (applicable) this.positions.set(key, batch.nextOffset);
    const checkpoint = applicable ? batch.nextOffset : at;
    this.delivered.push({
      instance,
      topic: batch.topic,
      partition: batch.partition,
      fromOffset: batch.fromOffset,
      nextOffset: batch.nextOffset,
      records: batch.records.length,
      applied: applicable,
    });
    return {
      applied: applicable,
      incarnation,
      epoch: batch.epoch ?? 0,
      role,
      state: role === "active" ? "RESTORING" : "UPDATING",
      checkpoint,
      caughtUp: checkpoint !== null && checkpoint >= batch.end,
    };
  };
}

type Call = [string, ...unknown[]];

/** A restore listener and a standby listener that record every call, with the changelog as `topic/partition`. */
function recorders() {
  const calls: Call[] = [];
  const at = (tp: TopicPartition) => `${tp.topic}/${tp.partition}`;
  return {
    calls,
    restoreListener: {
      onRestoreStart: (tp: TopicPartition, store: string, start: number, end: number) => void calls.push(["start", at(tp), store, start, end]),
      onBatchRestored: (tp: TopicPartition, store: string, batchEnd: number, n: number) => void calls.push(["batch", at(tp), store, batchEnd, n]),
      onRestoreEnd: (tp: TopicPartition, store: string, total: number) => void calls.push(["end", at(tp), store, total]),
      onRestoreSuspended: (tp: TopicPartition, store: string, total: number) => void calls.push(["suspended", at(tp), store, total]),
    },
    standbyListener: {
      onUpdateStart: (tp: TopicPartition, store: string, start: number) => void calls.push(["update-start", at(tp), store, start]),
      onBatchLoaded: (tp: TopicPartition, store: string, batchEnd: number, size: number, end: number) =>
        void calls.push(["loaded", at(tp), store, batchEnd, size, end]),
      onUpdateSuspended: (tp: TopicPartition, store: string, offset: number, end: number, reason: string) =>
        void calls.push(["update-suspended", at(tp), store, offset, end, reason]),
    },
  };
}

function registration(
  instance: string,
  role: TaskRole,
  changelogs: (TopicPartition & { checkpoint?: number | null; store?: string })[],
  incarnation = 0,
): Registration {
  return {
    instance,
    taskId: instance.split("@")[0]!,
    incarnation,
    epoch: 1,
    role,
    changelogs: changelogs.map((c) => ({ topic: c.topic, partition: c.partition, store: c.store ?? "store", checkpoint: c.checkpoint ?? null })),
  };
}

function restorer(registry: RestoreRegistry, log: DurableLog, fakes: FakeInstances, more: Partial<RestorerOptions> = {}) {
  const reports: CorruptedInstance[][] = [];
  const r = new Restorer({
    registry,
    log,
    batchRecords: BATCH,
    readAhead: 0,
    apply: fakes.apply,
    reportCorruption: async (corrupted) => void reports.push(corrupted),
    ...more,
  });
  return { restorer: r, reports };
}

/** Rounds until one has nothing more to do (bounded). */
async function untilDone(r: Restorer, maxRounds = 50) {
  const rounds = [];
  for (let i = 0; i < maxRounds; i++) {
    const result = await r.round();
    rounds.push(result);
    if (!result.more) return rounds;
  }
  throw new Error(`restoration did not finish within ${maxRounds} rounds`);
}

describe("restore listeners", () => {
  it("an active restore from nothing: start once, one call per batch counting records, end with the total", async () => {
    const { name, log, tp } = await changelogWith(60);
    const { calls, restoreListener, standbyListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_0@a", "active");
      registry.register(registration("0_0@a", "active", [{ ...tp, store: "totals" }]));
      const { restorer: r } = restorer(registry, log, fakes, { restoreListener, standbyListener });
      const rounds = await untilDone(r);
      expect(rounds.map((x) => x.applied)).toEqual([1, 1, 1]);
      expect(fakes.position("0_0@a", tp)).toBe(60);
    });
    const at = `${name}/0`;
    expect(calls).toEqual([
      ["start", at, "totals", 0, 60],
      ["batch", at, "totals", 25, 25],
      ["batch", at, "totals", 50, 25],
      ["batch", at, "totals", 60, 10],
      ["end", at, "totals", 60],
    ]);
  });

  it("a restore from a checkpoint starts there and counts only the records it restored", async () => {
    const { name, log, tp } = await changelogWith(47);
    const { calls, restoreListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_1@a", "active");
      fakes.positions.set(`0_1@a|${name}/0`, 20);
      registry.register(registration("0_1@a", "active", [{ ...tp, checkpoint: 20 }]));
      await untilDone(restorer(registry, log, fakes, { restoreListener }).restorer);
      expect(registry.all()).toEqual([expect.objectContaining({ position: 47, caughtUp: true, restored: 27 })]);
    });
    const at = `${name}/0`;
    expect(calls).toEqual([
      ["start", at, "store", 20, 47],
      ["batch", at, "store", 45, 25],
      ["batch", at, "store", 47, 2],
      ["end", at, "store", 27],
    ]);
  });

  it("a batch the instance already has (delivered again after a lost reply) is no batch and no record for the listeners", async () => {
    const { name, log, tp } = await changelogWith(40);
    const { calls, restoreListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_2@a", "active");
      // The instance applied [0, 25) but the registry never heard its reply (the worker died).
      fakes.positions.set(`0_2@a|${name}/0`, 25);
      registry.register(registration("0_2@a", "active", [tp]));
      const rounds = await untilDone(restorer(registry, log, fakes, { restoreListener }).restorer);
      expect(rounds.map((x) => x.applied)).toEqual([0, 1]);
      expect(fakes.delivered.map((d) => [d.fromOffset, d.nextOffset, d.applied])).toEqual([
        [0, 25, false],
        [25, 40, true],
      ]);
    });
    const at = `${name}/0`;
    expect(calls.filter((c) => c[0] === "start")).toHaveLength(1);
    expect(calls.filter((c) => c[0] !== "start")).toEqual([
      ["batch", at, "store", 40, 15],
      ["end", at, "store", 15],
    ]);
  });

  it("reports restoration suspended when the changelog is truncated below the instance's position, with what it restored", async () => {
    const { name, log, tp } = await changelogWith(60);
    const { calls, restoreListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_3@a", "active", 4);
      registry.register(registration("0_3@a", "active", [tp], 4));
      const { restorer: r, reports } = restorer(registry, log, fakes, { restoreListener });
      await r.round();
      await log.deleteRecordsBefore(tp, 30);
      const result = await r.round();
      expect(result.corrupted).toEqual([{ instance: "0_3@a", taskId: "0_3", incarnation: 4, changelogs: [tp], reason: expect.stringContaining("truncated") }]);
      expect(reports).toEqual([result.corrupted]);
      // Unregistered: the revived incarnation registers anew.
      expect(registry.all()).toEqual([]);
    });
    const at = `${name}/0`;
    expect(calls).toEqual([
      ["start", at, "store", 0, 60],
      ["batch", at, "store", 25, 25],
      ["suspended", at, "store", 25],
    ]);
  });

  it("standbys go to the standby listener: update start, batches loaded with the end seen, and again when the changelog grows", async () => {
    const { name, log, tp } = await changelogWith(30);
    const { calls, restoreListener, standbyListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_0@b", "standby");
      registry.register(registration("0_0@b", "standby", [{ ...tp, store: "totals" }]));
      const { restorer: r } = restorer(registry, log, fakes, { restoreListener, standbyListener });
      await untilDone(r);
      // Caught up: nothing to do until the changelog grows.
      expect(await r.round()).toMatchObject({ applied: 0, more: false });
      await appendRecords(log, tp, 5);
      registry.transaction(() => registry.changelogGrew(tp));
      await untilDone(r);
      expect(fakes.position("0_0@b", tp)).toBe(35);
    });
    const at = `${name}/0`;
    expect(calls).toEqual([
      ["update-start", at, "totals", 0],
      ["loaded", at, "totals", 25, 25, 30],
      ["loaded", at, "totals", 30, 5, 30],
      ["loaded", at, "totals", 35, 5, 35],
    ]);
  });

  it("a corrupted standby is not an active restoration suspended, and a changelog that finished is not suspended either", async () => {
    const { name, catalog } = newTopic(2);
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    const done = { topic: name, partition: 0 };
    const cut = { topic: name, partition: 1 };
    await appendRecords(log, done, 10);
    await appendRecords(log, cut, 60);
    const { calls, restoreListener, standbyListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_0@a", "active");
      fakes.add("0_1@a", "standby");
      // An active with two stores: one changelog finishes in the first round, the other is cut.
      registry.register(
        registration("0_0@a", "active", [
          { ...done, store: "s0" },
          { ...cut, store: "s1" },
        ]),
      );
      registry.register(registration("0_1@a", "standby", [{ ...cut, store: "s1" }]));
      const { restorer: r, reports } = restorer(registry, log, fakes, { restoreListener, standbyListener });
      await r.round();
      await log.deleteRecordsBefore(cut, 40);
      const result = await r.round();
      expect(result.corrupted.map((c) => c.instance).sort()).toEqual(["0_0@a", "0_1@a"]);
      expect(reports).toHaveLength(1);
    });
    expect(calls.filter((c) => c[0] === "suspended")).toEqual([["suspended", `${name}/1`, "s1", 25]]);
    expect(calls.filter((c) => c[0] === "end")).toEqual([["end", `${name}/0`, "s0", 10]]);
  });
});

describe("restore windows", () => {
  it("an active restore in windows: one listener call per window, counting every record it stands for; the instance gets each key's latest", async () => {
    // 60 records over 7 keys; windows of two batches (read-ahead 1), then of everything (read-ahead 4).
    for (const [readAhead, windows] of [
      [1, [50, 60]],
      [4, [60]],
    ] as const) {
      const { name, log, tp } = await changelogWith(60);
      const { calls, restoreListener } = recorders();
      await withRegistry(async (registry) => {
        const fakes = new FakeInstances();
        fakes.add("0_0@a", "active");
        registry.register(registration("0_0@a", "active", [{ ...tp, store: "totals" }]));
        const rounds = await untilDone(restorer(registry, log, fakes, { restoreListener, readAhead }).restorer);
        expect(rounds.map((x) => x.applied)).toEqual(windows.map(() => 1));
        expect(fakes.position("0_0@a", tp)).toBe(60);
        expect(fakes.delivered.map((d) => [d.fromOffset, d.nextOffset, d.records])).toEqual(windows.map((end, i) => [i === 0 ? 0 : windows[i - 1], end, 7]));
        expect(registry.all()).toEqual([expect.objectContaining({ position: 60, caughtUp: true, restored: 60 })]);
      });
      const at = `${name}/0`;
      expect(calls).toEqual([
        ["start", at, "totals", 0, 60],
        ...windows.map((end, i) => ["batch", at, "totals", end, end - (i === 0 ? 0 : windows[i - 1]!)]),
        ["end", at, "totals", 60],
      ]);
    }
  });

  it("a standby's windows: loaded with the records they stand for and the end seen, and again as the changelog grows", async () => {
    const { name, log, tp } = await changelogWith(30);
    const { calls, standbyListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_0@b", "standby");
      registry.register(registration("0_0@b", "standby", [{ ...tp, store: "totals" }]));
      const { restorer: r } = restorer(registry, log, fakes, { standbyListener, readAhead: 4 });
      await untilDone(r);
      expect(await r.round()).toMatchObject({ applied: 0, more: false });
      await appendRecords(log, tp, 40);
      registry.transaction(() => registry.changelogGrew(tp));
      await untilDone(r);
      expect(fakes.position("0_0@b", tp)).toBe(70);
    });
    const at = `${name}/0`;
    expect(calls).toEqual([
      ["update-start", at, "totals", 0],
      ["loaded", at, "totals", 30, 30, 30],
      ["loaded", at, "totals", 70, 40, 70],
    ]);
  });

  it("a window stays within the batch bytes after compaction, reading no more than its room takes: every record read and restored once", async () => {
    const { name, catalog } = newTopic();
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    let fetched = 0;
    // A window reads the log's stored batches as they are (`fetchEncoded`), decoding only what it keeps.
    const fetch = log.fetchEncoded.bind(log);
    log.fetchEncoded = async (...args) => {
      const result = await fetch(...args);
      fetched += decodeBatches(result.batches).length;
      return result;
    };
    const tp = { topic: name, partition: 0 };
    // Every key new (nothing to compact), 18 bytes each: a 100-byte bound takes 5 a window.
    const records = Array.from({ length: 23 }, (_, i) => ({ key: `key-${String(i).padStart(4, "0")}`, value: `value-${String(i).padStart(4, "0")}` }));
    await log.append(tp, records);
    const { calls, restoreListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_0@a", "active");
      registry.register(registration("0_0@a", "active", [tp]));
      // Fetches of 3 records: a window takes one whole, then reads only what its room takes.
      await untilDone(restorer(registry, log, fakes, { restoreListener, readAhead: 4, batchRecords: 3, batchBytes: 100 }).restorer);
      expect(fakes.delivered.map((d) => [d.fromOffset, d.nextOffset, d.records, d.applied])).toEqual([
        [0, 5, 5, true],
        [5, 10, 5, true],
        [10, 15, 5, true],
        [15, 20, 5, true],
        [20, 23, 3, true],
      ]);
      expect(fetched).toBe(23);
    });
    expect(calls.filter((c) => c[0] === "batch").reduce((n, c) => n + (c[4] as number), 0)).toBe(23);
    expect(calls.at(-1)).toEqual(["end", `${name}/0`, "store", 23]);
  });
});

describe("restorer rounds", () => {
  it("touch at most `parallelism` instances each, and restore them all", async () => {
    const { name, catalog } = newTopic(6);
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    const instances = Array.from({ length: 6 }, (_, i) => `0_${i}@a`);
    for (let p = 0; p < 6; p++) await appendRecords(log, { topic: name, partition: p }, 30 + p);
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      instances.forEach((instance, p) => {
        fakes.add(instance, "active");
        registry.register(registration(instance, "active", [{ topic: name, partition: p }]));
      });
      let inFlight = 0;
      let mostInFlight = 0;
      const apply = async (instance: string, batch: RestoreBatch) => {
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          // Let every other batch of the round reach this point before answering.
          for (let i = 0; i < 20; i++) await Promise.resolve();
          return await fakes.apply(instance, batch);
        } finally {
          inFlight--;
        }
      };
      const { restorer: r } = restorer(registry, log, fakes, { parallelism: 2, apply });
      const touched: string[][] = [];
      for (let round = 0; round < 50; round++) {
        const before = fakes.delivered.length;
        const result = await r.round();
        touched.push([...new Set(fakes.delivered.slice(before).map((d) => d.instance))]);
        if (!result.more) break;
      }
      expect(touched.every((t) => t.length <= 2)).toBe(true);
      expect(touched[0]).toHaveLength(2);
      expect(mostInFlight).toBeLessThanOrEqual(2);
      instances.forEach((instance, p) => expect(fakes.position(instance, { topic: name, partition: p })).toBe(30 + p));
      // Two batches per instance (25 + the rest), two instances at a time.
      expect(touched.filter((t) => t.length > 0)).toHaveLength(6);
    });
  });

  it("the default parallelism is 4", async () => {
    const { name, catalog } = newTopic(6);
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    for (let p = 0; p < 6; p++) await appendRecords(log, { topic: name, partition: p }, 5);
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      for (let p = 0; p < 6; p++) {
        fakes.add(`0_${p}@a`, "active");
        registry.register(registration(`0_${p}@a`, "active", [{ topic: name, partition: p }]));
      }
      const { restorer: r } = restorer(registry, log, fakes);
      expect(await r.round()).toMatchObject({ applied: 4, more: true });
      expect(await r.round()).toMatchObject({ applied: 2, more: false });
    });
  });

  it("keeps a corrupted instance registered until the report reaches the coordinator, and reports it again", async () => {
    const { name, log, tp } = await changelogWith(60);
    const { calls, restoreListener } = recorders();
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      fakes.add("0_1@a", "active", 2);
      registry.register(registration("0_1@a", "active", [tp], 2));
      const reports: CorruptedInstance[][] = [];
      let reachable = false;
      const r = new Restorer({
        registry,
        log,
        batchRecords: BATCH,
        readAhead: 0,
        apply: fakes.apply,
        restoreListener,
        reportCorruption: async (corrupted) => {
          if (!reachable) throw new Error("coordinator unreachable");
          reports.push(corrupted);
        },
      });
      await r.round();
      await log.deleteRecordsBefore(tp, 30);
      // Unreported, the instance would be left restoring with nobody to wipe or restore it.
      await expect(r.round()).rejects.toThrow("coordinator unreachable");
      expect(registry.all().map((w) => [w.instance, w.incarnation])).toEqual([["0_1@a", 2]]);
      expect(calls.filter((c) => c[0] === "suspended")).toEqual([]);
      reachable = true;
      const result = await r.round();
      expect(reports).toEqual([result.corrupted]);
      expect(result.corrupted.map((c) => [c.instance, c.incarnation])).toEqual([["0_1@a", 2]]);
      expect(registry.all()).toEqual([]);
    });
    expect(calls.filter((c) => c[0] === "suspended")).toEqual([["suspended", `${name}/0`, "store", 25]]);
  });

  it("puts every instance corrupted in one round into one report", async () => {
    const { name, catalog } = newTopic(3);
    const log = new DurableLog(env.LOG_PARTITION, catalog);
    for (let p = 0; p < 3; p++) await appendRecords(log, { topic: name, partition: p }, 60);
    await withRegistry(async (registry) => {
      const fakes = new FakeInstances();
      for (let p = 0; p < 3; p++) {
        fakes.add(`0_${p}@a`, "active", p + 1);
        registry.register(registration(`0_${p}@a`, "active", [{ topic: name, partition: p }], p + 1));
      }
      const { restorer: r, reports } = restorer(registry, log, fakes);
      await r.round();
      await log.deleteRecordsBefore({ topic: name, partition: 0 }, 30);
      await log.deleteRecordsBefore({ topic: name, partition: 2 }, 30);
      await r.round();
      expect(reports).toHaveLength(1);
      expect(reports[0]!.map((c) => [c.instance, c.incarnation])).toEqual([
        ["0_0@a", 1],
        ["0_2@a", 3],
      ]);
      // The instance left alone goes on restoring.
      expect(registry.all().map((w) => w.instance)).toEqual(["0_1@a"]);
    });
  });
});

describe("restore listeners through the restore worker and a task object", () => {
  const driver = new TestDriver(env, application);
  const CHANGELOG = "edge-streams-totals-changelog";

  /** Installs listeners on the application; restore workers are restarted so their restorers take them. */
  async function listening<T>(fn: (calls: Call[]) => Promise<T>): Promise<T> {
    const { calls, restoreListener, standbyListener } = recorders();
    const app = application as { restoreListener?: unknown; standbyListener?: unknown };
    const restart = async () => {
      // (One not running starts afresh anyway.)
      for (const placement of ["a", "b"]) await restartDurableObject(driver.restoreWorker(placement));
    };
    app.restoreListener = restoreListener;
    app.standbyListener = standbyListener;
    await restart();
    try {
      return await fn(calls);
    } finally {
      app.restoreListener = undefined;
      app.standbyListener = undefined;
      await restart();
    }
  }

  it("a completed restoration ends, and is not also suspended", async () => {
    const keys = keysOn(1, 30, "listen-e2e");
    await driver.pipe(
      "orders",
      keys.flatMap((key) => [
        { key, value: { amount: 1 } },
        { key, value: { amount: 2 } },
      ]),
    );
    await driver.runUntilQuiet();
    const instance = await activeInstance(driver.instances(), "0_1");
    const end = ((await driver.task(instance).describe()) as TaskDescription).changelogs[0]!.end;
    await listening(async (calls) => {
      await call("/admin/restore/pause", { method: "POST" });
      await driver.task(instance).corrupt();
      await call("/admin/restore/resume", { body: {} });
      await driver.runUntilQuiet();
      expect(((await driver.task(instance).describe()) as TaskDescription).state).toBe("RUNNING");
      const at = `${CHANGELOG}/1`;
      const batches = calls.filter((c) => c[0] === "batch");
      expect(calls[0]).toEqual(["start", at, "totals", 0, end]);
      expect(batches.reduce((n, c) => n + (c[4] as number), 0)).toBe(end);
      // One call per window (two batches of 25 in tests, RESTORE_READ_AHEAD=1), counting every record it stands for.
      expect(batches.at(-1)).toEqual(["batch", at, "totals", end, end - WINDOW * (batches.length - 1)]);
      expect(batches.map((c) => c[3])).toEqual(batches.map((_, i) => Math.min(end, WINDOW * (i + 1))));
      expect(calls.at(-1)).toEqual(["end", at, "totals", end]);
      expect(calls.filter((c) => c[0] === "suspended")).toEqual([]);
    });
  });

  it("a restoration cut short by revocation is suspended with the records it restored", async () => {
    const taskId = "0_1";
    await listening(async (calls) => {
      await call("/admin/restore/pause", { method: "POST" });
      const home = await activeInstance(driver.instances(), taskId);
      await driver.task(home).corrupt();
      await call("/admin/restore/resume", { body: { maxBatches: 1 } });
      await driver.restoreRound();
      const away = home.placement === "a" ? "b" : "a";
      expect((await call(`/admin/tasks/${taskId}/migrate`, { body: { to: away } })).status).toBe(200);
      expect(calls.filter((c) => c[0] !== "start" && c[0] !== "batch")).toEqual([["suspended", `${CHANGELOG}/1`, "totals", WINDOW]]);
      await call("/admin/restore/resume", { body: {} });
      await driver.runUntilQuiet();
      expect(calls.filter((c) => c[0] === "end")).toHaveLength(1);
    });
  });
});
