/**
 * The changelog of windowed stores (window, session, suppression and join buffers): one record
 * per entry written or deleted, and a store restored from it exactly — from the changelog as
 * written, after compaction, from a changelog of the layout before (every index and meta row a
 * record of its own), and from one upgraded in place — so that a task restored after a crash or a
 * wipe emits exactly what its predecessor would have, each final result once. Restore windows,
 * which compact the records a restore reads ahead, restore it exactly too.
 */
import { describe, expect, it } from "vitest";
import {
  createTaskProcessor,
  InMemoryKeyValueStore,
  InMemoryStoreBackend,
  type InputRecord,
  type OutgoingRecord,
  type StoreBackend,
  type TaskProcessor,
  type Topology,
} from "../../src/streams";
import { ChangeLoggingKeyValueStore } from "../../src/streams/runtime/change-logging-store";
import { restoredWrites } from "../../src/streams/state/time-keyed-changelog";
import { TimeKeyedStore } from "../../src/streams/state/time-keyed-store";
import { TOMBSTONE_HEADER } from "../../src/task/record-collector";
import { CompactedWindow } from "../../src/restore/compacted-window";
import { measure, SHAPES, shapeInput, shapeTopology } from "./support/windowed-cost";

/** A changelog record as the log keeps it (a tombstone: empty value and the tombstone header, as the collector writes it). */
interface Logged {
  readonly key: string;
  readonly value: string | null;
  readonly timestamp: number;
  readonly headers: readonly { key: string; value: string }[];
}

/** A backend that also records every row written, as the layout before logged each: a changelog of that layout. */
class LegacyRecordingBackend implements StoreBackend {
  readonly legacy = new Map<string, Logged[]>();
  private readonly stores = new Map<string, InMemoryKeyValueStore>();
  recording = true;

  keyValue(storeName: string): InMemoryKeyValueStore {
    let store = this.stores.get(storeName);
    if (store) return store;
    store = new InMemoryKeyValueStore();
    const log = (record: Logged) => {
      if (this.recording) this.legacy.set(storeName, [...(this.legacy.get(storeName) ?? []), record]);
    };
    const { put, delete: remove } = store;
    store.put = (key, value, timestamp = -1) => {
      log({ key, value, timestamp, headers: [] });
      put.call(store, key, value, timestamp);
    };
    store.delete = (key) => {
      log({ key, value: null, timestamp: 0, headers: [] });
      remove.call(store, key);
    };
    this.stores.set(storeName, store);
    return store;
  }

  contents(storeName: string): Record<string, string> {
    return Object.fromEntries(
      this.keyValue(storeName)
        .range()
        .map(({ key, value }) => [key, value]),
    );
  }
}

function storeNames(topology: Topology): string[] {
  return topology.subtopologies[0]!.stores.map((s) => s.name);
}

function changelogTopic(topology: Topology, store: string): string {
  return topology.subtopologies[0]!.stores.find((s) => s.name === store)!.changelogTopic;
}

/** A task processing `inputs`, committing every `commitEvery`: what it sent, and where each commit ended. */
class Run {
  readonly sent: OutgoingRecord[] = [];
  /** Per commit: the number of records sent by then. */
  readonly commits: number[] = [];
  readonly task: TaskProcessor;

  constructor(
    readonly topology: Topology,
    readonly stores: StoreBackend,
  ) {
    this.task = createTaskProcessor(topology, "0_0", { stores, collector: { send: (r) => void this.sent.push(r) } });
  }

  process(inputs: readonly InputRecord[], commitEvery: number): this {
    inputs.forEach((record, i) => {
      this.task.process(record);
      if ((i + 1) % commitEvery === 0 || i === inputs.length - 1) this.commit();
    });
    return this;
  }

  commit(): void {
    this.task.flush();
    this.commits.push(this.sent.length);
  }

  /** A store's changelog up to the `sent` index `upTo`, as the log keeps it. */
  changelog(store: string, upTo = this.sent.length): Logged[] {
    const topic = changelogTopic(this.topology, store);
    return this.sent
      .slice(0, upTo)
      .filter((r) => r.topic === topic)
      .map((r) => ({
        key: r.key!,
        value: r.value,
        timestamp: r.timestamp,
        headers: r.value === null ? [...r.headers, { key: TOMBSTONE_HEADER, value: "1" }] : r.headers,
      }));
  }

  outputs(from = 0, upTo = this.sent.length): string[] {
    return this.sent
      .slice(from, upTo)
      .filter((r) => r.topic === "out")
      .map((r) => `${r.key}=${r.value}@${r.timestamp}`);
  }
}

/** Compaction at its hardest: each key's latest record only, and no tombstone at all (their retention passed). */
function compact(records: readonly Logged[]): Logged[] {
  const latest = new Map<string, number>();
  for (const [i, r] of records.entries()) latest.set(r.key, i);
  return records.filter((r, i) => latest.get(r.key) === i && r.value !== null);
}

/**
 * What restore windows (src/restore/compacted-window.ts) of `size` records each hand the
 * instance, one after another: each window's records compacted to each key's latest, tombstones
 * kept.
 */
