/**
 * Migration 4 of the coordinator (src/coordinator/schema.ts): a coordinator deployed before it kept
 * its single values in KV keys. Woken after the upgrade, it carries every value over into its
 * settings row and deletes the KV keys, in the migration's transaction.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CoordinatorStore } from "../src/coordinator/coordinator-store";
import { coordinatorMigrations, LEGACY_KV_KEYS, type LegacyKv } from "../src/coordinator/schema";
import { migrate } from "../src/storage/migrations";
import { Sql } from "../src/storage/sql";

/** A coordinator of its own (not the application's), so that nothing else talks to it. */
const stub = (name: string) => env.COORDINATOR.getByName(name);
const storeOf = (object: unknown) => (object as { store: CoordinatorStore }).store;

/**
 * Puts the object's storage back as a coordinator before migration 4 left it: schema version 3, no
 * settings table, the values in KV; then kills the object, so that the next call wakes it anew.
 */
async function asBeforeMigration4(name: string, values: Partial<Record<keyof typeof LEGACY_KV_KEYS, unknown>>): Promise<void> {
  await runInDurableObject(stub(name), (_object, state) => {
    state.storage.transactionSync(() => {
      state.storage.sql.exec("DROP TABLE settings");
      state.storage.sql.exec("UPDATE _schema SET version = 3");
      for (const [column, value] of Object.entries(values)) state.storage.kv.put(LEGACY_KV_KEYS[column as keyof typeof LEGACY_KV_KEYS], value);
    });
  });
  await runInDurableObject(stub(name), (_object, state) => state.abort("injected crash: upgrade")).catch(() => undefined);
}

describe("a coordinator deployed before its settings moved out of KV", () => {
  it("keeps its generation, session key, resuming flag and sweep schedule, and the KV keys are gone", async () => {
    const name = "settings-migration-kept";
    const nextSweepAt = Date.now() + 123_456;
    await asBeforeMigration4(name, {
      generation: "generation-before",
      session_key: "session-key-before",
      resuming: true,
      next_sweep_at: nextSweepAt,
      sweep_cursor: 300,
    });
    // Woken by a call: the migration runs in the constructor; the session key is the one kept.
    expect(await stub(name).sessionKey()).toBe("session-key-before");
    await runInDurableObject(stub(name), (object, state) => {
      const { settings } = storeOf(object);
      expect(settings.generation()).toBe("generation-before");
      expect(settings.resuming()).toBe(true);
      expect(settings.nextSweepAt()).toBe(nextSweepAt);
      expect(settings.sweepCursor()).toBe(300);
      expect(settings.failingUntil()).toBe(0);
      expect([...state.storage.kv.list()]).toEqual([]);
      expect(state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version).toBe(4);
    });
  });

  it("keeps an injected outage: calls are still refused", async () => {
    const name = "settings-migration-outage";
    const until = Date.now() + 60_000;
    await asBeforeMigration4(name, { failing_until: until, generation: "g" });
    const refused = await stub(name)
      .sessionKey()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(String(refused)).toMatch(/CoordinatorUnavailable: the coordinator does not answer/);
    await runInDurableObject(stub(name), (object, state) => {
      expect(storeOf(object).settings.failingUntil()).toBe(until);
      expect(state.storage.kv.get(LEGACY_KV_KEYS.failing_until)).toBeUndefined();
    });
  });

  it("starts a coordinator that had none of the values with the defaults, made on first use", async () => {
    const name = "settings-migration-empty";
    await asBeforeMigration4(name, {});
    const key = await stub(name).sessionKey();
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await stub(name).sessionKey()).toBe(key);
    await runInDurableObject(stub(name), (object) => {
      const { settings } = storeOf(object);
      expect(settings.resuming()).toBe(false);
      expect(settings.nextSweepAt()).toBeUndefined();
      expect(settings.sweepCursor()).toBe(0);
      expect(settings.generation()).toBe(settings.generation());
    });
  });

  it("converges after failing midway: nothing moved, every KV key kept, and the next start carries them over", async () => {
    const name = "settings-migration-midway";
    await asBeforeMigration4(name, { generation: "g-midway", session_key: "k-midway", next_sweep_at: 42 });
    const moved = await runInDurableObject(stub(name), (_object, state) => {
      // The object started already (migration 4 ran): put it back, then run the migration again
      // over a KV that fails after it deleted two keys, as a crash between two writes would.
      state.storage.sql.exec("DROP TABLE settings");
      state.storage.sql.exec("UPDATE _schema SET version = 3");
      for (const [key, value] of [
        [LEGACY_KV_KEYS.generation, "g-midway"],
        [LEGACY_KV_KEYS.session_key, "k-midway"],
        [LEGACY_KV_KEYS.next_sweep_at, 42],
      ] as const)
        state.storage.kv.put(key, value);
      let deleted = 0;
      const failing: LegacyKv = {
        get: (key) => state.storage.kv.get(key),
        delete: (key) => {
          if (++deleted > 2) throw new Error("injected crash mid-migration");
          return state.storage.kv.delete(key);
        },
      };
      expect(() => state.storage.transactionSync(() => migrate(new Sql(state.storage.sql), coordinatorMigrations(failing)))).toThrow(/mid-migration/);
      expect(deleted).toBe(3);
      return {
        version: state.storage.sql.exec<{ version: number }>("SELECT version FROM _schema").one().version,
        settings: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'settings'").toArray().length,
        kv: Object.fromEntries(state.storage.kv.list()),
      };
    });
    expect(moved).toEqual({ version: 3, settings: 0, kv: { generation: "g-midway", "next-sweep-at": 42, "session-key": "k-midway" } });
    await runInDurableObject(stub(name), (_object, state) => state.abort("injected crash: restart")).catch(() => undefined);
    expect(await stub(name).sessionKey()).toBe("k-midway");
    await runInDurableObject(stub(name), (object, state) => {
      expect(storeOf(object).settings.generation()).toBe("g-midway");
      expect(storeOf(object).settings.nextSweepAt()).toBe(42);
      expect([...state.storage.kv.list()]).toEqual([]);
    });
  });
});
