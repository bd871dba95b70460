/**
 * The example at scale on a real `wrangler dev`: PARTITIONS=256 with a standby each (512 task
 * instances), two placements with location hints (`eu` also with its jurisdiction, which local
 * workerd does not implement: it falls back with a warning). Every step is checked on outcomes
 * read through the public API: all instances assigned and caught up in the paged views and their
 * summary, orders over every partition processed exactly, a migration to the standby's placement,
 * a corruption restored, ingest and queries going on while the coordinator cannot answer, and the
 * whole runtime (the coordinator with it) killed and started again on the same storage.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keysOn } from "../support/keys";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

const PARTITIONS = 256;
const persistTo = mkdtempSync(`${tmpdir()}/edge-streams-scale-`);
const token = `scale-test-${Math.random().toString(36).slice(2)}`;
const start = () =>
  startWranglerDev({
    persistTo,
    token,
    vars: { PARTITIONS: String(PARTITIONS), PLACEMENTS: "eu:weur:eu,us:enam", NUM_STANDBYS: "1", FAULT_INJECTION: "on" },
  });
let dev: WranglerDev;

/** 256 partitions through a real `wrangler dev` take about 140 s in CI: bounded well above that, for a loaded machine. */
const SCALE_TEST_TIMEOUT = 360_000;

beforeAll(async () => {
  dev = await start();
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  rmSync(persistTo, { recursive: true, force: true });
});

