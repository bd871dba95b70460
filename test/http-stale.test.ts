/**
 * `?stale=true` without standbys (NUM_STANDBYS=0): while a task restores, only the restoring
 * active itself can answer, and only once it has restored some of the store's changelog. Before
 * that, point reads and scans answer 503 with the task's progress — never "no key" for a key that
 * exists. A stale 404 says it is stale. Restoration is paused, then let through one batch at a
 * time (a restore window: two batches of RESTORE_BATCH_RECORDS=25 in tests, RESTORE_READ_AHEAD=1);
 * each partially restored task's changelog holds only its test's records.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
/** What one restore round restores in tests: a window of two batches of 25. */
const WINDOW = 50;
/** Keys a test seeds: more than a window. */
const SEEDED = 60;

/** `SEEDED` keys on `partition`, one order each: as many changelog records, in this order. */
async function seed(partition: number, prefix: string): Promise<string[]> {
  const keys = keysOn(partition, SEEDED, prefix);
  await driver.pipe(
    "orders",
    keys.map((key, i) => ({ key, value: { amount: i + 1 } })),
  );
  await driver.runUntilQuiet();
  return keys;
}

/** Wipes the task's active instance with restoration paused: RESTORING, nothing restored. */
async function wipeAndHold(partition: number): Promise<void> {
  expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
  expect((await call(`/admin/tasks/0_${partition}/corrupt`, { method: "POST" })).status).toBe(200);
}

/** Lets exactly one restore batch through. */
async function restoreOneBatch(partition: number): Promise<number> {
  expect((await call("/admin/restore/resume", { body: { maxBatches: 1 } })).status).toBe(200);
  await driver.restoreRound();
  const described = (await driver.task(await activeInstance(driver.instances(), partition)).describe()) as TaskDescription;
  expect(described.state).toBe("RESTORING");
  return described.changelogs[0]!.checkpoint!;
}

async function expectRestoring(response: Response, task: string, restored: number): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(503);
  expect(response.headers.get("Retry-After")).toBe("1");
  const body = JSON.parse(text);
  expect(body).toMatchObject({ error: "restoring", task, progress: { restored } });
  expect(body.progress.total).toBeGreaterThan(restored);
}

afterEach(async () => {
  expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  await driver.runUntilQuiet();
});

describe("GET /stores/:store/keys/:key?stale=true", () => {
  it("of a restoring task that restored nothing: 503 restoring with progress, not 404", async () => {
    const keys = await seed(1, "stale-none");
    await wipeAndHold(1);
    await expectRestoring(await call(`/stores/totals/keys/${keys[0]}?stale=true`), "0_1", 0);
    await expectRestoring(await call(`/stores/totals/keys/${keys[0]}`), "0_1", 0);
  });

  it("once it restored part of the store: the restored keys, marked stale; a key not restored yet is a 404 marked stale", async () => {
    const keys = await seed(2, "stale-part");
    await wipeAndHold(2);
    const restored = await restoreOneBatch(2);
    expect(restored).toBe(WINDOW);

    const hit = await call(`/stores/totals/keys/${keys[0]}?stale=true`);
    expect(hit.status).toBe(200);
    expect(await json(hit)).toEqual({ key: keys[0], value: { count: 1, sum: 1 }, task: "0_2", stale: true });
    const miss = await call(`/stores/totals/keys/${keys[SEEDED - 1]}?stale=true`);
    expect(miss.status).toBe(404);
    expect(await json(miss)).toMatchObject({ error: "not_found", stale: true });
    // Without stale=true the task still answers only with its progress.
    await expectRestoring(await call(`/stores/totals/keys/${keys[0]}`), "0_2", WINDOW);

    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    await driver.runUntilQuiet();
    const fresh = await call(`/stores/totals/keys/${keys[SEEDED - 1]}?stale=true`);
    expect(await json(fresh)).toEqual({ key: keys[SEEDED - 1], value: { count: 1, sum: SEEDED }, task: "0_2", stale: false });
  });
});

describe("GET /stores/:store/keys?stale=true", () => {
  it("is accepted; with every task running it is the ordinary page, not marked stale", async () => {
    const keys = await seed(0, "stale-scan-run");
    const response = await call("/stores/totals/keys?prefix=stale-scan-run-&stale=true&limit=1000");
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.items).toHaveLength(keys.length);
    expect(body.stale).toBeUndefined();
  });

  it("of a restoring task that restored nothing: 503 restoring with that task's progress", async () => {
    await seed(1, "stale-scan-none");
    await wipeAndHold(1);
    await expectRestoring(await call("/stores/totals/keys?prefix=stale-scan-none-&stale=true"), "0_1", 0);
  });

  it("once the restoring task restored part of its store: its restored keys with every running task's, marked stale", async () => {
    const restoringKeys = await seed(3, "stale-scan-part");
    const runningKeys = keysOn(0, 3, "stale-scan-part");
    await driver.pipe(
      "orders",
      runningKeys.map((key) => ({ key, value: { amount: 100 } })),
    );
    await driver.runUntilQuiet();
    await wipeAndHold(3);
    expect(await restoreOneBatch(3)).toBe(WINDOW);

    const response = await call("/stores/totals/keys?prefix=stale-scan-part-&stale=true&limit=1000");
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const body = JSON.parse(text);
    expect(body.stale).toBe(true);
    const keys = (body.items as { key: string }[]).map((i) => i.key).sort();
    expect(keys).toEqual([...restoringKeys.slice(0, WINDOW), ...runningKeys].sort());
    await expectRestoring(await call("/stores/totals/keys?prefix=stale-scan-part-"), "0_3", WINDOW);
  });
});
