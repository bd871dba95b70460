/**
 * The restore worker's bookkeeping under races and crashes: registrations are idempotent, late
 * unregistrations cannot undo newer ones, a changelog that grows while a batch is on its way is
 * not marked caught up by that batch's reply, and a registration whose instance says it is over
 * (wiped, reassigned, running, revoked — it may have died before it could unregister) is dropped
 * instead of being served for ever. Also: a warm-up standby for a removed placement stays put.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CoordinatorStore, InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../src/names";
import { warmUpTargets } from "../src/coordinator/standbys";
import { DurableLog } from "../src/log/durable-log";
import { TopicCatalog } from "../src/log/topics";
import type { TopicPartition } from "../src/log/types";
import { RestoreRegistry, type Registration } from "../src/restore/registry";
import { Restorer } from "../src/restore/restorer";
import type { Suspension } from "../src/restore/suspensions";
import type { RestoreBatch, RestoreReply } from "../src/task/protocol";
import { application } from "./support/orders-app";

let scratch = 0;

async function withRegistry<T>(fn: (registry: RestoreRegistry) => Promise<T> | T): Promise<T> {
  return runInDurableObject(env.RESTORE_WORKER.getByName(`registry-scratch-${++scratch}`), (_object, state) => fn(new RestoreRegistry(state.storage)));
}

/** What the restore worker's flusher (src/restore/progress-flusher.ts) does with the registry's progress: one transaction. */
const flushProgress = (registry: RestoreRegistry) => registry.transaction(() => registry.takeProgress().write());

function registration(instance: string, role: "active" | "standby", tp: TopicPartition, incarnation = 0, epoch = 1): Registration {
  return { instance, taskId: instance.split("@")[0]!, incarnation, epoch, role, changelogs: [{ ...tp, store: "s", checkpoint: null }] };
}

async function changelog(records: number): Promise<{ log: DurableLog; tp: TopicPartition }> {
  const topic = `registry-test-${++scratch}-changelog`;
  const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ [topic]: 1 }));
  const tp = { topic, partition: 0 };
  if (records > 0)
    await log.append(
      tp,
      Array.from({ length: records }, (_, i) => ({ key: `k${i}`, value: `${i}` })),
    );
  return { log, tp };
}

describe("registrations", () => {
  it("the same registration again is kept with its progress; a changed one starts over", () =>
    withRegistry((registry) => {
      const tp = { topic: "c", partition: 0 };
      expect(registry.register(registration("0_0@a", "standby", tp))).toBe("registered");
      const [work] = registry.all();
      registry.update(work!, { position: 40, caughtUp: false, restoredRecords: 40 });
      expect(registry.register(registration("0_0@a", "standby", tp))).toBe("kept");
      expect(registry.all()[0]).toMatchObject({ position: 40, restored: 40 });
      expect(registry.register(registration("0_0@a", "active", tp, 0, 2))).toBe("registered");
      expect(registry.all()[0]).toMatchObject({ position: null, restored: 0, role: "active", epoch: 2 });
      expect(registry.register(registration("0_0@a", "active", tp, -1, 3))).toBe("refused");
    }));

  it("a late unregistration cannot undo a registration made since for a newer assignment", () =>
    withRegistry((registry) => {
      const tp = { topic: "c", partition: 0 };
      registry.register(registration("0_0@a", "active", tp, 3, 7));
      // The instance was revoked at epoch 5 and assigned again at epoch 7: the epoch-5 unregistration arrives late.
      expect(registry.unregister("0_0@a", 3, 5)).toEqual([]);
      expect(registry.all()).toHaveLength(1);
      expect(registry.unregister("0_0@a", 3, 7)).toHaveLength(1);
      registry.register(registration("0_0@a", "active", tp, 3, 7));
      // A newer incarnation's unregistration removes an older incarnation's rows whatever their epoch.
      expect(registry.unregister("0_0@a", 4, 1)).toHaveLength(1);
    }));

  it("a reply to a batch read before the changelog grew does not mark it caught up", () =>
    withRegistry((registry) => {
      const tp = { topic: "c", partition: 0 };
      registry.register(registration("0_1@b", "standby", tp));
      const [read] = registry.all();
      registry.changelogGrew(tp);
      registry.update(read!, { position: 10, caughtUp: true, restoredRecords: 10 });
      expect(registry.all()[0]).toMatchObject({ position: 10, caughtUp: false });
      const [again] = registry.all();
      registry.update(again!, { position: 12, caughtUp: true, restoredRecords: 2 });
      expect(registry.all()[0]).toMatchObject({ position: 12, caughtUp: true });
    }));
});

