/**
 * The whole runtime killed in the middle of a lifecycle operation: a real `wrangler dev` whose
 * process group gets SIGKILL during a migration and during a corruption (the object doing the
 * operation dies at a chosen step first, so the kill lands there), then started again on the same
 * storage. Nothing drives the recovery: the test only reads (`GET /tasks`, store queries). The
 * objects' persisted alarms must bring every task back to RUNNING with lag 0, the move completed,
 * and every total exact.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

const persistTo = mkdtempSync(`${tmpdir()}/edge-streams-kill-`);
const token = `kill-test-${Math.random().toString(36).slice(2)}`;
const vars = { FAULT_INJECTION: "on" };
let dev: WranglerDev;

beforeAll(async () => {
  dev = await startWranglerDev({ persistTo, token, vars });
});

afterAll(async () => {
  await dev?.stop();
  rmSync(persistTo, { recursive: true, force: true });
});

async function api(path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${dev.url}${path}`, { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

type Task = { id: string; placement: string; role: string; state: string; lag: number; incarnation: number };

async function tasks(): Promise<Task[]> {
  const response = await api("/tasks");
  if (response.status !== 200) return [];
  return ((await response.json()) as { tasks: Task[] }).tasks;
}

const active = async (id: string) => (await tasks()).find((t) => t.id === id && t.role === "active");

/** Every task's active instance RUNNING with all its input processed and committed (reads only). */
async function allCaughtUp(): Promise<boolean> {
  const actives = (await tasks()).filter((t) => t.role === "active");
  return actives.length === 4 && actives.every((t) => t.state === "RUNNING" && t.lag === 0);
}

/** Per customer, the totals its orders must add up to. */
const expected = new Map<string, { count: number; sum: number }>();

async function order(keys: readonly string[], amount: number): Promise<void> {
  const response = await api("/topics/orders/records", { records: keys.map((key) => ({ key, value: { amount } })) });
  expect(response.status, await response.clone().text()).toBe(200);
  for (const key of keys) {
    const held = expected.get(key) ?? { count: 0, sum: 0 };
    expected.set(key, { count: held.count + 1, sum: held.sum + amount });
  }
}

async function expectTotals(): Promise<void> {
  for (const [key, totals] of expected) {
    const response = await api(`/stores/totals/keys/${encodeURIComponent(key)}`);
    const text = await response.text();
    expect(response.status, `${key}: ${text}`).toBe(200);
    expect(JSON.parse(text).value, key).toEqual(totals);
  }
}

async function killAndRestart(): Promise<void> {
  await dev.kill();
  dev = await startWranglerDev({ persistTo, token, vars });
}

const keys = Array.from({ length: 12 }, (_, i) => `killed-${i}`);

describe("the runtime killed mid-operation, restarted on the same storage", () => {
  it("a migration: the move completes by itself after the restart", async () => {
    await order(keys, 3);
    await until(allCaughtUp, 60_000, "every task caught up");
    const before = (await active("0_0"))!;
    const to = before.placement === "a" ? "b" : "a";

    // The old instance dies once it is idle durably, the move half done; then everything dies.
    expect((await api("/admin/tasks/0_0/crash", { at: "revoke:after-suspend" })).status).toBe(200);
    const migrate = await api("/admin/tasks/0_0/migrate", { to });
    expect([200, 503]).toContain(migrate.status);
    await killAndRestart();

    await order(keys, 5);
    await until(async () => (await active("0_0"))?.placement === to && (await allCaughtUp()), 60_000, "the move to complete and every task to catch up");
    await expectTotals();
  });

  it("a corruption: the wiped task restores and runs again by itself after the restart", async () => {
    const before = (await active("0_1"))!;
    // The instance dies right after its wipe, before its restore worker knows; then everything dies.
    expect((await api("/admin/tasks/0_1/crash", { at: "corrupt:after-wipe" })).status).toBe(200);
    const corrupt = await api("/admin/tasks/0_1/corrupt", {});
    expect([200, 500, 503]).toContain(corrupt.status);
    await killAndRestart();

    await order(keys, 7);
    await until(
      async () => ((await active("0_1"))?.incarnation ?? 0) > before.incarnation && (await allCaughtUp()),
      60_000,
      "the wiped task to restore and every task to catch up",
    );
    await expectTotals();
  });
});
