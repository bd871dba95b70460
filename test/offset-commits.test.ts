/**
 * The application's consumer-group offsets: where input resumes after a wipe (I5). Records that
 * write no store (dead letters here) are covered only by the committed offset, so an instance
 * commits what it processed before it reports lag 0 and before a wipe; and only task instances,
 * under their epoch, can move those offsets (a commit from outside would make a restoring task
 * skip input).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { COORDINATOR_NAME } from "../src/names";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application, DEAD_LETTER_TOPIC } from "./support/orders-app";
import { call } from "./support/api";
import { keyOn } from "./support/keys";
import { until } from "./support/until";
import { kafka } from "./kafka-rest/support";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

const describeOf = async (taskId: string) =>
  (await driver.task(await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), taskId)).describe()) as TaskDescription;

describe("input offsets are committed before lag 0 and before a wipe", { timeout: 60_000 }, () => {
  it("dead letters whose offset commit was cut short are not produced again after a wipe", async () => {
    const key = keyOn(1, "dead-letter");
    await driver.instances();
    await driver.log.append({ topic: "orders", partition: 1 }, [{ key, value: '{"amount":2}' }]);
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_1");

    // An unreadable order goes to the dead-letter topic; the instance dies after sending it,
    // before committing its input offset.
    await driver.task(active).crash("after-send");
    await driver.log.append({ topic: "orders", partition: 1 }, [{ key, value: '{"amount":"ten"}' }]);
    const died = await driver
      .task(active)
      .drain()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(String(died)).toMatch(/injected crash at after-send/);

    // Lag counts the record until its offset is committed; the instance's alarm commits it.
    await until(async () => (await describeOf("0_1")).lag === 0, 20_000, "the offset to be committed");

    await driver.task(active).corrupt();
    await driver.runUntilQuiet();
    const letters = (await driver.read(DEAD_LETTER_TOPIC)).filter((r) => r.key === key);
    expect(letters).toHaveLength(1);
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 2 });
  });
});

describe("only task instances move the application's offsets", { timeout: 60_000 }, () => {
  it("a commit for the application's group from outside is refused, and a restoring task skips nothing", async () => {
    const key = keyOn(2, "foreign-commit");
    await driver.instances();
    const orders = { topic: "orders", partition: 2 };
    await driver.log.append(
      orders,
      [1, 2, 3].map((amount) => ({ key, value: JSON.stringify({ amount }) })),
    );
    await driver.runUntilQuiet();

    await call("/admin/restore/pause", { method: "POST" });
    await driver.task(await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_2")).corrupt();
    expect((await describeOf("0_2")).state).toBe("RESTORING");
    await driver.log.append(
      orders,
      [4, 5].map((amount) => ({ key, value: JSON.stringify({ amount }) })),
    );
    const end = (await driver.log.offsets(orders)).latest;

    // Someone commits the application's group at the end of the input, through the Kafka REST endpoint.
    const foreign = await kafka(`/commit/${application.groupId}/someone`, { body: { ...orders, offset: end } });
    expect(foreign.status).toBe(403);
    await expect(driver.log.commitOffset(application.groupId, orders, { offset: end, metadata: "" })).rejects.toThrow(/fenced/);

    await call("/admin/restore/resume", { body: {} });
    await driver.runUntilQuiet();
    expect(await driver.get("totals", key)).toEqual({ count: 5, sum: 15 });
    expect((await driver.read("totals")).filter((r) => r.key === key).map((r) => JSON.parse(r.value).count)).toEqual([1, 2, 3, 4, 5]);
  });
});