describe("progress held in memory (issue #33)", () => {
  const stored = (storage: DurableObjectStorage) =>
    storage.sql
      .exec<{ position: number | null; caught_up: number; restored: number; grown: number }>("SELECT position, caught_up, restored, grown FROM changelogs")
      .toArray();

  it("replies and wake-ups write no row; a flush writes each registration once; a restarted registry resumes from the last flush and looks at every changelog again", () =>
    runInDurableObject(env.RESTORE_WORKER.getByName(`registry-scratch-${++scratch}`), (_object, state) => {
      const tp = { topic: "c", partition: 0 };
      const registry = new RestoreRegistry(state.storage);
      registry.register(registration("0_0@a", "standby", tp));
      for (let i = 1; i <= 20; i++) {
        registry.changelogGrew(tp);
        const [work] = registry.all();
        registry.update(work!, { position: i * 10, caughtUp: true, restoredRecords: 10 });
      }
      // Twenty replies and twenty wake-ups: known here, not one row written.
      expect(registry.all()[0]).toMatchObject({ position: 200, restored: 200, caughtUp: true, grown: 20 });
      expect(registry.progressPending).toBe(true);
      expect(stored(state.storage)).toEqual([{ position: null, caught_up: 0, restored: 0, grown: 0 }]);
      flushProgress(registry);
      expect(registry.progressPending).toBe(false);
      expect(stored(state.storage)).toEqual([{ position: 200, caught_up: 1, restored: 200, grown: 20 }]);

      // More progress, then the worker dies before the next flush: the restarted one resumes from
      // the last flush (the instance's checkpoint answers the rest, I4), and counts nothing as caught up.
      const [work] = registry.all();
      registry.update(work!, { position: 250, caughtUp: true, restoredRecords: 50 });
      const restarted = new RestoreRegistry(state.storage);
      expect(restarted.all()[0]).toMatchObject({ position: 200, restored: 200, caughtUp: false });
    }));

  it("progress of a registration replaced or removed meanwhile is not written over the new one", () =>
    runInDurableObject(env.RESTORE_WORKER.getByName(`registry-scratch-${++scratch}`), (_object, state) => {
      const tp = { topic: "c", partition: 0 };
      const registry = new RestoreRegistry(state.storage);
      registry.register(registration("0_0@a", "standby", tp, 0, 1));
      const [old] = registry.all();
      registry.update(old!, { position: 40, caughtUp: false, restoredRecords: 40 });
      // Promoted: a new registration (new epoch, active) before the flush.
      expect(registry.register(registration("0_0@a", "active", tp, 0, 2))).toBe("registered");
      registry.update(old!, { position: 80, caughtUp: true, restoredRecords: 40 });
      flushProgress(registry);
      expect(registry.all()[0]).toMatchObject({ position: null, restored: 0, role: "active", epoch: 2 });
      expect(stored(state.storage)).toEqual([{ position: null, caught_up: 0, restored: 0, grown: 0 }]);
    }));
});

