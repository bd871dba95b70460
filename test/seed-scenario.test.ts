/**
 * KAFKA-16017, end to end: a task is corrupted during processing, wiped and revived, revoked while
 * it restores, moved elsewhere and moved back to the placement that kept its older state — and
 * every record is in the store afterwards. Then the same with a crash instead of a clean close,
 * and with the changelog truncated below the checkpoint left behind.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";

async function instance(taskId: string, placement: string): Promise<TaskDescription> {
  return (await driver.task({ taskId, placement }).describe()) as TaskDescription;
}

async function activePlacement(taskId: string): Promise<string> {
  return (await activeInstance(driver.instances(), taskId)).placement;
}

async function migrate(taskId: string, to: string) {
  const response = await call(`/admin/tasks/${taskId}/migrate`, { body: { to } });
  expect(response.status).toBe(200);
  return json(response);
}

/** Orders for every key, `rounds` times; returns the expected totals. */
async function produce(keys: string[], rounds: number, expected: Map<string, { count: number; sum: number }>) {
  for (let r = 0; r < rounds; r++) {
    await driver.pipe(
      "orders",
      keys.map((key, i) => ({ key, value: { amount: i + r } })),
    );
    keys.forEach((key, i) => {
      const t = expected.get(key) ?? { count: 0, sum: 0 };
      expected.set(key, { count: t.count + 1, sum: t.sum + i + r });
    });
  }
}

/**
 * Steps 1–3 of the scenario for one task: records processed at its home placement, then corrupted
 * (wiped, revived) and restored only partly, with restoration left paused.
 */
async function processThenCorruptAndRestorePartly(taskId: string, keys: string[], expected: Map<string, { count: number; sum: number }>) {
  const home = await activePlacement(taskId);
  const away = home === "a" ? "b" : "a";
  await produce(keys, 4, expected);
  await driver.runUntilQuiet();
  await call("/admin/restore/pause", { method: "POST" });
  const before = await instance(taskId, home);
  await call(`/admin/tasks/${taskId}/corrupt`, { method: "POST" });
  await call("/admin/restore/resume", { body: { maxBatches: 1 } });
  await driver.restoreRound();
  const restored = (await instance(taskId, home)).changelogs[0]!.checkpoint!;
  return { home, away, before, restored };
}

async function expectEveryRecord(expected: Map<string, { count: number; sum: number }>) {
  for (const [key, totals] of expected) expect(await driver.get("totals", key), key).toEqual(totals);
}

describe("the KAFKA-16017 scenario", () => {
  it("corrupt, revive, revoke while restoring, move back: every record is in the store", async () => {
    const taskId = "0_1";
    const keys = keysOn(1, 20, "seed");
    const expected = new Map<string, { count: number; sum: number }>();
    const home = await activePlacement(taskId);
    const away = home === "a" ? "b" : "a";

    // 1. Records processed.
    await produce(keys, 4, expected);
    await driver.runUntilQuiet();
    const processed = await instance(taskId, home);
    const end = processed.changelogs[0]!.end;
    expect(processed.changelogs[0]!.checkpoint).toBe(end);

    // 2. Corruption: closed dirty, state wiped, revived as a new incarnation that restores.
    await call("/admin/restore/pause", { method: "POST" });
    const revived = await json(await call(`/admin/tasks/${taskId}/corrupt`, { method: "POST" }));
    expect(revived.task).toMatchObject({ state: "RESTORING", incarnation: processed.incarnation + 1 });
    expect(revived.task.changelogs[0].checkpoint).toBeNull();

    // 3. It restores part of the changelog.
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await driver.restoreRound();
    const restoring = await instance(taskId, home);
    const restored = restoring.changelogs[0]!.checkpoint!;
    expect(restoring.state).toBe("RESTORING");
    expect(restored).toBeGreaterThan(0);
    expect(restored).toBeLessThan(end);

    // 4. Revoked while restoring: the checkpoint it leaves is the restored position, not the end
    //    offset its record collector saw before the wipe.
    await migrate(taskId, away);
    const left = await instance(taskId, home);
    expect(left.role).toBe("idle");
    expect(left.changelogs[0]!.checkpoint).toBe(restored);
    expect(left.changelogs[0]!.checkpoint).not.toBe(end);

    // 5. The new active restores from scratch and processes more.
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    await produce(keys.slice(0, 5), 1, expected);
    await driver.runUntilQuiet();
    expect((await instance(taskId, away)).state).toBe("RUNNING");

    // 6. Moved back to the placement with the older state: it resumes from its checkpoint (behind
    //    the truth, never ahead), restores the tail, and every record is there.
    await migrate(taskId, home);
    await driver.runUntilQuiet();
    const back = await instance(taskId, home);
    expect(back).toMatchObject({ role: "active", state: "RUNNING", lag: 0 });
    expect(back.changelogs[0]!.checkpoint).toBe(back.changelogs[0]!.end);
    await expectEveryRecord(expected);

    // Processing goes on exactly once from there.
    await produce(keys, 1, expected);
    await driver.runUntilQuiet();
    await expectEveryRecord(expected);
  });

  it("the same with a crash instead of a clean close", async () => {
    const taskId = "0_2";
    const keys = keysOn(2, 20, "seed-crash");
    const expected = new Map<string, { count: number; sum: number }>();
    const { home, away, restored } = await processThenCorruptAndRestorePartly(taskId, keys, expected);

    // The restoring instance's process dies: no clean close, nothing written on the way out.
    expect((await call(`/admin/tasks/${taskId}/crash`, { method: "POST" })).status).toBe(200);
    const afterCrash = await instance(taskId, home);
    expect(afterCrash.state).toBe("RESTORING");
    expect(afterCrash.changelogs[0]!.checkpoint).toBe(restored);

    await migrate(taskId, away);
    expect((await instance(taskId, home)).changelogs[0]!.checkpoint).toBe(restored);
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    await produce(keys, 1, expected);
    await driver.runUntilQuiet();
    await migrate(taskId, home);
    await driver.runUntilQuiet();
    await expectEveryRecord(expected);
  });

  it("the same with the changelog truncated below the checkpoint left behind", async () => {
    const taskId = "0_3";
    // 80 changelog records: more than a restore round's window (two batches of 25 in tests), so restoring stops part-way.
    const keys = keysOn(3, 20, "seed-trunc");
    const expected = new Map<string, { count: number; sum: number }>();
    const { home, away, before, restored } = await processThenCorruptAndRestorePartly(taskId, keys, expected);
    await migrate(taskId, away);
    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();

    // Every key is written again, then the changelog's head — below `home`'s checkpoint — is deleted.
    await produce(keys, 1, expected);
    await driver.runUntilQuiet();
    const cut = (await instance(taskId, away)).changelogs[0]!.end - keys.length;
    expect(cut).toBeGreaterThan(restored);
    await driver.log.deleteRecordsBefore({ topic: CHANGELOG, partition: 3 }, cut);

    // Moving back: the checkpoint is out of range, which counts as corruption — wiped, revived,
    // restored from what the changelog still has, which holds every key's latest total.
    await migrate(taskId, home);
    await driver.runUntilQuiet();
    const back = await instance(taskId, home);
    expect(back).toMatchObject({ role: "active", state: "RUNNING" });
    expect(back.incarnation).toBeGreaterThan(before.incarnation + 1);
    await expectEveryRecord(expected);
  });
});
