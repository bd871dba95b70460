/**
 * The second example application on the real runtime: page views regrouped by region (a
 * repartition topic and a second subtopology), counted in one-minute windows, suppressed until
 * each minute closes, joined with the region table — and the window store queried over HTTP.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "../../examples/page-views/app";
import { MINUTE_MS, PAGE_VIEWS_GRACE_MS } from "../../examples/page-views/topology";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";

const driver = new TestDriver(env, application);

it("counts views per region per minute, publishes final minutes joined with the region, and answers window queries", async () => {
  expect(application.applicationId).toBe("page-views");
  await driver.pipe("regions", [
    { key: "eu", value: { name: "Europe" } },
    { key: "us", value: { name: "Americas" } },
  ]);
  const view = (user: string, region: string, at: number) => ({ key: user, value: { region, page: "/" }, timestamp: at });
  await driver.pipe("page-views", [view("u1", "eu", 1_000), view("u2", "eu", 2_000), view("u3", "us", 3_000), view("u1", "eu", MINUTE_MS + 5_000)]);
  await driver.runUntilQuiet();
  // Nothing is final yet: stream time has not passed the first minute's end plus grace.
  expect(await driver.read("page-views-per-region")).toEqual([]);

  // Later views move stream time past minute 0's close in both regions' tasks.
  const later = 2 * MINUTE_MS + PAGE_VIEWS_GRACE_MS + 1;
  await driver.pipe("page-views", [view("u4", "eu", later), view("u5", "us", later)]);
  await driver.runUntilQuiet();
  const published = (await driver.read("page-views-per-region")).map((r) => ({ key: r.key, ...JSON.parse(r.value) }));
  expect(published).toContainEqual({ key: "eu", region: "Europe", windowStart: 0, windowEnd: MINUTE_MS, views: 2 });
  expect(published).toContainEqual({ key: "us", region: "Americas", windowStart: 0, windowEnd: MINUTE_MS, views: 1 });
  expect(published).toContainEqual({ key: "eu", region: "Europe", windowStart: MINUTE_MS, windowEnd: 2 * MINUTE_MS, views: 1 });
  // Each final minute carries its latest view's time (Kafka's window results), through suppress,
  // the repartition and the join.
  const stamped = (await driver.read("page-views-per-region")).map((r) => [r.key, JSON.parse(r.value).windowStart, r.timestamp]);
  expect(stamped).toContainEqual(["eu", 0, 2_000]);
  expect(stamped).toContainEqual(["us", 0, 3_000]);
  expect(stamped).toContainEqual(["eu", MINUTE_MS, MINUTE_MS + 5_000]);

  const response = await call(`/stores/views-per-minute/windows/eu?from=0&to=${MINUTE_MS}`);
  expect(response.status).toBe(200);
  expect(await json(response)).toMatchObject({
    key: "eu",
    windows: [
      { window: { start: 0, end: MINUTE_MS }, value: 2 },
      { window: { start: MINUTE_MS, end: 2 * MINUTE_MS }, value: 1 },
    ],
  });
  // A window store is not read as a key-value store, and vice versa.
  expect((await call("/stores/views-per-minute/keys/eu")).status).toBe(400);
  expect((await call("/stores/regions/windows/eu")).status).toBe(400);
  // Neither is scanned as a key-value store; the suppression buffer is not queryable at all.
  expect((await call("/stores/views-per-minute/keys")).status).toBe(400);
  for (const path of ["/stores/final-minutes/keys", "/stores/final-minutes/keys/eu", "/stores/final-minutes/windows/eu"]) {
    const refused = await call(path);
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "invalid_input", message: expect.stringContaining("suppression buffer") });
  }
});

it("restores the window store, the suppression buffer and the region table through the restore worker after corruption", async () => {
  const view = (user: string, region: string, at: number) => ({ key: user, value: { region, page: "/" }, timestamp: at });
  const minute = 10 * MINUTE_MS;
  await driver.pipe("regions", [{ key: "ap", value: { name: "Asia" } }]);
  await driver.pipe("page-views", [view("v1", "ap", minute + 1_000), view("v2", "ap", minute + 2_000)]);
  await driver.runUntilQuiet();
  const query = async () => {
    const response = await call(`/stores/views-per-minute/windows/ap?from=${minute}&to=${minute}`);
    expect(response.status).toBe(200);
    return json<{ task: string; windows: unknown[] }>(response);
  };
  const { task, windows } = await query();
  expect(windows).toEqual([{ window: { start: minute, end: minute + MINUTE_MS }, value: 2 }]);

  // The tasks that keep ap's window store and suppression buffer, and its region table row, are wiped.
  const tableTask = (await json<{ task: string }>(await call("/stores/regions/keys/ap"))).task;
  expect(tableTask).not.toBe(task);
  // Restoration is held, so the query below meets the window store still restoring.
  expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
  for (const taskId of [task, tableTask]) {
    const owner = (await driver.instances()).find((i) => i.role === "active" && i.taskId === taskId)!;
    expect((await driver.task(owner).corrupt()).state).toBe("RESTORING");
  }
  expect((await call(`/stores/views-per-minute/windows/ap?from=${minute}&to=${minute}`)).status).toBe(503);
  expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  await driver.runUntilQuiet();
  expect((await query()).windows).toEqual([{ window: { start: minute, end: minute + MINUTE_MS }, value: 2 }]);
  expect((await json(await call("/stores/regions/keys/ap"))).value).toEqual({ name: "Asia" });

  // A view earlier than the restored minute's latest: the restored window kept its timestamp
  // (restored from its changelog record's), so the count still carries minute + 2 s.
  await driver.pipe("page-views", [view("v2b", "ap", minute + 500)]);
  // The restored buffer still holds the open minute: closing it publishes the final count once,
  // joined with the restored region table.
  await driver.pipe("page-views", [view("v3", "ap", minute + 2 * MINUTE_MS + PAGE_VIEWS_GRACE_MS + 1)]);
  await driver.runUntilQuiet();
  const records = (await driver.read("page-views-per-region")).filter((r) => r.key === "ap");
  const published = records.map((r) => ({ key: r.key, ...JSON.parse(r.value) }));
  expect(published).toEqual([{ key: "ap", region: "Asia", windowStart: minute, windowEnd: minute + MINUTE_MS, views: 3 }]);
  expect(records.map((r) => r.timestamp)).toEqual([minute + 2_000]);
});

it("answers a window query of a restoring task 503 with Retry-After, not 500, while its changelog fails; 503 restoring once it answers", async () => {
  const view = (user: string, region: string, at: number) => ({ key: user, value: { region, page: "/" }, timestamp: at });
  const minute = 20 * MINUTE_MS;
  const path = `/stores/views-per-minute/windows/sa?from=${minute}&to=${minute}`;
  await driver.pipe("regions", [{ key: "sa", value: { name: "South America" } }]);
  await driver.pipe("page-views", [view("w1", "sa", minute + 1_000)]);
  await driver.runUntilQuiet();
  const { task } = await json<{ task: string }>(await call(path));
  const owner = (await driver.instances()).find((i) => i.role === "active" && i.taskId === task)!;
  const changelog = application.changelogPartitions(task).find((c) => c.store === "views-per-minute")!;
  expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
  try {
    await driver.task(owner).corrupt();
    expect((await call("/admin/log/fail", { body: { topic: changelog.topic, partition: changelog.partition, times: 10_000 } })).status).toBe(200);
    const failing = await call(path);
    expect(failing.status).toBe(503);
    expect(failing.headers.get("Retry-After")).toBe("1");
    expect(await json(failing)).toMatchObject({ error: "unavailable" });

    await env.LOG_PARTITION.getByName(`${changelog.topic}/${changelog.partition}`).injectFailures(0);
    const restoring = await call(path);
    expect(restoring.status).toBe(503);
    expect(await json(restoring)).toMatchObject({ error: "restoring", task });
  } finally {
    await env.LOG_PARTITION.getByName(`${changelog.topic}/${changelog.partition}`).injectFailures(0);
    expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  }
  await driver.runUntilQuiet();
  const restored = await call(path);
  expect(restored.status).toBe(200);
  expect((await json(restored)).windows).toEqual([{ window: { start: minute, end: minute + MINUTE_MS }, value: 1 }]);
});

it("refuses writes from outside to its repartition and changelog topics (403, nothing appended)", async () => {
  const repartition = "page-views-views-by-region-repartition";
  expect(application.internalTopics.has(repartition)).toBe(true);
  expect(application.internalTopics.has("page-views-views-per-minute-changelog")).toBe(true);
  expect(application.internalTopics.has("page-views")).toBe(false);
  for (const topic of application.internalTopics) {
    const before = await driver.log.offsets({ topic, partition: 0 });
    const response = await call(`/topics/${topic}/records`, { body: { records: [{ key: "eu", value: { region: "eu", page: "/" }, partition: 0 }] } });
    expect(response.status, topic).toBe(403);
    expect(await json(response)).toMatchObject({ error: "forbidden" });
    expect(await driver.log.offsets({ topic, partition: 0 })).toEqual(before);
  }
});

it("purges its repartition topic below what the reading tasks committed (Kafka's repartition purge)", async () => {
  const minute = 7 * MINUTE_MS;
  await driver.pipe("regions", [{ key: "eu", value: { name: "Europe" } }]);
  await driver.pipe(
    "page-views",
    [1, 2, 3, 4].map((i) => ({ key: `purge-${i}`, value: { region: "eu", page: "/" }, timestamp: minute + i })),
  );
  await driver.runUntilQuiet();
  const topic = application.topology.subtopologies.flatMap((s) => s.repartitionSourceTopics)[0]!;
  const { config, partitions } = await json<{ config: Record<string, unknown>; partitions: { earliest: number; latest: number; records: number }[] }>(
    await call(`/topics/${topic}`),
  );
  expect(config).toMatchObject({ "cleanup.policy": "delete", "retention.ms": -1, "purge.on.commit": true });
  expect(partitions.reduce((n, p) => n + p.latest, 0)).toBeGreaterThanOrEqual(4);
  // Everything the reading tasks processed and committed is gone; offsets keep counting.
  for (const p of partitions) expect(p).toMatchObject({ earliest: p.latest, records: 0 });
});
