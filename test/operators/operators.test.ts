/**
 * cogroup (plain and windowed), KStream.repartition with a partitioner, emitStrategy(onWindowClose)
 * for time windows, sliding windows and sessions, an asymmetric stream-stream join and
 * untilWindowCloses with a bounded buffer, on the real runtime (test/operators/topology.ts): every
 * task is wiped and restored through the restore worker twice, and a task crashes after a commit. The oracle is the same topology on
 * TopologyTestDriver, fed the same records and never wiped: every output topic must hold, key by
 * key, exactly what it holds there (each record once, same values, same timestamps).
 *
 * Input goes in steps of one topic each, each run to quiescence, so that the order in which each
 * task sees its records is the order they were piped in, as on the driver.
 */
import { env } from "cloudflare:workers";
import { TopologyTestDriver } from "edge-streams/testing";
import { expect, it } from "vitest";
import { application } from "./app";
import { CLICK_PARTITIONS, OPERATORS_TOPICS, operatorsTopology, pagePartition, WINDOW_MS } from "./topology";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";

const driver = new TestDriver(env, application);
const oracle = new TopologyTestDriver(operatorsTopology());

/** Window-aligned, an hour ahead of the wall clock (inside every topic's retention). */
const BASE = Math.ceil((Date.now() + 3_600_000) / (6 * WINDOW_MS)) * 6 * WINDOW_MS;

type Input = readonly [user: string, page: string, at: number];

/** Pipes one topic's records into the runtime and the oracle, then runs the runtime until quiet. */
async function step(topic: "clicks" | "views", inputs: readonly Input[]): Promise<void> {
  const records = inputs.map(([user, page, at]) => ({ key: user, value: { page }, timestamp: BASE + at }));
  await driver.pipe(topic, records);
  for (const r of records) oracle.pipe(topic, r.key, JSON.stringify(r.value), { timestamp: r.timestamp });
  await driver.runUntilQuiet();
}

/** Every active task wiped while restoration is held (its stores answer 503), then restored. */
async function wipeEverything(): Promise<void> {
  expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
  for (const instance of (await driver.instances()).filter((i) => i.role === "active")) {
    expect((await driver.task(instance).corrupt()).incarnation, instance.taskId).toBeGreaterThan(0);
  }
  for (const path of ["/stores/activity/keys/u1", "/stores/clicks-per-window/windows/a"]) expect((await call(path)).status, path).toBe(503);
  expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
  await driver.runUntilQuiet();
}

type ByKey = Record<string, [value: unknown, timestamp: number][]>;

/** Records key by key: [value, timestamp], in order. */
function byKey(records: readonly { key: string | null; value: unknown; timestamp: number }[]): ByKey {
  const grouped: ByKey = {};
  for (const { key, value, timestamp } of records) grouped[key ?? ""] = [...(grouped[key ?? ""] ?? []), [value, timestamp]];
  return grouped;
}

async function runtimeOutput(topic: string): Promise<ByKey> {
  const records = await driver.read(topic);
  return byKey(records.map((r) => ({ ...r, value: r.headers.some((h) => h.key === TOMBSTONE_HEADER) ? null : JSON.parse(r.value) })));
}

function oracleOutput(topic: string): ByKey {
  return byKey(oracle.records(topic).map((r) => ({ ...r, value: r.value === null ? null : JSON.parse(r.value) })));
}

it("has the subtopologies and internal topics of its operators", () => {
  const { subtopologies } = application.topology;
  expect(subtopologies.map((s) => [s.sourceTopics, s.partitions])).toEqual([
    [["clicks", "views"], 2],
    [["operators-clicks-by-page-repartition"], CLICK_PARTITIONS],
    // The door's topics (./door-topology.ts).
    [["notes"], 2],
    [["scores"], 2],
    [["tags"], 2],
  ]);
  const specs = application.topology.topicSpecs();
  expect(specs["operators-clicks-by-page-repartition"]).toMatchObject({
    partitions: CLICK_PARTITIONS,
    config: { "cleanup.policy": "delete", "purge.on.commit": true },
  });
  // The pages of the test land on every partition of the repartition topic.
  expect(["a", "b", "c"].map((p) => pagePartition(p, CLICK_PARTITIONS)).sort()).toEqual([0, 1, 2]);
});

