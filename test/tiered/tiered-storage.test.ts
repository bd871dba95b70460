/**
 * Tiered storage on miniflare's R2 (the `tiered` project): closed rows move to R2 as segments and
 * leave the partition's SQLite; fetches across the local/remote boundary return exactly the
 * records appended; a crash after a segment's put, and after retention removed a segment's row,
 * converge; the orphan sweep deletes what a late put left and nothing else; retention deletes
 * remote segments; a task reads a tiered input from offset 0.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PartitionStore } from "../../src/log/partition-store";
import { decodeFetch } from "../../src/log/record-batch";
import { RemoteLogManager, type TieringCrashPoint } from "../../src/log/remote-log-manager";
import { DEFAULT_SWEEP, SWEEP_DUE_KEY } from "../../src/log/remote-sweep";
import { topicConfig, type TopicConfig } from "../../src/log/topic-config";
import type { LogRecord, TopicPartition } from "../../src/log/types";
import { CrashPoints } from "../../src/util/crash-points";
import { Host } from "../../platform/host";
import { application } from "../support/orders-app";
import { TestDriver } from "../../platform/testing/test-driver";
import { topicPartition } from "../../src/names";
import { call, json } from "../support/api";
import { keysOn } from "../support/keys";
import { until } from "../support/until";
import { kafka, ok } from "../kafka-rest/support";

/** The project's R2 bucket (test/tiered/wrangler.toml; the root Worker's generated Env has none). */
const bucket = (env as unknown as { TIERED_STORAGE: R2Bucket }).TIERED_STORAGE;
let scratch = 0;
const DAY = 86_400_000;

class Crash extends Error {}

/** A partition's store and remote log on a scratch object's storage; `restart` builds them again on the same storage, as after a crash. */
async function withPartition(fn: (p: { tp: TopicPartition; storage: DurableObjectStorage; restart: () => Parts }) => Promise<void>): Promise<void> {
  const name = `tiered-scratch-${++scratch}`;
  const tp = { topic: name, partition: 0 };
  await runInDurableObject(env.LOG_PARTITION.getByName(name), async (_object, state) => {
    await fn({ tp, storage: state.storage, restart: () => parts(state.storage, name) });
  });
}

type Parts = ReturnType<typeof parts>;
function parts(storage: DurableObjectStorage, prefix: string, clock = { now: 1_000_000 }) {
  const store = new PartitionStore(storage, () => clock.now);
  const crashes = new CrashPoints<TieringCrashPoint>((reason) => {
    throw new Crash(reason);
  });
  return { store, remote: new RemoteLogManager(store, bucket, `test/${prefix}`, crashes, storage.kv), crashes, clock };
}

/** The objects of a partition's segments in R2 are named by their base offset (20 digits) and their upload. */
const segmentOf = (tp: TopicPartition, base: number) =>
  new RegExp(`^test/${tp.topic}/${tp.topic}/0/${String(base).padStart(20, "0")}-[0-9a-f-]{36}\\.segment$`);

const tieredConfig = (overrides: Partial<TopicConfig> = {}) => topicConfig("user", { "remote.storage.enable": true, "local.retention.bytes": 0, ...overrides });
const count = (storage: DurableObjectStorage, table: string) => storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;

/** Appends `batches` batches of 10 records, each with a header and a timestamp. */
function fill(p: Parts, tp: TopicPartition, batches: number, from = 0): void {
  p.store.configure(tp, p.store.config() ?? tieredConfig());
  for (let b = from; b < from + batches; b++) {
    const records = Array.from({ length: 10 }, (_, i) => ({
      key: `k${(b * 10 + i) % 7}`,
      value: `v${b * 10 + i}`,
      timestamp: 500_000 + b * 10 + i,
      headers: [{ key: "h", value: `${b}` }],
    }));
    p.store.append(tp, records);
  }
}

/** Every record from `from`, fetched in small bounds through the remote log. */
async function readAll(p: Parts, tp: TopicPartition, from = 0, maxRecords = 7): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  let offset = from;
  for (;;) {
    const fetched = decodeFetch(await p.remote.fetchEncoded(tp, offset, { maxRecords, maxBytes: 1 << 20 }));
    // An uncut fetch (a restore window's) serves the same records, remote rows as stored too.
    expect(decodeFetch(await p.remote.fetchEncoded(tp, offset, { maxRecords, maxBytes: 1 << 20, uncut: true }))).toEqual(fetched);
    out.push(...fetched.records);
    if (fetched.nextOffset >= fetched.latest) return out;
    offset = fetched.nextOffset;
  }
}

async function keysIn(prefix: string): Promise<string[]> {
  return (await bucket.list({ prefix })).objects.map((o) => o.key).sort();
}

