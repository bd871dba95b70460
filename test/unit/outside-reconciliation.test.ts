/**
 * Outside reconciliation (src/task/outside-reconciliation.ts) with fake partitions and restore
 * workers: subscriptions follow the role, the restore registration the restoring states, and what
 * was brought in line is done once per state and shard unless forced or forgotten.
 */
import { describe, expect, it } from "vitest";
import { OutsideReconciliation, SYNCED_KEY, type OutsideDeps } from "../../src/task/outside-reconciliation";
import type { RestoreRegistration } from "../../src/task/restoration";
import type { TaskMeta } from "../../src/task/task-storage";

const PARTITIONS = [
  { topic: "orders", partition: 0 },
  { topic: "orders", partition: 1 },
];

function meta(over: Partial<TaskMeta> = {}): TaskMeta {
  return { taskId: "0_0", placement: "a", role: "active", state: "RUNNING", epoch: 3, incarnation: 1, nextCommit: 0, failure: null, ...over } as TaskMeta;
}

/** A reconciliation over fakes that note every call; `fail` makes the named call throw, `registered` what register answers. */
function setUp(initial: TaskMeta, options: { registration?: RestoreRegistration; fail?: "subscribe" | "register"; registered?: boolean } = {}) {
  const calls: string[] = [];
  const kv = new Map<string, unknown>();
  const reads: string[] = [];
  let current: TaskMeta | undefined = initial;
  const deps: OutsideDeps = {
    task: { meta: () => current, restoreRegistration: () => options.registration },
    inputPartitions: () => PARTITIONS,
    partition: (tp) => ({
      subscribe: async (name) => {
        if (options.fail === "subscribe") throw new Error("partition unavailable");
        calls.push(`subscribe ${tp.topic}/${tp.partition} ${name}`);
      },
      unsubscribe: async (name) => calls.push(`unsubscribe ${tp.topic}/${tp.partition} ${name}`),
    }),
    restoreWorkerNameOf: () => "restore@a",
    restoreWorker: (name) => ({
      register: async (registration) => {
        if (options.fail === "register") throw new Error("restore worker unavailable");
        calls.push(`register ${name} ${registration.instance} incarnation ${registration.incarnation}`);
        return options.registered ?? true;
      },
      unregister: async (instance, incarnation, end, epoch) => calls.push(`unregister ${name} ${instance} ${incarnation} ${end} ${epoch}`),
    }),
    kv: {
      get: <T>(key: string) => {
        reads.push(key);
        return kv.get(key) as T | undefined;
      },
      put: (key, value) => void kv.set(key, value),
      delete: (key) => kv.delete(key),
    },
    reachAfterWrites: async () => {},
  };
  return { outside: new OutsideReconciliation(deps), deps, calls, kv, reads, setMeta: (m: TaskMeta | undefined) => (current = m) };
}

describe("OutsideReconciliation", () => {
  it("subscribes a running active instance to its input and unregisters it as finished, once per state", async () => {
    const { outside, calls, kv } = setUp(meta());
    expect(await outside.reconcile()).toBe(true);
    expect(calls).toEqual(["subscribe orders/0 0_0@a", "subscribe orders/1 0_0@a", "unregister restore@a 0_0@a 1 finished 3"]);
    expect(kv.get(SYNCED_KEY)).toBe("3/1/active/RUNNING/restore@a");
    // The same state again: nothing to do, unless forced or forgotten.
    expect(await outside.reconcile()).toBe(true);
    expect(calls).toHaveLength(3);
    expect(await outside.reconcile(true)).toBe(true);
    expect(calls).toHaveLength(6);
    outside.forget();
    expect(await outside.reconcile()).toBe(true);
    expect(calls).toHaveLength(9);
  });

  it("reads what was brought in line from storage once (an object restarted keeps it), then from memory: a run reads no storage for it", async () => {
    const { deps, calls, kv, reads } = setUp(meta());
    kv.set(SYNCED_KEY, "3/1/active/RUNNING/restore@a");
    const restarted = new OutsideReconciliation(deps);
    for (let run = 0; run < 3; run++) expect(await restarted.reconcile()).toBe(true);
    expect(calls).toEqual([]);
    expect(reads).toEqual([SYNCED_KEY]);
  });

  it("unsubscribes a restoring standby and registers it with its restore worker", async () => {
    const registration: RestoreRegistration = { incarnation: 2, epoch: 3, role: "standby", changelogs: [] };
    const { outside, calls, kv } = setUp(meta({ role: "standby", state: "RESTORING", incarnation: 2 }), { registration });
    expect(await outside.reconcile()).toBe(true);
    expect(calls).toEqual(["unsubscribe orders/0 0_0@a", "unsubscribe orders/1 0_0@a", "register restore@a 0_0@a incarnation 2"]);
    expect(kv.get(SYNCED_KEY)).toBe("3/2/standby/restoring/restore@a");
  });

  it("unregisters a revoked (suspended) instance as revoked", async () => {
    const { outside, calls } = setUp(meta({ role: "idle", state: "SUSPENDED" }));
    expect(await outside.reconcile()).toBe(true);
    expect(calls.at(-1)).toBe("unregister restore@a 0_0@a 1 revoked 3");
  });

  it("says false and keeps nothing when a partition or the restore worker fails or refuses, so the alarm tries again", async () => {
    for (const options of [{ fail: "subscribe" as const }, { fail: "register" as const }, { registered: false }]) {
      const registration: RestoreRegistration = { incarnation: 1, epoch: 3, role: "active", changelogs: [] };
      const { outside, kv } = setUp(meta({ state: "RESTORING" }), { registration, ...options });
      expect(await outside.reconcile()).toBe(false);
      expect(kv.has(SYNCED_KEY)).toBe(false);
    }
  });

  it("does nothing for an instance never assigned", async () => {
    const { outside, calls, setMeta } = setUp(meta());
    setMeta(undefined);
    expect(await outside.reconcile(true)).toBe(true);
    expect(calls).toEqual([]);
  });
});
