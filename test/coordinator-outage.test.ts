/**
 * The coordinator is off the data path: ingest appends without asking it, queries go to the owner
 * named by the assignment cached at the edge (read again only when an instance says it is not
 * the owner), and while the coordinator cannot answer (`POST /admin/coordinator/fail`) a query
 * asks the task's instance at every placement. Tasks still come into being when their input first
 * arrives: a partition's first append while no one listens tells the coordinator, once.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { application } from "./support/orders-app";
import { Host } from "../platform/host";
import { COORDINATOR_NAME } from "../src/names";
import type { QueryAnswer } from "../src/task/protocol";
import { TestDriver } from "../platform/testing/test-driver";
import { askActive, forgetAssignments } from "../workers/api/cluster";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);

async function ingest(records: { key: string; value: unknown }[]): Promise<void> {
  const response = await call("/topics/orders/records", { body: { records } });
  expect(response.status, await response.clone().text()).toBe(200);
}

async function total(key: string): Promise<{ count: number; sum: number } | undefined> {
  const response = await call(`/stores/totals/keys/${key}`);
  if (response.status === 404) return undefined;
  expect(response.status, await response.clone().text()).toBe(200);
  return (await json(response)).value;
}

async function failCoordinator(seconds: number): Promise<Response> {
  return call("/admin/coordinator/fail", { body: { seconds } });
}

afterEach(async () => {
  expect((await failCoordinator(0)).status).toBe(200);
});

describe("a coordinator outage", () => {
  it("stops rebalancing, never ingest or queries of running tasks", async () => {
    const keys = [...keysOn(1, 3, "outage"), ...keysOn(2, 3, "outage")];
    await ingest(keys.map((key) => ({ key, value: { amount: 1 } })));
    await driver.runUntilQuiet();
    for (const key of keys) expect(await total(key)).toEqual({ count: 1, sum: 1 });
    const active = await activeInstance(driver.instances(), "0_1");

    const failing = await failCoordinator(600);
    expect(failing.status).toBe(200);
    expect(await json(failing)).toMatchObject({ failing: 600 });
    // Every call fails, as an object that cannot be reached would; what needs it answers 503.
    expect(
      String(
        await coordinator.assignments().then(
          () => "answered",
          (error: unknown) => error,
        ),
      ),
    ).toMatch(/CoordinatorUnavailable/);
    const to = active.placement === "a" ? "b" : "a";
    const migrate = await call("/admin/tasks/0_1/migrate", { body: { to } });
    expect(migrate.status).toBe(503);
    expect(migrate.headers.get("Retry-After")).toBe("1");
    expect(await json(migrate)).toMatchObject({ error: "unavailable" });

    // Ingest goes on, and so does processing; queries answer, also from an isolate that has no
    // assignment cached (it asks every placement's instance).
    forgetAssignments();
    await ingest(keys.map((key) => ({ key, value: { amount: 2 } })));
    await until(
      async () => {
        for (const key of keys) if ((await total(key))?.sum !== 3) return false;
        return true;
      },
      20_000,
      "the new orders to be processed and readable during the outage",
    );
    const scan = await call("/stores/totals/keys?prefix=outage-");
    expect(scan.status).toBe(200);
    expect((await json(scan)).items).toHaveLength(keys.length);
    const stale = await call(`/stores/totals/keys/${keys[0]}?stale=true`);
    expect(stale.status).toBe(200);
    expect(await json(stale)).toMatchObject({ value: { count: 2, sum: 3 }, stale: false });
    expect(
      String(
        await coordinator.assignments().then(
          () => "answered",
          (error: unknown) => error,
        ),
      ),
    ).toMatch(/CoordinatorUnavailable/);

    // Once it answers again, rebalancing does too.
    expect((await failCoordinator(0)).status).toBe(200);
    const moved = await call("/admin/tasks/0_1/migrate", { body: { to } });
    expect(moved.status, await moved.clone().text()).toBe(200);
    await driver.runUntilQuiet();
    // The cached assignment names the old owner: it says so, and the assignment is read again.
    for (const key of keys) expect(await total(key)).toEqual({ count: 2, sum: 3 });
  });

  it("a query from an isolate with nothing cached asks every placement: the active instance answers", async () => {
    const [key] = keysOn(3, 1, "fallback");
    await driver.pipe("orders", [{ key: key!, value: { amount: 5 } }]);
    await driver.runUntilQuiet();
    expect((await failCoordinator(600)).status).toBe(200);
    // A host of its own: its cache is empty, as a new isolate's is.
    const host = Host.of(application, { ...env });
    const answer = await askActive(host, "0_3", async (stub) => (await stub.query("totals", key!)) as QueryAnswer);
    expect(answer).toMatchObject({ status: "ok", stale: false, value: JSON.stringify({ count: 1, sum: 5 }) });
  });

  it("answers 400 for a bad body", async () => {
    for (const body of [{}, { seconds: -1 }, { seconds: "1" }, { seconds: 3601 }, { seconds: 1, more: true }]) {
      const response = await call("/admin/coordinator/fail", { body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await json(response)).toMatchObject({ error: "invalid_input" });
    }
  });
});

describe("the coordinator off the data path", () => {
  it("in steady state ingest and queries make no call to the coordinator", async () => {
    const keys = keysOn(0, 4, "steady");
    await driver.instances();
    await ingest(keys.map((key) => ({ key, value: { amount: 1 } })));
    await driver.runUntilQuiet();
    expect(await total(keys[0]!)).toEqual({ count: 1, sum: 1 });

    const before = await coordinator.callsReceived();
    for (let i = 0; i < 10; i++) await ingest(keys.map((key) => ({ key, value: { amount: 1 } })));
    await until(async () => (await total(keys[3]!))?.count === 11, 20_000, "the orders to be processed");
    for (const key of keys) expect(await total(key)).toEqual({ count: 11, sum: 11 });
    expect(await coordinator.callsReceived()).toBe(before);
  });
});
