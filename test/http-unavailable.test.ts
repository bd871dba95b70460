/**
 * A log that fails behind a route: task objects and the coordinator meet it while describing,
 * restoring or assigning, and it reaches the API over RPC without its class. Every route answers
 * 503 with Retry-After (never 500) and answers as before once the log does. A corruption that did
 * happen while the log failed is answered as done. No 503 says what failed inside (the details are logged).
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { PartialTaskDescription, TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";

/** The next calls to a partition fail, as an unreachable partition's would (the fault route). */
async function failLog(topic: string, partition: number): Promise<void> {
  const response = await call("/admin/log/fail", { body: { topic, partition, times: 10_000 } });
  expect(response.status).toBe(200);
}

/** The partition answers again (the fault route only sets failures, at least one). */
async function healLog(topic: string, partition: number): Promise<void> {
  await env.LOG_PARTITION.getByName(`${topic}/${partition}`).injectFailures(0);
}

async function expectUnavailable(response: Response, what: string): Promise<void> {
  const text = await response.text();
  expect(response.status, `${what}: ${text}`).toBe(503);
  expect(response.headers.get("Retry-After"), what).toBe("1");
  expect(JSON.parse(text), what).toMatchObject({ error: "unavailable", message: expect.any(String) });
  // What failed inside (another object's error, the log's) is logged, never answered.
  expect(text, what).not.toMatch(/injected|did not answer|Error|LogUnavailable|Fenced|edge-streams-totals-changelog\/|@[ab]\b/);
}

afterEach(async () => {
  for (let partition = 0; partition < 4; partition++) await healLog(CHANGELOG, partition);
  expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  await driver.runUntilQuiet();
});

describe("a log failure behind a route", () => {
  it("point reads, stale reads and scans of a restoring task: 503 unavailable, then 503 restoring with progress once the log answers", async () => {
    const keys = keysOn(1, 5, "unavail-read");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 2 } })),
    );
    await driver.runUntilQuiet();
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    await driver.task(await activeInstance(driver.instances(), 1)).corrupt();

    await failLog(CHANGELOG, 1);
    await expectUnavailable(await call(`/stores/totals/keys/${keys[0]}`), "point read");
    await expectUnavailable(await call(`/stores/totals/keys/${keys[0]}?stale=true`), "stale point read");
    await expectUnavailable(await call("/stores/totals/keys?prefix=unavail-read-"), "scan");

    await healLog(CHANGELOG, 1);
    const restoring = await call(`/stores/totals/keys/${keys[0]}`);
    expect(restoring.status).toBe(503);
    const body = await json(restoring);
    expect(body).toMatchObject({ error: "restoring", task: "0_1", progress: { restored: 0 } });
    expect(body.progress.total).toBeGreaterThanOrEqual(keys.length);

    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    const read = await call(`/stores/totals/keys/${keys[0]}`);
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ value: { count: 1, sum: 2 }, stale: false });
  });

  it("GET /tasks: 503 while an instance cannot tell its end offsets, 200 again after", async () => {
    await driver.runUntilQuiet();
    await failLog(CHANGELOG, 0);
    await expectUnavailable(await call("/tasks"), "GET /tasks");
    await healLog(CHANGELOG, 0);
    const tasks = await call("/tasks");
    expect(tasks.status).toBe(200);
    expect((await json(tasks)).tasks.length).toBeGreaterThanOrEqual(4);
  });

  it("a corruption made while the log fails is answered as done (200), its end offsets unknown, and wipes once", async () => {
    const keys = keysOn(2, 4, "unavail-corrupt");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 3 } })),
    );
    await driver.runUntilQuiet();
    const stub = driver.task(await activeInstance(driver.instances(), 2));
    const before = (await stub.describe()) as TaskDescription;
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);

    await failLog(CHANGELOG, 2);
    const response = await call("/admin/tasks/0_2/corrupt", { method: "POST" });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const { task } = JSON.parse(text) as { task: PartialTaskDescription };
    expect(task).toMatchObject({ id: "0_2", state: "RESTORING", incarnation: before.incarnation + 1, lag: null });
    expect(task.changelogs).toEqual([{ topic: CHANGELOG, partition: 2, replayed: 0, checkpoint: null, restored: 0, end: null }]);

    await healLog(CHANGELOG, 2);
    const after = (await stub.describe()) as TaskDescription;
    expect(after).toMatchObject({ state: "RESTORING", incarnation: before.incarnation + 1 });
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    expect(((await stub.describe()) as TaskDescription).incarnation).toBe(before.incarnation + 1);
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 3 });
  });

  it("an assignment the coordinator cannot push: migrate answers 503 (under way); while the log fails /tasks is 503 and /metrics shows the instance down; then all recover", async () => {
    const keys = keysOn(3, 3, "unavail-move");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 4 } })),
    );
    await driver.runUntilQuiet();
    const instance = await activeInstance(driver.instances(), 3);
    const to = instance.placement === "a" ? "b" : "a";

    // The instance at the target dies taking its assignment: the move is under way, not failed.
    await driver.task({ taskId: "0_3", placement: to }).crash("assign:after-meta");
    await expectUnavailable(await call("/admin/tasks/0_3/migrate", { body: { to } }), "migrate");
    await failLog(CHANGELOG, 3);
    await expectUnavailable(await call("/tasks"), "GET /tasks");
    // A scrape and the status page answer, showing the instance that could not be described as down.
    const scrape = await call("/metrics");
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/edge_streams_task_up\{[^}]*task="0_3"[^}]*\} 0/);
    expect((await call("/")).status).toBe(200);

    await healLog(CHANGELOG, 3);
    expect((await call("/tasks")).status).toBe(200);
    expect((await call("/metrics")).status).toBe(200);
    expect((await call("/")).status).toBe(200);
    const moved = await call("/admin/tasks/0_3/migrate", { body: { to } });
    expect(moved.status).toBe(200);
    await driver.runUntilQuiet();
    expect((await activeInstance(driver.instances(), 3)).placement).toBe(to);
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 4 });
  });
});
