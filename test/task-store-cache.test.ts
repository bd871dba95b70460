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
      const inTable = (key: string) =>
        state.storage.sql.exec<{ value: string }>("SELECT value FROM kv WHERE store = 'held' AND key = ?", key).toArray()[0]?.value;

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
      const inTable = (key: string) => sql.exec<{ value: string }>("SELECT value FROM kv WHERE store = 'writes' AND key = ?", key).toArray()[0]?.value;
      // What one row written with bound parameters reads back as (lone surrogates do not survive UTF-8).
      const stored = (value: string) => {
        sql.exec("INSERT INTO kv (store, key, value) VALUES ('reference', 'r', ?) ON CONFLICT (store, key) DO UPDATE SET value = excluded.value", value);
        return sql.exec<{ value: string }>("SELECT value FROM kv WHERE store = 'reference' AND key = 'r'").one().value;
      };
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
});