async function api(path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${dev.token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${dev.url}${path}`, { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function json<T = unknown>(response: Promise<Response>): Promise<T> {
  const r = await response;
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return JSON.parse(text) as T;
}

type Task = { id: string; placement: string; role: string; state: string; lag: number; incarnation: number };
type Summary = { instances: number; reported: number; lag: number; byRole: Record<string, number>; byState: Record<string, number> };

/** The application-wide summary; none while instances are still taking their first assignment (503, retry). */
async function summary(): Promise<Summary | undefined> {
  const response = await api("/tasks?limit=1");
  if (response.status === 503) return undefined;
  return (await json<{ summary: Summary }>(Promise.resolve(response))).summary;
}

/** Every instance, page by page (500 per page at most). */
async function allTasks(): Promise<Task[]> {
  const tasks: Task[] = [];
  let next: string | undefined = "/tasks?limit=500";
  while (next) {
    const page: { tasks: Task[]; next?: string | null } = await json(api(next));
    tasks.push(...page.tasks);
    next = page.next ? `/tasks?limit=500&cursor=${encodeURIComponent(page.next)}` : undefined;
  }
  return tasks;
}

/** The whole application caught up: every instance reported, actives and standbys RUNNING, nothing left to process. */
async function caughtUp(): Promise<boolean> {
  const s = await summary();
  return (
    s !== undefined &&
    s.instances === 2 * PARTITIONS &&
    s.reported === 2 * PARTITIONS &&
    s.byRole.active === PARTITIONS &&
    s.byRole.standby === PARTITIONS &&
    s.lag === 0
  );
}

/** Per customer, what its orders must add up to. */
const expected = new Map<string, { count: number; sum: number }>();

async function order(records: readonly { key: string; amount: number }[]): Promise<void> {
  for (let i = 0; i < records.length; i += 1_000) {
    const batch = records.slice(i, i + 1_000);
    await json(api("/topics/orders/records", { records: batch.map(({ key, amount }) => ({ key, value: { amount } })) }));
    for (const { key, amount } of batch) {
      const held = expected.get(key) ?? { count: 0, sum: 0 };
      expected.set(key, { count: held.count + 1, sum: held.sum + amount });
    }
  }
}

async function total(key: string): Promise<{ status: number; value?: { count: number; sum: number } }> {
  const response = await api(`/stores/totals/keys/${encodeURIComponent(key)}`);
  return response.status === 200
    ? { status: 200, value: ((await response.json()) as { value: { count: number; sum: number } }).value }
    : { status: response.status };
}

async function expectTotals(keys: readonly string[]): Promise<void> {
  for (const key of keys) expect((await total(key)).value, key).toEqual(expected.get(key));
}

const activeOf = async (id: string) => (await allTasks()).find((t) => t.id === id && t.role === "active")!;

describe(`${PARTITIONS} partitions with a standby each, two placements`, () => {
  it(
    "assigns 512 instances, balanced: every task's active and standby at different placements",
    async () => {
      // Actives run; standbys keep updating from the changelogs (UPDATING is a standby's running state).
      await until(
        async () => {
          const s = await summary();
          return s?.byState.RUNNING === PARTITIONS && s.byState.UPDATING === PARTITIONS;
        },
        120_000,
        "every active RUNNING and every standby UPDATING",
        500,
      );
      const tasks = await allTasks();
      expect(tasks).toHaveLength(2 * PARTITIONS);
      expect(new Set(tasks.map((t) => `${t.id}@${t.placement}`)).size).toBe(2 * PARTITIONS);
      const actives = tasks.filter((t) => t.role === "active");
      expect(actives).toHaveLength(PARTITIONS);
      expect(actives.filter((t) => t.placement === "eu")).toHaveLength(PARTITIONS / 2);
      for (const active of actives) {
        expect(active.state).toBe("RUNNING");
        const standby = tasks.find((t) => t.id === active.id && t.role === "standby")!;
        expect(standby.state).toBe("UPDATING");
        expect(standby.placement).not.toBe(active.placement);
      }
    },
    SCALE_TEST_TIMEOUT,
  );

  it(
    "processes orders over every partition exactly, standbys included, and answers queries of every partition",
    async () => {
      const keys = Array.from({ length: PARTITIONS }, (_, p) => keysOn(p, 4, "customer", PARTITIONS)).flat();
      await order(keys.map((key, i) => ({ key, amount: 1 + (i % 7) })));
      await order(keys.map((key) => ({ key, amount: 10 })));
      await until(caughtUp, 120_000, "every instance caught up", 500);
      await expectTotals(keys);
    },
    SCALE_TEST_TIMEOUT,
  );

  it(
    "moves a task to its standby's placement; queries follow the move",
    async () => {
      const taskId = "0_200";
      const [key] = keysOn(200, 1, "moving", PARTITIONS);
      await order([{ key: key!, amount: 5 }]);
      await until(async () => (await total(key!)).value?.sum === 5, 60_000, "the order before the move");
      const from = (await activeOf(taskId)).placement;
      const to = from === "eu" ? "us" : "eu";
      await json(api(`/admin/tasks/${taskId}/migrate`, { to }));
      await until(async () => (await activeOf(taskId))?.placement === to && (await activeOf(taskId)).state === "RUNNING", 60_000, "the moved active RUNNING");
      await order([{ key: key!, amount: 1 }]);
      await until(async () => (await total(key!)).value?.sum === 6, 60_000, "the moved task to process");
      await expectTotals([key!]);
    },
    SCALE_TEST_TIMEOUT,
  );

  it(
    "restores a corrupted task from its changelog to exact totals",
    async () => {
      const taskId = "0_77";
      const keys = keysOn(77, 20, "restored", PARTITIONS);
      await order(keys.map((key) => ({ key, amount: 2 })));
      await until(async () => (await total(keys[0]!)).value?.sum === 2, 60_000, "the orders before the corruption");
      const before = await activeOf(taskId);
      await json(api(`/admin/tasks/${taskId}/corrupt`, {}));
      await until(
        async () => {
          const now = await activeOf(taskId);
          return now.incarnation > before.incarnation && now.state === "RUNNING";
        },
        60_000,
        "the task restored",
      );
      await expectTotals(keys);
    },
    SCALE_TEST_TIMEOUT,
  );

  it(
    "goes on ingesting and answering queries while the coordinator cannot answer",
    async () => {
      await json(api("/admin/coordinator/fail", { seconds: 120 }));
      try {
        const keys = [0, 63, 128, 255].flatMap((p) => keysOn(p, 2, "no-coordinator", PARTITIONS));
        await order(keys.map((key) => ({ key, amount: 3 })));
        await until(async () => (await total(keys.at(-1)!)).value?.sum === 3, 60_000, "the orders processed without the coordinator");
        for (const key of keys) await until(async () => (await total(key)).value?.sum === 3, 30_000, `${key} processed`);
        await expectTotals(keys);
      } finally {
        await json(api("/admin/coordinator/fail", { seconds: 0 }));
      }
    },
    SCALE_TEST_TIMEOUT,
  );

  it("comes back from the whole runtime killed: the same assignment, then moves, ingest and queries go on", async () => {
    const before = await allTasks();
    await dev.kill();
    dev = await start();
    const assignmentOf = (tasks: readonly Task[]) => tasks.map((t) => `${t.id}@${t.placement}:${t.role}`).sort();
    await until(async () => (await summary())?.byState.RUNNING === PARTITIONS, 120_000, "every active RUNNING again", 500);
    expect(assignmentOf(await allTasks())).toEqual(assignmentOf(before));
    await expectTotals([...expected.keys()].filter((_, i) => i % 16 === 0));

    const taskId = "0_31";
    const [key] = keysOn(31, 1, "after-restart", PARTITIONS);
    const from = (await activeOf(taskId)).placement;
    const to = from === "eu" ? "us" : "eu";
    await json(api(`/admin/tasks/${taskId}/migrate`, { to }));
    await order([{ key: key!, amount: 4 }]);
    await until(async () => (await total(key!)).value?.sum === 4, 60_000, "the order processed after the restart and the move");
    expect((await activeOf(taskId)).placement).toBe(to);
  }, 240_000);
});