function inWindows(records: readonly Logged[], size: number): Logged[] {
  const out: Logged[] = [];
  for (let at = 0; at < records.length; at += size) {
    const window = new CompactedWindow(at, 1 << 20);
    // As the log keeps them: a delete of the layout before (a null value) is a tombstone there.
    const logged = records.slice(at, at + size).map((r, i) => ({
      ...r,
      offset: at + i,
      value: r.value ?? "",
      headers: r.value === null ? [...r.headers, { key: TOMBSTONE_HEADER, value: "1" }] : r.headers,
    }));
    window.add({ records: logged, nextOffset: at + size });
    out.push(...window.records().map(({ key, value, timestamp, headers }) => ({ key: key!, value, timestamp, headers })));
  }
  return out;
}

/** A fresh backend with `changelogs` replayed into it, as restoration applies them. */
function restore(changelogs: ReadonlyMap<string, readonly Logged[]>): InMemoryStoreBackend {
  const backend = new InMemoryStoreBackend();
  for (const [store, records] of changelogs) {
    const raw = backend.keyValue(store);
    for (const record of records) {
      const tombstone = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
      for (const write of restoredWrites(record.key, tombstone ? null : record.value, record.timestamp, record.headers)) {
        if (write.value === null) raw.delete(write.key);
        else raw.put(write.key, write.value, write.timestamp);
      }
    }
  }
  return backend;
}

/** A store's rows without index rows whose entry is gone (what an upgraded changelog may leave after compaction, and reads drop). */
function withoutOrphans(rows: Record<string, string>): Record<string, string> {
  const data = new Set(Object.keys(rows).filter((k) => k.startsWith("d")));
  return Object.fromEntries(
    Object.entries(rows).filter(([key]) => {
      if (!key.startsWith("i")) return true;
      const times = key.slice(1, 33);
      return data.has(`d${key.slice(33)}${times}`);
    }),
  );
}