it("gives the never-wiped oracle's output, record for record, through two wipes of every task and a crash after a commit", async () => {
  // Window 0.
  await step("clicks", [
    ["u1", "a", 100],
    ["u2", "b", 200],
    ["u3", "c", 300],
    ["u1", "b", 400],
    ["u4", "d", 500],
    ["u2", "a", 600],
  ]);
  await step("views", [
    ["u1", "a", 1_000],
    ["u2", "b", 1_500],
    ["u3", "x", 2_000],
    ["u1", "c", 2_500],
    ["u4", "d", 3_000],
  ]);
  await step("views", [
    ["u3", "y", 4_000],
    ["u4", "e", 4_200],
  ]);
  // u3's click comes 300 ms after a view (inside `before`), u4's 1.3 s after one (outside it, though inside `after`).
  await step("clicks", [
    ["u3", "a", 4_300],
    ["u4", "c", 5_500],
  ]);
  await wipeEverything();

  // Window 2: clicks close window 0 of every page, views every user's window 0 and sessions.
  await step("clicks", [
    ["u1", "a", 20_100],
    ["u2", "b", 20_200],
    ["u3", "c", 20_300],
  ]);
  await step("views", [
    ["u1", "a", 21_000],
    ["u2", "x", 25_000],
    ["u3", "c", 21_500],
    ["u4", "z", 22_000],
  ]);
  await wipeEverything();

  // Window 4, after a crash of the task counting page a's clicks just after its commit.
  const pageA = (await driver.instances()).find((i) => i.role === "active" && i.taskId === `1_${pagePartition("a", CLICK_PARTITIONS)}`)!;
  await driver.task(pageA).crash("after-commit");
  const clicks: Input[] = [
    ["u1", "a", 40_100],
    ["u2", "b", 40_200],
    ["u3", "c", 40_300],
    ["u4", "a", 40_400],
  ];
  await driver.pipe(
    "clicks",
    clicks.map(([user, page, at]) => ({ key: user, value: { page }, timestamp: BASE + at })),
  );
  for (const [user, page, at] of clicks) oracle.pipe("clicks", user, JSON.stringify({ page }), { timestamp: BASE + at });
  // The clicks reach page a's task through the repartition topic: run the writers first, then its commit dies.
  for (const writer of (await driver.instances()).filter((i) => i.role === "active" && i.taskId.startsWith("0_"))) await driver.task(writer).drain();
  await expect(driver.task(pageA).drain()).rejects.toThrow();
  await driver.runUntilQuiet();
  await step("views", [
    ["u1", "a", 41_000],
    ["u2", "b", 41_100],
    ["u3", "c", 41_200],
    ["u4", "d", 41_300],
  ]);

  for (const topic of Object.keys(OPERATORS_TOPICS).filter((t) => t !== "clicks" && t !== "views")) {
    expect(await runtimeOutput(topic), topic).toEqual(oracleOutput(topic));
  }

  // What each operator gave, in the oracle's (and so the runtime's) words.
  const out = (topic: string, key: string) => oracleOutput(topic)[key]?.map(([value]) => value);
  // cogroup: both streams folded into one row per user.
  expect(out("activity", "u3")?.at(-1)).toEqual({ clicks: 4, views: 4, pages: ["c", "x", "y", "a", "c", "c", "c", "c"] });
  // Windowed cogroup: u1's window 0 as its last update left it.
  expect(out("windowed-activity", "u1")).toContainEqual({ start: BASE, clicks: 2, views: 2, pages: ["a", "b", "a", "c"] });
  // Sliding windows emitted on close: some, each once.
  const sliding = out("sliding-click-windows", "u1") ?? [];
  expect(sliding.length).toBeGreaterThan(0);
  expect(new Set(sliding.map((w) => JSON.stringify(w))).size).toBe(sliding.length);
  // Asymmetric join: u3's click joined the view 300 ms before it; u4's click at 5.5 s not the one
  // 1.3 s before it (a symmetric 1.5 s window would have joined them), only its last click a view.
  expect(out("click-views", "u3")).toContainEqual({ clicked: "a", viewed: "y" });
  expect(out("click-views", "u4")).toEqual([{ clicked: "a", viewed: "d" }]);
  // Repartitioned windows, each emitted once when it closed: window 0 and window 2 of a.
  expect(out("closed-click-windows", "a")).toEqual([
    { start: BASE, count: 3 },
    { start: BASE + 2 * WINDOW_MS, count: 1 },
  ]);
  // Final view windows: u1's window 0 (two views) and window 2, once each.
  expect(out("final-view-windows", "u1")).toEqual([
    { start: BASE, count: 2 },
    { start: BASE + 2 * WINDOW_MS, count: 1 },
  ]);
  // Sessions, each once when it closed.
  expect(out("view-sessions", "u4")).toEqual([
    { start: BASE + 3_000, end: BASE + 4_200, count: 2 },
    { start: BASE + 22_000, end: BASE + 22_000, count: 1 },
  ]);

  // The stores, over HTTP, as the oracle has them.
  for (const user of ["u1", "u2", "u3", "u4"]) {
    const response = await call(`/stores/activity/keys/${user}`);
    expect(response.status, user).toBe(200);
    expect((await json<{ value: unknown }>(response)).value, user).toEqual(oracle.get("activity", user));
  }
  const windows = await json<{ windows: { window: { start: number }; value: number }[] }>(
    await call(`/stores/clicks-per-window/windows/a?from=${BASE}&to=${BASE + 4 * WINDOW_MS}`),
  );
  expect(windows.windows.map((w) => [w.window.start, w.value])).toEqual(
    oracle.windows<string, number>("clicks-per-window", "a", BASE, BASE + 4 * WINDOW_MS).map((w) => [w.window.start, w.value]),
  );
});