describe("the restorer and its instances' replies", () => {
  it("a standby woken while its batch is on its way reads the new records next round, without another wake-up", async () => {
    const { log, tp } = await changelog(5);
    await withRegistry(async (registry) => {
      registry.register(registration("0_0@b", "standby", tp));
      let position: number | null = null;
      let grewDuringApply = false;
      const restorer = new Restorer({
        registry,
        log,
        batchRecords: 100,
        readAhead: 4,
        reportCorruption: async () => {},
        apply: async (_instance, batch: RestoreBatch): Promise<RestoreReply> => {
          if (!grewDuringApply) {
            // An append lands (and wakes the worker) while this batch is being applied.
            grewDuringApply = true;
            await log.append(tp, [{ key: "late", value: "x" }]);
            registry.transaction(() => registry.changelogGrew(tp));
          }
          const applied = batch.fromOffset === (position ?? batch.earliest);
          if (applied) position = batch.nextOffset;
          return {
            applied,
            incarnation: 0,
            epoch: 1,
            role: "standby",
            state: "UPDATING",
            checkpoint: position,
            caughtUp: position !== null && position >= batch.end,
          };
        },
      });
      const first = await restorer.round();
      expect(position).toBe(5);
      // Work remains, but only growth heard while the round ran: it waits for the standby's next update.
      expect(first).toMatchObject({ more: true, backlog: false });
      const second = await restorer.round();
      expect(second.applied).toBe(1);
      expect(position).toBe(6);
      expect(registry.all()[0]).toMatchObject({ caughtUp: true, position: 6 });
    });
  });

  it("a standby behind where the round read it, or one the round did not reach, is a backlog: the next round comes at once", async () => {
    const { log, tp } = await changelog(30);
    /** A standby that applies every batch from where it stands. */
    const standby = () => {
      const at = new Map<string, number>();
      return async (instance: string, batch: RestoreBatch): Promise<RestoreReply> => {
        const applied = batch.fromOffset === (at.get(instance) ?? batch.earliest);
        if (applied) at.set(instance, batch.nextOffset);
        const checkpoint = at.get(instance) ?? null;
        return { applied, incarnation: 0, epoch: 1, role: "standby", state: "UPDATING", checkpoint, caughtUp: checkpoint !== null && checkpoint >= batch.end };
      };
    };
    await withRegistry(async (registry) => {
      registry.register(registration("0_0@b", "standby", tp));
      const restorer = new Restorer({ registry, log, batchRecords: 10, readAhead: 0, reportCorruption: async () => {}, apply: standby() });
      // 10 of 30 records read, and nothing appended since: behind.
      expect(await restorer.round()).toMatchObject({ more: true, backlog: true });
    });
    await withRegistry(async (registry) => {
      registry.register(registration("0_0@b", "standby", tp));
      registry.register(registration("1_0@b", "standby", tp));
      const restorer = new Restorer({ registry, log, batchRecords: 100, readAhead: 0, parallelism: 1, reportCorruption: async () => {}, apply: standby() });
      // One instance a round: the other was not reached.
      expect(await restorer.round()).toMatchObject({ more: true, backlog: true });
      expect(await restorer.round()).toMatchObject({ more: false, backlog: false });
    });
  });

  const over: [string, Partial<RestoreReply>, string][] = [
    ["was wiped (a newer incarnation)", { incarnation: 1 }, "restore"],
    ["was reassigned (another epoch)", { epoch: 2 }, "restore"],
    ["was revoked (idle)", { role: "idle", state: "SUSPENDED" }, "restore"],
  ];
  it.each(over)("a registration whose instance %s is dropped, with the listener call owed", async (_what, reply, listener) => {
    const { log, tp } = await changelog(30);
    await withRegistry(async (registry) => {
      registry.register(registration("0_2@a", "active", tp));
      const ended: Suspension[] = [];
      let applies = 0;
      const restorer = new Restorer({
        registry,
        log,
        batchRecords: 10,
        readAhead: 4,
        reportCorruption: async () => {},
        onEnded: async (suspensions) => void ended.push(...suspensions),
        apply: async (): Promise<RestoreReply> => {
          applies++;
          return { applied: false, incarnation: 0, epoch: 1, role: "active", state: "RESTORING", checkpoint: null, caughtUp: false, ...reply };
        },
      });
      const result = await restorer.round();
      expect(result.more).toBe(false);
      expect(registry.all()).toEqual([]);
      expect(ended.map((s) => s.listener)).toEqual([listener]);
      await restorer.round();
      expect(applies).toBe(1);
    });
  });
});

describe("warm-up standbys for a removed placement", () => {
  it("go to a standby the task already has, else to the least loaded placement", () => {
    const instances = [
      { taskId: "0_0", placement: "c", role: "active" as const },
      { taskId: "0_1", placement: "c", role: "active" as const },
      { taskId: "0_1", placement: "b", role: "standby" as const },
      { taskId: "0_2", placement: "a", role: "active" as const },
    ];
    expect(warmUpTargets(instances, ["a", "b"])).toEqual([
      { taskId: "0_0", placement: "b" },
      { taskId: "0_1", placement: "b" },
    ]);
  });

  it("stay standbys from one assignment pass to the next, without new epochs (no flapping)", async () => {
    const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);
    // Task 0_0 runs at placement "c", which the configuration no longer has; its changelog is
    // longer than ACCEPTABLE_RECOVERY_LAG (10,000 here), so its warm-up takes a while.
    const epoch = await runInDurableObject(coordinator, (object) => {
      const store = (object as unknown as { store: CoordinatorStore }).store;
      return store.transaction(() => {
        const e = store.nextEpoch();
        store.put({ taskId: "0_0", placement: "c", role: "active", epoch: e, acknowledged: true });
        return e;
      });
    });
    await env.TASK_OBJECT.getByName("0_0@c").assign({ taskId: "0_0", placement: "c", role: "active", epoch });
    const log = new DurableLog(env.LOG_PARTITION, application.catalog);
    const changelog = application.changelogPartitions("0_0")[0]!;
    for (let i = 0; i < 11; i++)
      await log.append(
        changelog,
        Array.from({ length: 1_000 }, (_, j) => ({ key: `k${i}-${j}`, value: "{}" })),
      );
    // Restoration is held, so the warm-up cannot catch up (and move the task) in between.
    for (const p of ["a", "b"]) await env.RESTORE_WORKER.getByName(`restore@${p}`).pause();
    const warmUp = async () => ((await coordinator.ensureAssigned()) as InstanceAssignment[]).filter((i) => i.taskId === "0_0" && i.placement !== "c");
    const first = await warmUp();
    expect(first).toMatchObject([{ role: "standby", acknowledged: true }]);
    for (let pass = 0; pass < 3; pass++) expect(await warmUp()).toEqual(first);
    expect(((await coordinator.assignments()) as InstanceAssignment[]).find((i) => i.taskId === "0_0" && i.role === "active")!.placement).toBe("c");
  });
});