describe("tiered storage", () => {
  it("moves closed rows to R2 as segments, leaves the newest row local, and fetches across the boundary return exactly the records", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const p = restart();
      fill(p, tp, 30);
      const before = readLocal(p, tp);
      expect(count(storage, "record_batches")).toBe(30);
      const result = await p.remote.maintain(tp, p.clock.now);
      expect(result.tiered).toBe(1);
      expect(result.rowsMoved).toBe(29);
      expect(count(storage, "record_batches")).toBe(1);
      expect(count(storage, "remote_segments")).toBe(1);
      const keys = await keysIn(`test/${tp.topic}/`);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(segmentOf(tp, 0));
      expect(await readAll(p, tp)).toEqual(before);
      expect(await readAll(p, tp, 0, 1000)).toEqual(before);
      expect(await readAll(p, tp, 123, 5)).toEqual(before.slice(123));
      expect(p.store.stats(tp)).toMatchObject({ earliest: 0, latest: 300, records: 300, remote: { segments: 1, records: 290 } });
      expect(await p.remote.offsetForTimestamp(tp, 500_042)).toBe(42);
      // The local fetch refuses an offset R2 holds (it would skip it).
      expect(() => p.store.fetchEncoded(tp, 5, { maxRecords: 1, maxBytes: 100 })).toThrow(/remote storage/);
      // After a restart the same records come back, from R2 again.
      expect(await readAll(restart(), tp)).toEqual(before);
    }));

  it("converges after a crash between a segment's put and its transaction: the retry uploads it under its own key, the first object is deleted", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const p = restart();
      fill(p, tp, 10);
      const before = readLocal(p, tp);
      p.crashes.plan("tiering:after-put");
      await expect(p.remote.maintain(tp, p.clock.now)).rejects.toThrow(Crash);
      const [first] = await keysIn(`test/${tp.topic}/`);
      expect(first).toMatch(segmentOf(tp, 0));
      expect(count(storage, "remote_segments")).toBe(0);
      expect(count(storage, "remote_deletions")).toBe(1);
      expect(count(storage, "record_batches")).toBe(10);
      // More arrives before the retry: the segment grows.
      const again = restart();
      fill(again, tp, 5, 10);
      const all = readLocal(again, tp);
      expect(all.slice(0, 100)).toEqual(before);
      expect(await again.remote.maintain(tp, again.clock.now)).toMatchObject({ tiered: 1, objectsDeleted: 1 });
      const keys = await keysIn(`test/${tp.topic}/`);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(segmentOf(tp, 0));
      expect(keys[0]).not.toBe(first);
      expect(count(storage, "remote_segments")).toBe(1);
      expect(count(storage, "remote_deletions")).toBe(0);
      expect(await readAll(again, tp)).toEqual(all);
    }));

  it("leaves no orphan in R2 when the log start moves past a segment whose put crashed before its transaction", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const p = restart();
      fill(p, tp, 10);
      p.crashes.plan("tiering:after-put");
      await expect(p.remote.maintain(tp, p.clock.now)).rejects.toThrow(Crash);
      const keys = await keysIn(`test/${tp.topic}/`);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(segmentOf(tp, 0));
      // Before the retry, the log start moves past the rows that object holds: the retry starts elsewhere.
      const again = restart();
      again.store.deleteRecordsBefore(tp, 50);
      expect(again.store.maintenanceDueAt(again.clock.now)).toBe(again.clock.now);
      const result = await again.remote.maintain(tp, again.clock.now);
      expect(result).toMatchObject({ tiered: 1, objectsDeleted: 1 });
      const after = await keysIn(`test/${tp.topic}/`);
      expect(after).toHaveLength(1);
      expect(after[0]).toMatch(segmentOf(tp, 50));
      expect(count(storage, "remote_segments")).toBe(1);
      expect(count(storage, "remote_deletions")).toBe(0);
      expect((await readAll(again, tp, 50)).map((r) => r.value)).toEqual(Array.from({ length: 50 }, (_, i) => `v${50 + i}`));
    }));

  it("sweeps the object a put that landed late left in R2, after the grace period, never a segment, and converges after a crash before its delete", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const prefix = `test/${tp.topic}/${tp.topic}/0/`;
      const at = (now: number) => {
        const q = restart();
        q.clock.now = now;
        return q;
      };
      const p = at(Date.now());
      fill(p, tp, 10);
      const before = readLocal(p, tp);
      p.crashes.plan("tiering:after-put");
      await expect(p.remote.maintain(tp, p.clock.now)).rejects.toThrow(Crash);
      const [late] = await keysIn(prefix);
      const body = await (await bucket.get(late!))!.text();
      // The next maintenance uploads the segment again under its own key and, by the note, deletes the first object.
      const again = at(Date.now());
      expect(await again.remote.maintain(tp, again.clock.now)).toMatchObject({ tiered: 1, objectsDeleted: 1, orphansDeleted: 0 });
      const [segment] = await keysIn(prefix);
      expect(segment).not.toBe(late);
      // The sweep ran (the partition had never been swept) and is next due a day later: one KV row.
      expect(storage.kv.get(SWEEP_DUE_KEY)).toBe(again.clock.now + DEFAULT_SWEEP.intervalMs);
      // The first put was still in flight when its object crashed: it lands now, after its note was processed. Nothing names it.
      await bucket.put(late!, body);
      const otherPartition = `test/${tp.topic}/${tp.topic}/1/${"0".padStart(20, "0")}-x.segment`;
      await bucket.put(otherPartition, "another partition's");
      await bucket.put(`${prefix}README`, "no segment's");
      expect(await keysIn(prefix)).toEqual([late, segment, `${prefix}README`].sort());
      // A sweep within the grace period keeps it (it may still be landing).
      storage.kv.put(SWEEP_DUE_KEY, 0);
      const soon = at(Date.now());
      expect(await soon.remote.maintain(tp, soon.clock.now)).toMatchObject({ orphansDeleted: 0, nextAt: soon.clock.now + DEFAULT_SWEEP.intervalMs });
      expect(await keysIn(prefix)).toContain(late);
      // A day later the sweep is due again, the object past the grace period. A crash before the delete changes nothing.
      const dayLater = soon.clock.now + DEFAULT_SWEEP.intervalMs;
      const crashing = at(dayLater);
      crashing.crashes.plan("sweep:before-object-delete");
      await expect(crashing.remote.maintain(tp, dayLater)).rejects.toThrow(Crash);
      expect(await keysIn(prefix)).toContain(late);
      expect(storage.kv.get(SWEEP_DUE_KEY)).toBe(dayLater);
      const last = at(dayLater);
      expect(await last.remote.maintain(tp, dayLater)).toMatchObject({ tiered: 0, objectsDeleted: 0, orphansDeleted: 1, more: false });
      expect(await keysIn(prefix)).toEqual([segment, `${prefix}README`].sort());
      expect(await keysIn(otherPartition)).toEqual([otherPartition]);
      expect(storage.kv.get(SWEEP_DUE_KEY)).toBe(dayLater + DEFAULT_SWEEP.intervalMs);
      expect(count(storage, "remote_segments")).toBe(1);
      expect(await readAll(last, tp)).toEqual(before);
      await bucket.delete([otherPartition, `${prefix}README`]);
    }));

  it("retention deletes remote segments, and a crash between the row's delete and the object's converges", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const p = restart();
      p.store.configure(tp, tieredConfig({ "retention.ms": DAY }));
      fill(p, tp, 10);
      await p.remote.maintain(tp, p.clock.now);
      fill(p, tp, 10, 10);
      await p.remote.maintain(tp, p.clock.now);
      expect(count(storage, "remote_segments")).toBe(2);
      expect(await keysIn(`test/${tp.topic}/`)).toHaveLength(2);
      // Two days later every row is past retention.ms: the segments go, then the local rows.
      p.clock.now += 2 * DAY;
      const result = p.store.maintain(tp, p.clock.now);
      expect(result.deleted).toBe(200);
      expect(count(storage, "remote_segments")).toBe(0);
      expect(p.store.maintenanceDueAt(p.clock.now)).toBe(p.clock.now);
      p.crashes.plan("retention:before-object-delete");
      await expect(p.remote.maintain(tp, p.clock.now)).rejects.toThrow(Crash);
      expect(await keysIn(`test/${tp.topic}/`)).toHaveLength(2);
      const again = restart();
      again.store.offsets(tp);
      expect(again.store.maintenanceDueAt(again.clock.now)).toBe(again.clock.now);
      expect((await again.remote.maintain(tp, again.clock.now)).objectsDeleted).toBe(2);
      expect(await keysIn(`test/${tp.topic}/`)).toEqual([]);
      expect(count(storage, "remote_deletions")).toBe(0);
      expect(again.store.offsets(tp)).toEqual({ earliest: 200, latest: 200 });
      await expect(again.remote.fetchEncoded(tp, 100, { maxRecords: 1, maxBytes: 100 })).rejects.toThrow(/outside/);
    }));

  it("size retention counts remote bytes and deletes the oldest segments", () =>
    withPartition(async ({ tp, storage, restart }) => {
      const p = restart();
      fill(p, tp, 10);
      await p.remote.maintain(tp, p.clock.now);
      fill(p, tp, 10, 10);
      await p.remote.maintain(tp, p.clock.now);
      const total = p.store.stats(tp).bytes;
      const first = storage.sql.exec<{ bytes: number }>("SELECT bytes FROM remote_segments ORDER BY base_offset LIMIT 1").one().bytes;
      p.store.configure(tp, tieredConfig({ "retention.bytes": total - first, "local.retention.bytes": 0 }));
      p.store.maintain(tp, p.clock.now);
      expect(p.store.offsets(tp).earliest).toBe(90);
      expect(count(storage, "remote_segments")).toBe(1);
      await p.remote.maintain(tp, p.clock.now);
      expect(await keysIn(`test/${tp.topic}/`)).toHaveLength(1);
    }));

  it("refuses a topic with remote storage when the Worker has no TIERED_STORAGE bucket", () => {
    expect(() => Host.of(application, { ...env, TIERED_STORAGE: undefined })).toThrow(/TIERED_STORAGE binding/);
  });

  it("the partition's alarm moves rows to R2 on its own", async () => {
    const tp = { topic: "tiered-log", partition: 0 };
    const log = Host.of(application, env).log;
    for (let i = 0; i < 3; i++) await log.append(tp, [{ key: "k", value: `v${i}` }]);
    const partition = env.LOG_PARTITION.getByName(topicPartition(tp));
    await until(
      async () => {
        await runDurableObjectAlarm(partition);
        const stats = (await partition.stats(tp)) as { ok: true; value: { remote?: { records: number } } };
        return stats.value.remote?.records === 2;
      },
      10_000,
      "the alarm to tier the two older rows",
    );
    // Read back from the start across R2 and the partition: the two rows went as one segment or two
    // (as the alarm found them: one at a time when it ran between the appends), and a fetch stops
    // at a segment's end, so the pages are read to the end.
    const values: (string | null)[] = [];
    for (let offset = 0; offset < 3; ) {
      const page = await log.fetch(tp, offset, { maxRecords: 10, maxBytes: 1 << 20 });
      expect(page.records.length).toBeGreaterThan(0);
      values.push(...page.records.map((r) => r.value));
      offset = page.nextOffset;
    }
    expect(values).toEqual(["v0", "v1", "v2"]);
  });

  it("a task reads its tiered input from offset 0, and /kafka fetches it: records in R2 are read like local ones", async () => {
    const tp = { topic: "orders", partition: 3 };
    const [key] = keysOn(tp.partition, 1, "tiered-input");
    // Through /kafka (an external producer): no task comes into being yet.
    const offsets: number[] = [];
    for (let i = 1; i <= 20; i++) {
      const [meta] = await ok<{ offset: number }[]>(kafka("/produce", { body: { topic: tp.topic, partition: tp.partition, key, value: `{"amount":${i}}` } }));
      offsets.push(meta!.offset);
    }
    const partition = env.LOG_PARTITION.getByName(topicPartition(tp));
    const maintained = (await partition.maintain(tp)) as { ok: true; value: { tiering?: { tiered: number } } };
    expect(maintained.value.tiering?.tiered).toBe(1);
    // /kafka reads them from R2 like local ones: a fetch from the first offset goes on across the boundary.
    const fetched: { offset: number; value: string }[] = [];
    for (let offset = offsets[0]!; fetched.length < 20; ) {
      const page = await ok<{ offset: number; value: string }[]>(kafka("/fetch", { body: { topic: tp.topic, partition: tp.partition, offset } }));
      expect(page.length).toBeGreaterThan(0);
      fetched.push(...page);
      offset = page.at(-1)!.offset + 1;
    }
    expect(fetched.map((m) => [m.offset, m.value])).toEqual(offsets.map((offset, i) => [offset, `{"amount":${i + 1}}`]));
    const topic = await json(await call(`/topics/${tp.topic}`));
    expect(JSON.stringify(topic)).toContain('"remote"');
    // The application's own append makes the task, which reads from offset 0: 19 records from R2.
    await new TestDriver(env, application).log.append(tp, [{ key: key!, value: '{"amount":1000}' }]);
    await until(
      async () => {
        const response = await call(`/stores/totals/keys/${key}`);
        return response.status === 200 && (await json(response)).value.sum === 210 + 1000;
      },
      15_000,
      "the task to have processed every order, the tiered ones included",
    );
  });
});

function readLocal(p: Parts, tp: TopicPartition): LogRecord[] {
  return p.store.fetch(tp, 0, { maxRecords: 100_000, maxBytes: 1 << 30 }).records;
}