describe("a windowed store's changelog", () => {
  it("has one record per update: the entry's, with no index or meta record beside it", () => {
    for (const shape of SHAPES) {
      const n = 200;
      const batched = measure(shape, n, 100);
      const perRecord = measure(shape, n, 1);
      // Every input record updates one entry of each time-aware store it reaches (the suppressions: the window store and the buffer).
      const stores = shape === "suppress" || shape === "bounded-suppress" ? 2 : 1;
      // Operators that move a meta row after their last write (emitting closed windows, sliding windows'
      // observed time, an outer join's buffer, a bounded buffer's counts) log it once per commit at most.
      expect(batched.otherRecords, shape).toBeLessThanOrEqual(Math.ceil(n / 100) * stores);
      if (["tumbling", "session", "suppress", "join"].includes(shape)) expect(batched.otherRecords, shape).toBe(0);
      // Each entry written or deleted is one record; and most records update one entry per store (sliding windows: several).
      expect(batched.entryPuts + batched.entryTombstones, shape).toBe(batched.entryWrites);
      if (shape !== "outer-join" && shape !== "sliding-on-close") {
        expect(batched.entryPuts, shape).toBeLessThanOrEqual(n * stores);
        expect(batched.entryPuts, shape).toBeGreaterThanOrEqual(n * stores * 0.85);
      }
      // At most one record of another row (a meta row, a buffer's counts) per store and commit.
      expect(perRecord.otherRecords, shape).toBeLessThanOrEqual(n * (stores + 1));
      expect(perRecord.entryPuts + perRecord.entryTombstones, shape).toBe(batched.entryPuts + batched.entryTombstones);
    }
    // Before, a window's update sent its data row, its meta row and, for a new window, its index row:
    // 3 records per record here. Now: its data row only (and a tombstone per window retention drops).
    const tumbling = measure("tumbling", 200, 1);
    expect(tumbling.changelogRecords).toBe(tumbling.entryPuts + tumbling.entryTombstones);
    expect(tumbling.entryPuts).toBeLessThanOrEqual(200);
    expect(tumbling.changelogRecords / 200).toBeLessThan(1.35);
  }, 30_000);

  it("rebuilds the store exactly (entries, index, meta) and the same results follow, as written, compacted, of the layout before, and upgraded in place", () => {
    for (const shape of SHAPES) {
      const topology = shapeTopology(shape);
      const inputs = shapeInput(shape, 150);
      const [first, second] = [inputs.slice(0, 100), inputs.slice(100)];
      const reference = new Run(topology, new InMemoryStoreBackend()).process(inputs, 5);
      const expected = reference.outputs(reference.commits[100 / 5 - 1]);

      // The first part processed with every row recorded as the layout before logged it; its first half only, for the upgrade.
      const backend = new LegacyRecordingBackend();
      const live = new Run(topology, backend);
      live.process(first.slice(0, 50), 5);
      const upgradeAt = live.sent.length;
      backend.recording = false;
      live.process(first.slice(50), 5);
      const upgraded = (store: string) => [
        ...(backend.legacy.get(store) ?? []),
        ...live.changelog(store).filter((_, i) => i >= live.changelog(store, upgradeAt).length),
      ];
      const legacyRun = new LegacyRecordingBackend();
      new Run(topology, legacyRun).process(first, 5);

      const variants: Record<string, (store: string) => Logged[]> = {
        "as written": (store) => live.changelog(store),
        compacted: (store) => compact(live.changelog(store)),
        "of the layout before": (store) => legacyRun.legacy.get(store) ?? [],
        "of the layout before, compacted": (store) => compact(legacyRun.legacy.get(store) ?? []),
        "upgraded in place": upgraded,
        "upgraded in place, compacted": (store) => compact(upgraded(store)),
        "in restore windows of 7": (store) => inWindows(live.changelog(store), 7),
        "in restore windows of 40": (store) => inWindows(live.changelog(store), 40),
        "of the layout before, in restore windows of 16": (store) => inWindows(legacyRun.legacy.get(store) ?? [], 16),
      };
      for (const [variant, changelog] of Object.entries(variants)) {
        const restored = restore(new Map(storeNames(topology).map((store) => [store, changelog(store)])));
        for (const store of storeNames(topology)) {
          const contents = restored.contents(store);
          const wanted = backend.contents(store);
          if (variant.startsWith("upgraded") && variant.endsWith("compacted")) expect(withoutOrphans(contents), `${shape} ${variant} ${store}`).toEqual(wanted);
          else expect(contents, `${shape} ${variant} ${store}`).toEqual(wanted);
        }
        const after = new Run(topology, restored).process(second, 5);
        expect(after.outputs(), `${shape} ${variant}`).toEqual(expected);
      }
    }
  }, 60_000);

  it("gives a task wiped at any commit, restored and fed its input again, each result exactly once", () => {
    for (const shape of SHAPES) {
      const topology = shapeTopology(shape);
      const inputs = shapeInput(shape, 90);
      const commitEvery = 7;
      const reference = new Run(topology, new InMemoryStoreBackend()).process(inputs, commitEvery);
      for (const compacted of [false, true, "in restore windows"] as const) {
        for (let commit = 1; commit * commitEvery < inputs.length; commit += 2) {
          // The task runs on past the commit, then is wiped: what it sent after the commit is lost.
          const crashed = new Run(topology, new InMemoryStoreBackend()).process(inputs.slice(0, commit * commitEvery + 3), commitEvery);
          const committed = crashed.commits[commit - 1]!;
          const changelogs = new Map(storeNames(topology).map((store) => [store, crashed.changelog(store, committed)]));
          if (compacted === true) for (const [store, records] of changelogs) changelogs.set(store, compact(records));
          if (compacted === "in restore windows") for (const [store, records] of changelogs) changelogs.set(store, inWindows(records, 5 + commit));
          const resumed = new Run(topology, restore(changelogs)).process(inputs.slice(commit * commitEvery), commitEvery);
          expect(
            [...crashed.outputs(0, committed), ...resumed.outputs()],
            `${shape}, wiped after commit ${commit}${compacted === true ? ", compacted" : compacted ? `, ${compacted}` : ""}`,
          ).toEqual(reference.outputs());
        }
      }
    }
  }, 60_000);

  it("logs the meta row at the commit when the record that carried it is deleted (compaction would drop both)", () => {
    const sent: OutgoingRecord[] = [];
    const inner = new InMemoryKeyValueStore();
    const logged = new ChangeLoggingKeyValueStore(inner, "t-s-changelog", 0, { send: (r) => void sent.push(r) }, () => ({ timestamp: 100, headers: [] }));
    const store = new TimeKeyedStore(logged);
    const changelog = () => sent.map((r) => ({ key: r.key!, value: r.value, timestamp: r.timestamp, headers: r.headers }));
    const restoredMeta = () =>
      restore(new Map([["s", compact(changelog())]]))
        .keyValue("s")
        .get("m");

    store.advance(100);
    store.put("k", 100, 0, "v");
    logged.flushOwed();
    // The put carried the meta: no record of its own.
    expect(sent.map((r) => r.key![0])).toEqual(["d"]);
    expect(restoredMeta()).toBe(inner.get("m"));

    // The entry goes, the meta stays as it was: the put that carried it is superseded by the tombstone.
    store.delete("k", 100, 0);
    logged.flushOwed();
    expect(sent.map((r) => r.key![0])).toEqual(["d", "d", "m"]);
    expect(restoredMeta()).toBe(inner.get("m"));

    // A new store over the same rows does not know which record carried the meta: its first delete logs it too.
    store.put("k", 100, 1, "w");
    const fresh = new ChangeLoggingKeyValueStore(inner, "t-s-changelog", 0, { send: (r) => void sent.push(r) }, () => ({ timestamp: 100, headers: [] }));
    new TimeKeyedStore(fresh).delete("k", 100, 1);
    fresh.flushOwed();
    expect(sent.map((r) => r.key![0])).toEqual(["d", "d", "m", "d", "d", "m"]);
    expect(restoredMeta()).toBe(inner.get("m"));
  });
});
