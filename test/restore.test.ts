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

async function describe0(partition: number): Promise<TaskDescription> {
  return driver.task(await activeInstance(driver.instances(), partition)).describe() as Promise<TaskDescription>;
}

describe("restoring a wiped task through the restore worker", () => {
  it("replays the changelog batch by batch, checkpoint = restored position, then runs", async () => {
    const keys = keysOn(1, 30, "restore");
    await driver.pipe(
      "orders",
      keys.flatMap((key) => [
        { key, value: { amount: 1 } },
        { key, value: { amount: 2 } },
      ]),
    );
    await driver.runUntilQuiet();
    const before = await describe0(1);
    const end = before.changelogs[0]!.end;
    expect(end).toBeGreaterThanOrEqual(60);

    const stub = driver.task(await activeInstance(driver.instances(), 1));
    const wiped = (await stub.corrupt()) as TaskDescription;
    expect(wiped).toMatchObject({ state: "RESTORING", incarnation: before.incarnation + 1 });
    expect(wiped.changelogs[0]!.checkpoint).toBeNull();

    // Window by window (two batches of RESTORE_BATCH_RECORDS=25 in tests, compacted): the checkpoint is always exactly what is restored.
    const seen: number[] = [];
    for (let round = 0; round < 20; round++) {
      const applied = await driver.restoreRound();
      const now = await describe0(1);
      if (now.changelogs[0]!.checkpoint !== null) seen.push(now.changelogs[0]!.checkpoint);
      if (applied === 0 && now.state === "RUNNING") break;
      if (now.state === "RESTORING") expect(now.changelogs[0]!.checkpoint ?? 0).toBeLessThan(end);
    }
    expect(seen.length).toBeGreaterThan(1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    const after = await describe0(1);
    expect(after).toMatchObject({ state: "RUNNING", lag: 0 });
    expect(after.changelogs[0]!.checkpoint).toBe(end);
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 3 });

    // And it goes on processing where the restored state says it was: nothing twice.
    await driver.pipe("orders", [{ key: keys[0]!, value: { amount: 10 } }]);
    await driver.runUntilQuiet();
    expect(await driver.get("totals", keys[0]!)).toEqual({ count: 3, sum: 13 });
  });

  it("ignores duplicate, late, reordered and stale-incarnation batches (I4)", async () => {
    const keys = keysOn(2, 3, "idem");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 5 } })),
    );
    await driver.runUntilQuiet();
    const stub = driver.task(await activeInstance(driver.instances(), 2));
    await call("/admin/restore/pause", { method: "POST" });
    const page = await driver.log.fetch({ topic: CHANGELOG, partition: 2 }, 0, { maxRecords: 1_000, maxBytes: 1 << 22 });
    const end = page.nextOffset;
    const wiped = (await stub.corrupt()) as TaskDescription;
    const incarnation = wiped.incarnation;
    const batch = (from: number, to: number, inc = incarnation) => ({
      topic: CHANGELOG,
      partition: 2,
      incarnation: inc,
      fromOffset: from,
      nextOffset: to,
      earliest: 0,
      end,
      records: page.records.filter((r) => r.offset >= from && r.offset < to),
    });
    // A batch read for the previous incarnation, and one that skips ahead: both no-ops.
    expect(await stub.applyRestoreBatch(batch(0, 2, incarnation - 1))).toMatchObject({ applied: false, checkpoint: null });
    expect(await stub.applyRestoreBatch(batch(2, end))).toMatchObject({ applied: false, checkpoint: null });
    expect(await stub.applyRestoreBatch(batch(0, 2))).toMatchObject({ applied: true, checkpoint: 2 });
    // A batch read for another assignment (a stale epoch) is a no-op too (I3).
    const epoch = wiped.epoch;
    expect(await stub.applyRestoreBatch({ ...batch(2, end), epoch: epoch - 1 })).toMatchObject({ applied: false, checkpoint: 2 });
    // The same batch again (a retry after a lost reply) is a no-op.
    expect(await stub.applyRestoreBatch(batch(0, 2))).toMatchObject({ applied: false, checkpoint: 2 });
    expect(await stub.applyRestoreBatch(batch(2, end))).toMatchObject({ applied: true, checkpoint: end, caughtUp: true });
    expect(((await stub.describe()) as TaskDescription).state).toBe("RUNNING");
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 5 });
    await call("/admin/restore/resume", { body: {} });
  });

  it("lets restored tasks process while another restores (I6), and answers queries to it with 503 and progress", async () => {
    const slow = keysOn(3, 80, "slow");
    const fast = keysOn(0, 1, "fast")[0]!;
    await driver.pipe(
      "orders",
      slow.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    await call("/admin/restore/pause", { method: "POST" });
    const stub = driver.task(await activeInstance(driver.instances(), 3));
    await stub.corrupt();

    await driver.pipe("orders", [{ key: fast, value: { amount: 4 } }]);
    await driver.task(await activeInstance(driver.instances(), 0)).drain();
    expect(await driver.get("totals", fast)).toEqual({ count: 1, sum: 4 });

    const restoring = await call(`/stores/totals/keys/${slow[0]}`);
    expect(restoring.status).toBe(503);
    expect(restoring.headers.get("Retry-After")).toBeTruthy();
    const body = await json(restoring);
    expect(body).toMatchObject({ error: "restoring", task: "0_3", progress: { restored: 0 } });
    expect(body.progress.total).toBeGreaterThan(0);

    // Resume for one batch only (a window: two batches of 25 read and compacted, RESTORE_READ_AHEAD=1
    // in tests): progress shows, then restoration is paused again.
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await driver.restoreRound();
    await driver.restoreRound();
    await driver.restoreRound();
    const partial = await describe0(3);
    expect(partial.state).toBe("RESTORING");
    expect(partial.changelogs[0]!.checkpoint).toBe(50);

    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    expect((await describe0(3)).state).toBe("RUNNING");
    expect(await driver.get("totals", slow[0]!)).toEqual({ count: 1, sum: 1 });
  });

  it("treats a changelog truncated below the checkpoint as corruption and restores what is left", async () => {
    const keys = keysOn(1, 5, "trunc");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    await call("/admin/restore/pause", { method: "POST" });
    const stub = driver.task(await activeInstance(driver.instances(), 1));
    const first = (await stub.corrupt()) as TaskDescription;
    // Restore a little, then the changelog loses its head below that position.
    await call("/admin/restore/resume", { body: { maxBatches: 1 } });
    await driver.restoreRound();
    const partial = await describe0(1);
    const restoredTo = partial.changelogs[0]!.checkpoint!;
    // One window: two batches of 25 (RESTORE_READ_AHEAD=1 in tests).
    expect(restoredTo).toBe(50);
    await driver.log.deleteRecordsBefore({ topic: CHANGELOG, partition: 1 }, restoredTo + 5);
    await call("/admin/restore/resume", { body: {} });
    await driver.restoreRound();
    const revived = await describe0(1);
    // Reported as corruption: wiped again, a new incarnation restoring from the earliest offset left.
    expect(revived.incarnation).toBe(first.incarnation + 1);
    await driver.runUntilQuiet();
    const done = await describe0(1);
    expect(done.state).toBe("RUNNING");
    expect(done.changelogs[0]!.checkpoint).toBe(done.changelogs[0]!.end);
  });
});
