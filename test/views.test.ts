/**
 * Views that scale: `GET /tasks` and `/metrics` are paged (a cursor and a limit), the status page
 * pages through instances, and every one carries the application-wide summary, served from what
 * the instances report to their restore worker shards (src/summary/summary.ts) rather than by
 * asking every task object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { application } from "./support/orders-app";
import { EMPTY_SUMMARY, mergeSummaries, REPORT_INTERVAL_MS, reportDue, summarize, type InstanceReport } from "../src/summary/summary";
import { TestDriver } from "../platform/testing/test-driver";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

type TasksPage = {
  tasks: { id: string; placement: string; role: string; state: string }[];
  next: string | null;
  summary: { instances: number; reported: number; byState: Record<string, number>; lag: number; restoring: { restored: number; total: number } };
  shutdown: unknown;
};

async function tasksPage(query = ""): Promise<TasksPage> {
  const response = await call(`/tasks${query}`);
  expect(response.status, await response.clone().text()).toBe(200);
  return json(response);
}

describe("GET /tasks, paged", () => {
  it("pages through every instance with limit and cursor, each page with the whole application's summary", async () => {
    await driver.pipe(
      "orders",
      keysOn(0, 3, "paged").map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const all = await tasksPage();
    expect(all.next).toBeNull();
    const names = all.tasks.map((t) => `${t.id}@${t.placement}`);
    expect(names.length).toBeGreaterThanOrEqual(4);
    expect(all.summary).toMatchObject({
      instances: names.length,
      byState: expect.any(Object),
      lag: expect.any(Number),
      restoring: { restored: expect.any(Number), total: expect.any(Number) },
    });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: TasksPage = await tasksPage(`?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.tasks.length).toBeLessThanOrEqual(3);
      expect(page.summary.instances).toBe(names.length);
      seen.push(...page.tasks.map((t) => `${t.id}@${t.placement}`));
      cursor = page.next;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual(names);
    expect(pages).toBe(Math.ceil(names.length / 3));
  });

  it("sums up the application from the instances' reports: states, lag and a restore under way", { timeout: 60_000 }, async () => {
    await driver.runUntilQuiet();
    await until(
      async () => {
        const { summary } = await tasksPage();
        return summary.reported === summary.instances && summary.byState.RUNNING === 4 && summary.lag === 0;
      },
      10_000,
      "every instance to have reported, four of them RUNNING and caught up",
    );

    const keys = keysOn(1, 30, "summary-restore");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 1 } })),
    );
    await driver.runUntilQuiet();
    const active = await activeInstance(driver.instances(), "0_1");
    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      await driver.task(active).corrupt();
      await until(
        async () => {
          const { summary } = await tasksPage();
          return summary.byState.RESTORING === 1 && summary.restoring.total >= keys.length && summary.restoring.restored === 0;
        },
        10_000,
        "the summary to show the restore",
      );
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    await until(
      async () => {
        const { summary } = await tasksPage();
        return summary.byState.RUNNING === 4 && summary.restoring.total === 0;
      },
      10_000,
      "the summary to show the restore done",
    );
  });

  it("refuses a bad limit or cursor with 400", async () => {
    for (const query of ["?limit=0", "?limit=501", "?limit=x", "?cursor=%25%25", "?cursor=YWJj"]) {
      const response = await call(`/tasks${query}`);
      expect(response.status, query).toBe(400);
      expect(await json(response)).toMatchObject({ error: "invalid_input" });
    }
  });
});

describe("GET /metrics, paged", () => {
  it("lists instances, then topic partitions, page by page, following Link headers; the application's families on the first page", async () => {
    await driver.runUntilQuiet();
    const instances = (await tasksPage()).tasks.length;
    const partitions = [...application.catalog.with({}).all].reduce((n, [, count]) => n + count, 0);
    let path: string | null = "/metrics?limit=5";
    const up: string[] = [];
    const kept: string[] = [];
    let first = true;
    let pages = 0;
    while (path !== null && pages < 50) {
      const response = await call(path);
      expect(response.status).toBe(200);
      const text = await response.text();
      for (const m of text.matchAll(/^edge_streams_task_up\{task="([^"]+)",placement="([^"]+)"/gm)) up.push(`${m[1]}@${m[2]}`);
      for (const m of text.matchAll(/^edge_streams_topic_partition_records\{topic="([^"]+)",partition="([^"]+)"/gm)) kept.push(`${m[1]}/${m[2]}`);
      expect(/^edge_streams_application_instances \d+$/m.test(text), `application families on page ${pages}`).toBe(first);
      const link = response.headers.get("Link");
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
      first = false;
      pages++;
    }
    expect(new Set(up).size).toBe(instances);
    expect(up).toHaveLength(instances);
    // Every partition the Worker serves (the application's and the TOPICS var's), once.
    expect(new Set(kept).size).toBe(kept.length);
    expect(kept.length).toBeGreaterThanOrEqual(partitions);
    expect(pages).toBe(Math.ceil((instances + kept.length) / 5));
  });

  it("refuses a bad limit or cursor with 400", async () => {
    for (const query of ["?limit=0", "?limit=501", "?cursor=bm9wZQ"]) expect((await call(`/metrics${query}`)).status, query).toBe(400);
  });
});

describe("the status page", () => {
  it("shows the summary and pages through instances", async () => {
    await driver.runUntilQuiet();
    const first = await (await call("/?limit=2")).text();
    expect(first).toContain('data-summary="application"');
    expect(first).toMatch(/data-summary-instances[^>]*>\d+</);
    const next = /href="\/\?cursor=([A-Za-z0-9_-]+)" rel="next"/.exec(first);
    expect(next).not.toBeNull();
    expect((first.match(/<article /g) ?? []).length).toBe(2);
    const second = await (await call(`/?limit=2&cursor=${next![1]}`)).text();
    expect(second).toContain('href="/">first page');
    expect((second.match(/<article /g) ?? []).length).toBeGreaterThanOrEqual(1);
    expect((await call("/?limit=101")).status).toBe(400);
  });
});

describe("summaries (pure)", () => {
  const report = (over: Partial<InstanceReport> = {}): InstanceReport => ({
    instance: "0_0@a",
    taskId: "0_0",
    placement: "a",
    role: "active",
    state: "RUNNING",
    epoch: 1,
    incarnation: 0,
    failed: false,
    failure: null,
    lag: 10,
    oldestWaiting: null,
    restored: 0,
    total: 0,
    seq: 1,
    ...over,
  });

  it("sends a change of what the instance is at once, progress at most every REPORT_INTERVAL_MS, and catching up at once (once)", () => {
    const last = { report: report(), at: 1_000 };
    expect(reportDue(undefined, report(), 0)).toBe(true);
    expect(reportDue(last, report({ seq: 2 }), 1_001)).toBe(false);
    expect(reportDue(last, report({ state: "RESTORING" }), 1_001)).toBe(true);
    expect(reportDue(last, report({ failed: true }), 1_001)).toBe(true);
    expect(reportDue(last, report({ lag: 5 }), 1_001)).toBe(false);
    expect(reportDue(last, report({ lag: 5 }), 1_000 + REPORT_INTERVAL_MS)).toBe(true);
    expect(reportDue(last, report({ lag: 0 }), 1_001)).toBe(true);
    // Still caught up after a report that said so: a running instance's changelog progress is not
    // shown by the summary, so it is never sent; a restoring active's is, at most every REPORT_INTERVAL_MS.
    const caughtUp = { report: report({ lag: 0, restored: 40, total: 40 }), at: 1_000 };
    expect(reportDue(caughtUp, report({ lag: 0, restored: 45, total: 45 }), 1_001)).toBe(false);
    expect(reportDue(caughtUp, report({ lag: 0, restored: 45, total: 45 }), 1_000 + REPORT_INTERVAL_MS)).toBe(false);
    expect(reportDue(caughtUp, report({ lag: 0, restored: 45, total: 48 }), 1_000 + REPORT_INTERVAL_MS)).toBe(false);
    const restoring = { report: report({ state: "RESTORING", lag: 0, restored: 40, total: 90 }), at: 1_000 };
    expect(reportDue(restoring, report({ state: "RESTORING", lag: 0, restored: 60, total: 90 }), 1_001)).toBe(false);
    expect(reportDue(restoring, report({ state: "RESTORING", lag: 0, restored: 60, total: 90 }), 1_000 + REPORT_INTERVAL_MS)).toBe(true);
    expect(reportDue(restoring, report({ state: "RESTORING", lag: 0, restored: 90, total: 90 }), 1_001)).toBe(true);
    // Fallen behind after a report that said caught up: told only once behind REPORT_INTERVAL_MS without a break.
    expect(reportDue(caughtUp, report({ lag: 3 }), 1_001, 1_001)).toBe(false);
    expect(reportDue(caughtUp, report({ lag: 3 }), 1_000 + REPORT_INTERVAL_MS, 1_001)).toBe(false);
    expect(reportDue(caughtUp, report({ lag: 3 }), 1_001 + REPORT_INTERVAL_MS, 1_001)).toBe(true);
    expect(reportDue(caughtUp, report({ lag: 3 }), 1_000 + 10 * REPORT_INTERVAL_MS, undefined)).toBe(false);
  });

  it("sums reports by state and role, lag over actives apart from standbys', restore progress over restoring actives only, and merges shards", () => {
    const a = summarize([
      report(),
      report({ instance: "0_1@a", state: "RESTORING", restored: 5, total: 20, lag: 0 }),
      report({ instance: "0_2@a", role: "standby", state: "UPDATING", restored: 1, total: 9, lag: 8 }),
    ]);
    expect(a).toEqual({
      reported: 3,
      byState: { RUNNING: 1, RESTORING: 1, UPDATING: 1 },
      byRole: { active: 2, standby: 1 },
      // API v1.2: the summary's lag is the actives' input lag; a standby's changelog lag is kept apart.
      lag: 10,
      standbyLag: 8,
      restoring: { restored: 5, total: 20 },
      failed: 0,
      failures: [],
      oldestWaiting: null,
    });
    const b = summarize([
      report({ instance: "0_3@b", taskId: "0_3", placement: "b", state: "FAILED", failed: true, failure: "boom", lag: 2, oldestWaiting: 500 }),
    ]);
    expect(mergeSummaries([a, b, EMPTY_SUMMARY])).toEqual({
      reported: 4,
      byState: { RUNNING: 1, RESTORING: 1, UPDATING: 1, FAILED: 1 },
      byRole: { active: 3, standby: 1 },
      lag: 12,
      standbyLag: 8,
      restoring: { restored: 5, total: 20 },
      failed: 1,
      failures: [{ task: "0_3", placement: "b", reason: "boom" }],
      oldestWaiting: 500,
    });
  });
});
