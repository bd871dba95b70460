/**
 * I3: every assignment carries an epoch from the coordinator; a revoked or zombie instance cannot
 * change the log or a newer instance's state. And the coordinator's state survives its restart.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ProducerFenced } from "../src/log/errors";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call } from "./support/api";
import { keyOn } from "./support/keys";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";

describe("fencing (I3)", () => {
  it("keeps assignments and epochs across a coordinator restart, and hands out only newer epochs", async () => {
    const before = await driver.instances();
    await abortAllDurableObjects();
    const after = await driver.instances();
    expect(after).toEqual(before);
    const highest = Math.max(...before.map((i) => i.epoch));
    const active = before.find((i) => i.taskId === "0_0" && i.role === "active")!;
    const to = active.placement === "a" ? "b" : "a";
    expect((await call("/admin/tasks/0_0/migrate", { body: { to } })).status).toBe(200);
    const moved = await activeInstance(driver.instances(), "0_0");
    expect(moved.placement).toBe(to);
    expect(moved.epoch).toBeGreaterThan(highest);
  });

  it("refuses an assignment older than the one an instance holds", async () => {
    const active = await activeInstance(driver.instances(), "0_1");
    const refusal = await driver
      .task(active)
      .assign({ ...active, epoch: active.epoch - 1 })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(String(refusal)).toMatch(/older than/);
    expect(((await driver.task(active).describe()) as TaskDescription).epoch).toBe(active.epoch);
  });

  it("leaves a revoked instance unable to process, answer queries or move the log", async () => {
    const key = keyOn(2, "fence");
    await driver.pipe("orders", [{ key, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const old = await activeInstance(driver.instances(), "0_2");
    const oldDescription = (await driver.task(old).describe()) as TaskDescription;
    const to = old.placement === "a" ? "b" : "a";
    await call("/admin/tasks/0_2/migrate", { body: { to } });
    await driver.pipe("orders", [{ key, value: { amount: 2 } }]);
    await driver.runUntilQuiet();

    const end = (await driver.log.offsets({ topic: CHANGELOG, partition: 2 })).latest;
    expect(await driver.task(old).drain()).toEqual({ worked: 0, outcome: "idle" });
    expect(await driver.task(old).query("totals", key)).toEqual({ status: "not-owner" });
    expect((await driver.log.offsets({ topic: CHANGELOG, partition: 2 })).latest).toBe(end);

    // Were it a zombie still sending, the log would refuse its producer epoch and its commits:
    // the new active has appended with a newer one.
    const zombieEpoch = oldDescription.epoch * 1_000_000 + oldDescription.incarnation;
    await expect(
      driver.log.append({ topic: CHANGELOG, partition: 2 }, [{ key, value: '{"count":99,"sum":99}' }], {
        producerId: "edge-streams-0_2",
        epoch: zombieEpoch,
        sequence: 0,
      }),
    ).rejects.toBeInstanceOf(ProducerFenced);
    await expect(
      driver.log.commitOffset("edge-streams", { topic: "orders", partition: 2 }, { offset: 0, metadata: "", epoch: zombieEpoch }),
    ).rejects.toBeInstanceOf(ProducerFenced);
    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 3 });
  });
});
