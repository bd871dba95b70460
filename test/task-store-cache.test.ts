/**
 * What a task keeps of its tables in memory — the stores' copy (a write-through cache), the
 * outbox, the checkpoints and input positions — must never show what storage does not hold: not
 * after a rolled-back commit, not after a wipe, not after restoration wrote the table. A `StreamTask` is run here step by step inside a task object.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../src/log/durable-log";
import { DEFAULT_CACHE_LIMITS, SqliteKeyValueStore, SqliteStoreBackend } from "../src/task/sqlite-stores";
import { StreamTask } from "../src/task/stream-task";
import { totalsApp } from "./support/totals-app";
import { TaskStorage } from "../src/task/task-storage";
import { Sql } from "../src/storage/sql";
import { compareKeys } from "../src/streams/state/key-value-store";
import { mulberry32 } from "./model/schedule";
import { storedValue } from "./support/store-rows";

const order = (key: string, amount: unknown) => ({ key, value: JSON.stringify({ amount }) });

describe("in-memory copies of a task's tables", () => {
  it("never serve a store value from a rolled-back commit, a wiped store or before a restore", async () => {
    const id = "cache-rollback";
    const app = totalsApp(id);
    const log = new DurableLog(env.LOG_PARTITION, app.catalog);
    const input = { topic: `${id}-orders`, partition: 0 };
    const store = `${id}-totals`;
    const stub = env.TASK_OBJECT.getByName(`${id}@x`);
    await runInDurableObject(stub, async (_, state) => {
      const task = new StreamTask({ application: app, log, storage: state.storage });
      await task.assign({ taskId: "0_0", placement: "x", role: "active", epoch: 1 });
      expect(task.meta()?.state).toBe("RUNNING");

      await log.append(input, [order("alice", 1)]);
      expect(await task.step()).toBe("more");
      expect(JSON.parse(task.queries.get(store, "alice")!)).toEqual({ count: 1, sum: 1 });
      expect(task.queries.get(store, "bob")).toBeUndefined();

      // alice and bob are written (and cached) before the bad order fails the commit: all rolled back.
      await log.append(input, [order("alice", 2), order("bob", 3), order("alice", "ten")]);
      expect(await task.step()).toBe("blocked");
      expect(task.meta()?.failure).toMatch(/processing failed/);
      expect(JSON.parse(task.queries.get(store, "alice")!)).toEqual({ count: 1, sum: 1 });
      expect(task.queries.get(store, "bob")).toBeUndefined();
      expect(task.pendingOutboxBatches()).toBe(0);

      // A wipe empties the store: nothing cached survives it.
      task.wipe();
      expect(task.queries.get(store, "alice")).toBeUndefined();
      // Restoration writes the table: the absence just cached must not hide what it wrote.
      const meta = task.meta()!;
      const changelog = app.changelogPartitions("0_0")[0]!;
      const fetched = await log.fetch(changelog, 0, { maxRecords: 100, maxBytes: 1 << 20 });
      const reply = task.applyRestoreBatch({
        ...changelog,
        incarnation: meta.incarnation,
        fromOffset: 0,
        nextOffset: fetched.nextOffset,
        earliest: 0,
        end: fetched.latest,
        records: fetched.records,
      });
      expect(reply.applied).toBe(true);
      expect(JSON.parse(task.queries.get(store, "alice")!)).toEqual({ count: 1, sum: 1 });
    });
  });

  it("keep a store's cache within its bounds, least recently used out first", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-bounds@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      const kv = new SqliteKeyValueStore(storage.db, "bounded", { maxEntries: 3, maxChars: 1_000 });
      storage.transaction(() => {
        for (const key of ["a", "b", "c"]) kv.put(key, key.toUpperCase());
        kv.get("a"); // a is now the most recently used: b goes first
        kv.put("d", "D");
      });
      expect(kv.cachedEntries()).toBe(3);
      // Evicted or not, every value reads back right; one too big to cache too.
      expect(["a", "b", "c", "d"].map((k) => kv.get(k))).toEqual(["A", "B", "C", "D"]);
      kv.put("big", "x".repeat(500));
      expect(kv.get("big")).toHaveLength(500);
      expect(kv.cachedEntries()).toBeLessThanOrEqual(3);
    });
  });

  it("hold a transaction's writes until it commits, and lose only a rolled-back nested transaction's", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-held@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      const stores = new SqliteStoreBackend(storage.db, DEFAULT_CACHE_LIMITS, storage);
      storage.onFlush(() => stores.flushWrites());
      storage.onReset(() => stores.forget());
      const kv = stores.keyValue("held");
      const inTable = (key: string) => storedValue(state.storage.sql, "held", key);

      // Outside a transaction a write goes straight to the table.
      kv.put("a", "1");
      expect(inTable("a")).toBe("1");
      storage.transaction(() => {
        kv.put("b", "1");
        kv.put("b", "2");
        kv.delete("a");
        expect(inTable("b")).toBeUndefined();
        expect(kv.get("b")).toBe("2");
        expect(kv.get("a")).toBeUndefined();
        // A range read sees the held writes.
        expect(kv.range()).toEqual([{ key: "b", value: "2" }]);
        kv.put("c", "3");
        expect(() =>
          storage.transaction(() => {
            kv.put("c", "nested");
            kv.put("d", "nested");
            throw new Error("nested rollback");
          }),
        ).toThrow("nested rollback");
        expect(kv.get("c")).toBe("3");
        expect(kv.get("d")).toBeUndefined();
      });
      expect([inTable("a"), inTable("b"), inTable("c"), inTable("d")]).toEqual([undefined, "2", "3", undefined]);
      expect(() =>
        storage.transaction(() => {
          kv.put("b", "lost");
          throw new Error("rollback");
        }),
      ).toThrow("rollback");
      expect(kv.get("b")).toBe("2");
      expect(inTable("b")).toBe("2");
    });
  });

  it("keep checkpoints and input positions as the tables hold them: rolled back, nested, wiped", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-positions@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      const changelog = { topic: "c", partition: 0 };
      const fromTables = () => {
        const fresh = new TaskStorage(state.storage);
        return { checkpoints: new Map(fresh.checkpoints()), positions: fresh.positions(), committed: fresh.committedPositions() };
      };
      const cached = () => ({ checkpoints: new Map(storage.checkpoints()), positions: storage.positions(), committed: storage.committedPositions() });

      // Read (and so kept in memory) before anything is written.
      expect(cached()).toEqual({ checkpoints: new Map(), positions: {}, committed: {} });
      storage.transaction(() => {
        storage.writeCheckpoint(changelog, 5);
        storage.writePositions({ "in/0": 7, "in/1": 2 });
        storage.writePositions({ "in/0": 6 }); // a position never goes back
        storage.writeCommitted({ "in/1": 2, "in/2": 4 }); // a partition first known by its commit
      });
      expect(cached()).toEqual({ checkpoints: new Map([["c/0", 5]]), positions: { "in/0": 7, "in/1": 2, "in/2": 4 }, committed: { "in/1": 2, "in/2": 4 } });
      expect(cached()).toEqual(fromTables());

      storage.transaction(() => {
        storage.writePositions({ "in/0": 8 });
        expect(() =>
          storage.transaction(() => {
            storage.writeCheckpoint(changelog, 9);
            storage.writePositions({ "in/0": 20, "in/3": 1 });
            storage.writeCommitted({ "in/0": 20 });
            throw new Error("nested rollback");
          }),
        ).toThrow("nested rollback");
        expect(storage.positions()["in/0"]).toBe(8);
      });
      expect(cached()).toEqual({ checkpoints: new Map([["c/0", 5]]), positions: { "in/0": 8, "in/1": 2, "in/2": 4 }, committed: { "in/1": 2, "in/2": 4 } });
      expect(cached()).toEqual(fromTables());

      expect(() =>
        storage.transaction(() => {
          storage.writeCheckpoint(changelog, 11);
          storage.writeCommitted({ "in/0": 8 });
          throw new Error("rollback");
        }),
      ).toThrow("rollback");
      expect(storage.checkpoint(changelog)).toBe(5);
      expect(cached()).toEqual(fromTables());

      storage.transaction(() => storage.clearState());
      expect(cached()).toEqual({ checkpoints: new Map(), positions: {}, committed: {} });
      expect(cached()).toEqual(fromTables());
    });
  });

  it("write every value as a bound parameter would, in order, however the rows are batched", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-writes@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      const kv = new SqliteKeyValueStore(storage.db, "writes", DEFAULT_CACHE_LIMITS, storage);
      storage.onFlush(() => kv.flushWrites());
      const sql = state.storage.sql;
      const inTable = (key: string) => storedValue(sql, "writes", key);
      // What a value reads back as from its page: exactly what was put (a page is JSON, whose
      // escapes keep even a lone surrogate, which a TEXT column of its own turned into U+FFFD).
      const stored = (value: string) => value;
      // Strings JSON escapes, and strings whose escapes (\u) the store leaves to bound parameters.
      const escaped = ['"quoted"', "back\\slash", "line\nbreak\ttab", "é ✓ 😀", "", " "];
      const unicodeEscaped = ["back\\slash \\u0041", "nul\u0000inside", "lone \ud800 surrogate", "bell\u0007"];
      for (const [name, values] of [
        ["escaped", escaped],
        ["unicode", unicodeEscaped],
      ] as const) {
        const writes = [
          ...values.map((value, i) => ({ key: `${name}-${i}`, value })),
          ...values.map((value, i) => ({ key: `${name}:${value}`, value: `${i}` })),
          // A key written twice in one batch keeps the later value; a delete in between is applied in order.
          { key: `${name}-twice`, value: "first" },
          { key: `${name}-gone`, value: "x" },
          { key: `${name}-twice`, value: "second" },
          { key: `${name}-gone`, value: null },
          ...Array.from({ length: 300 }, (_, i) => ({ key: `${name}-many-${i}`, value: "v".repeat(i) })),
        ];
        storage.transaction(() => kv.writeAll(writes));
        values.forEach((value, i) => expect(inTable(`${name}-${i}`)).toBe(stored(value)));
        // (Keys the platform does not keep as they are cannot be looked up by themselves.)
        values.forEach((value, i) => stored(value) === value && expect(inTable(`${name}:${value}`)).toBe(`${i}`));
        expect(inTable(`${name}-twice`)).toBe("second");
        expect(inTable(`${name}-gone`)).toBeUndefined();
        expect(inTable(`${name}-many-299`)).toBe("v".repeat(299));
        // Held writes of a transaction take the same path when it commits.
        storage.transaction(() => values.forEach((value, i) => kv.put(`${name}-held-${i}`, value)));
        values.forEach((value, i) => expect(inTable(`${name}-held-${i}`)).toBe(stored(value)));
      }
    });
  });
  it("lay a transaction's held writes over a range read instead of writing them first, and answer as the table would", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-range@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      // The store's statements that write the table, counted.
      const { sql: counted, writes } = countingWrites(state.storage.sql);
      const kv = new SqliteKeyValueStore(new Sql(counted), "range", DEFAULT_CACHE_LIMITS, storage);
      storage.onFlush(() => kv.flushWrites());
      storage.onReset(() => kv.forget());

      // A windowed aggregation's pattern: a range read, then a write, for each record.
      storage.transaction(() => {
        for (let i = 0; i < 100; i++) {
          expect(kv.range("w-", "w-~")).toHaveLength(i);
          kv.put(`w-${String(i).padStart(3, "0")}`, `${i}`, i);
        }
        expect(writes()).toBe(0);
        expect(kv.range("w-", "w-~", 2)).toEqual([
          { key: "w-000", value: "0" },
          { key: "w-001", value: "1" },
        ]);
      });
      // One statement at the commit (the code before wrote the held writes at each range read: 99).
      expect(writes()).toBe(1);
      expect(kv.rangeWithTimestamps("w-098")).toEqual([
        { key: "w-098", value: "98", timestamp: 98 },
        { key: "w-099", value: "99", timestamp: 99 },
      ]);

      // Random puts, deletes, range and prefix reads (with limits) in transactions, some rolled
      // back, against a model: every read answers what the table and the held writes make together.
      const random = mulberry32(17);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
      const alphabet = ["a", "b", "é", "😀", "\uFFFD", "~"];
      const word = () => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(alphabet)).join("");
      let model = new Map<string, string>();
      const modelRead = (inRange: (key: string) => boolean, limit: number) =>
        [...model]
          .filter(([key]) => inRange(key))
          .sort(([a], [b]) => compareKeys(a, b))
          .slice(0, limit < 0 ? undefined : limit)
          .map(([key, value]) => ({ key, value }));
      let reads = 0;
      for (let t = 0; t < 300; t++) {
        const before = new Map(model);
        const rollBack = random() < 0.2;
        const body = () => {
          for (let op = 0, ops = 1 + Math.floor(random() * 30); op < ops; op++) {
            const r = random();
            const limit = random() < 0.5 ? -1 : Math.floor(random() * 5);
            if (r < 0.4) {
              const key = `m${word()}`;
              const value = word();
              kv.put(key, value);
              model.set(key, value);
            } else if (r < 0.6) {
              const key = `m${word()}`;
              kv.delete(key);
              model.delete(key);
            } else if (r < 0.8) {
              const [from, to] = [`m${word()}`, `m${word()}`].sort(compareKeys);
              expect(kv.range(from, to, limit)).toEqual(modelRead((k) => compareKeys(k, from!) >= 0 && compareKeys(k, to!) <= 0, limit));
              reads++;
            } else {
              const prefix = `m${random() < 0.3 ? "" : pick(alphabet)}`;
              expect(kv.prefix(prefix, limit)).toEqual(modelRead((k) => k.startsWith(prefix), limit));
              reads++;
            }
          }
          if (rollBack) throw new Error("rollback");
        };
        if (rollBack) {
          expect(() => storage.transaction(body)).toThrow("rollback");
          model = before;
        } else storage.transaction(body);
        expect(kv.prefix("m")).toEqual(modelRead((k) => k.startsWith("m"), -1));
      }
      expect(reads).toBeGreaterThan(1000);

      // A held key or value SQLite would keep as another (a lone surrogate is not UTF-8) is written
      // before the read, which then answers what the table holds.
      let inside: unknown;
      storage.transaction(() => {
        kv.put("s\uD800", "lone");
        kv.put("s-value", "lone \uDC00");
        inside = kv.range("s", "s\u{10FFFF}");
      });
      const after = kv.range("s", "s\u{10FFFF}");
      // (As JSON, whose escapes keep a failure's report readable: a lone surrogate is not UTF-8.)
      expect(JSON.stringify(inside)).toBe(JSON.stringify(after));
      expect(after).toHaveLength(2);
    });
  });

  it("keep the held writes of a deferred commit across transactions: reads outside one lay them all over and write nothing; inside one, writing them is counted", async () => {
    const stub = env.TASK_OBJECT.getByName("cache-deferred@x");
    await runInDurableObject(stub, (_, state) => {
      const storage = new TaskStorage(state.storage);
      const { sql: counted, writes } = countingWrites(state.storage.sql);
      const stores = new SqliteStoreBackend(new Sql(counted), DEFAULT_CACHE_LIMITS, storage);
      const kv = stores.keyValue("deferred");
      // As a task whose commit is deferred: the end of a transaction leaves the held writes held.
      let deferring = true;
      storage.onFlush(() => deferring || stores.flushWrites());
      storage.onReset(() => stores.forget());

      storage.transaction(() => kv.put("k-000", "committed"));
      expect(writes()).toBe(0);
      deferring = false;
      storage.transaction(() => kv.put("k-001", "committed"));
      expect(writes()).toBe(1);
      deferring = true;
      // 299 held writes over two transactions (more than a read inside one lays over), and a lone surrogate.
      storage.transaction(() => {
        for (let i = 2; i < 150; i++) kv.put(`k-${String(i).padStart(3, "0")}`, `${i}`);
      });
      storage.transaction(() => {
        for (let i = 150; i < 300; i++) kv.put(`k-${String(i).padStart(3, "0")}`, `${i}`);
        kv.put("k-\uD800", "lone");
        kv.delete("k-001");
      });
      expect(writes()).toBe(1);
      const flushes = stores.flushes;
      // A query: outside a transaction nothing may be written, so the read lays every held write over.
      const outside = kv.range("k-", "k-~");
      expect(outside).toHaveLength(299);
      expect(outside[0]).toEqual({ key: "k-000", value: "committed" });
      expect(outside[1]).toEqual({ key: "k-002", value: "2" });
      expect(kv.prefix("k-", 3).map((e) => e.key)).toEqual(["k-000", "k-002", "k-003"]);
      expect(kv.get("k-001")).toBeUndefined();
      expect([writes(), stores.flushes]).toEqual([1, flushes]);
      // Inside a transaction, a read over that many writes them first, and the backend counts it
      // (the task then commits everything that transaction depends on).
      storage.transaction(() => expect(kv.range("k-", "k-~")).toHaveLength(299));
      expect(writes()).toBeGreaterThan(1);
      expect(stores.flushes).toBe(flushes + 1);
    });
  });
});

/** `sql` with its statements that write a table (INSERT, DELETE) counted. */
function countingWrites(sql: SqlStorage): { sql: SqlStorage; writes: () => number } {
  let writes = 0;
  const counted = new Proxy(sql, {
    get(target, property) {
      if (property !== "exec") return Reflect.get(target, property);
      return (text: string, ...values: unknown[]) => {
        if (/^\s*(INSERT|DELETE)/i.test(text)) writes++;
        return target.exec(text, ...(values as SqlStorageValue[]));
      };
    },
  });
  return { sql: counted, writes: () => writes };
}
