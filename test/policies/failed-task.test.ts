/**
 * A task stopped by a bad record, end to end on the real runtime with the default fail handlers
 * (issue #30: "Recover a stuck task", "Health that tells the truth"): it is FAILED everywhere —
 * `/tasks` with the record it stopped at, the summary, `/metrics`, the status page's red badge —
 * `GET /health` answers 503 naming it, its lag stays counted after its object restarts, and its
 * processed total too; `POST /admin/tasks/:id/skip` passes over exactly that record (409 for any
 * other), the records before it in the rolled-back batch are processed once, and it runs again.
 * A crash right after the skip is written converges on its own.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "./app";
import { partitionForKey } from "../../src/log/partitioner";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { activeInstance } from "../support/active";
import { call, json } from "../support/api";
import { restartDurableObject } from "../support/restart";
import { until } from "../support/until";

const driver = new TestDriver(env, application);
const TOPIC = "policies-events";
const taskOf = (key: string) => `0_${partitionForKey(key, 2)}`;
/** A key of `prefix` that lands on the same task as `key`. */
const sameTask = (key: string, prefix: string) => {
  for (let i = 0; ; i++) if (taskOf(`${prefix}-${i}`) === taskOf(key)) return `${prefix}-${i}`;
};

type Task = TaskDescription;
interface Summary {
  byState: Record<string, number>;
  lag: number;
  maxLagMs: number;
  failed: number;
  reported: number;
  instances: number;
}

async function view(): Promise<{ tasks: Task[]; summary: Summary }> {
  return json(await call("/tasks"));
}

async function active(taskId: string): Promise<Task> {
  return (await view()).tasks.find((t) => t.id === taskId && t.role === "active")!;
}

async function flushed(key: string): Promise<number | undefined> {
  const response = await call(`/stores/policies-flushed/keys/${encodeURIComponent(key)}`);
  return response.status === 404 ? undefined : ((await json(response)).value as number);
}

/** Every sample of `name` whose labels include each of `labels`. */
async function samples(name: string, ...labels: string[]): Promise<number[]> {
  const text = await (await call("/metrics")).text();
  return text
    .split("\n")
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && labels.every((label) => l.includes(label)))
    .map((l) => Number(l.split(" ").pop()));
}

async function post(records: unknown[]): Promise<{ partition: number; offset: number }[]> {
  const response = await call(`/topics/${TOPIC}/records`, { body: { records } });
  expect(response.status).toBe(200);
  return (await json(response)).offsets;
}

const skip = (taskId: string, at: { topic: string; partition: number; offset: number }) => call(`/admin/tasks/${taskId}/skip`, { body: at });

it("a task stopped by a bad record is FAILED everywhere with that record, /health says so, and skip passes over exactly it", { timeout: 60_000 }, async () => {
  const good = "health-good";
  const bad = sameTask(good, "health-bad");
  const taskId = taskOf(good);
  // Processed before the failure: the durable total must keep these.
  await post([{ key: good, value: {} }]);
  await until(async () => (await flushed(good)) === 1, 10_000, "the first event to be flushed", 50);
  expect((await call("/health")).status).toBe(200);
  expect(await json(await call("/health"))).toEqual({ status: "ok" });

  // One request, one batch: two good events, the bad one, one more good event.
  const offsets = await post([
    { key: good, value: {} },
    { key: good, value: {} },
    { key: bad, value: { fail: "fatal" } },
    { key: good, value: {} },
  ]);
  const stoppedAt = { topic: TOPIC, partition: offsets[2]!.partition, offset: offsets[2]!.offset };
  await until(async () => (await active(taskId)).state === "FAILED", 10_000, `task ${taskId} to be FAILED`, 50);
  const failed = await active(taskId);
  expect(failed.error).toEqual({ message: expect.stringMatching(/health-bad-\d+ cannot be processed/), ...stoppedAt });
  expect(failed.failure).toMatch(/cannot be processed/);
  // The failing commit rolled its whole batch back: the good events before the bad one wait too.
  expect(failed.lag).toBe(4);

  // The summary counts it as FAILED (never RUNNING), with its lag; the other task runs.
  await until(
    async () => {
      const { summary } = await view();
      return summary.byState.FAILED === 1 && summary.failed === 1 && summary.lag >= 4 && summary.maxLagMs > 0;
    },
    10_000,
    "the summary to count the failed instance and its lag",
    50,
  );
  expect((await view()).summary.byState.RUNNING).toBe(1);

  // /health answers 503 naming the task, its placement and the record.
  const health = await call("/health");
  expect(health.status).toBe(503);
  const body = await json(health);
  expect(body).toMatchObject({ status: "failing", failed: 1, withoutActive: 0 });
  expect(body.reasons).toEqual([
    { task: taskId, placement: failed.placement, reason: expect.stringContaining(`stopped at ${TOPIC}/${stoppedAt.partition} offset ${stoppedAt.offset}`) },
  ]);
  expect((await call("/health", { token: null })).status).toBe(401);

  // Metrics: FAILED as a state, the application's lag includes it, lag in time per task.
  expect(await samples("edge_streams_task_info", `task="${taskId}"`, 'role="active"', 'state="FAILED"')).toEqual([1]);
  expect(await samples("edge_streams_application_instances_by_state", 'state="FAILED"')).toEqual([1]);
  expect((await samples("edge_streams_application_lag_records"))[0]).toBeGreaterThanOrEqual(4);
  await until(async () => ((await samples("edge_streams_task_lag_seconds", `task="${taskId}"`, 'role="active"'))[0] ?? 0) > 0, 5_000, "lag in time", 50);

  // The status page: a red FAILED badge (not a green RUNNING one) and the record.
  const page = await (await call("/")).text();
  const card = page.slice(page.indexOf(`data-instance="${taskId}@${failed.placement}"`));
  const cardEnd = card.indexOf("</article>");
  expect(card.slice(0, cardEnd)).toContain('data-state="FAILED"');
  expect(card.slice(0, cardEnd)).toContain('<span class="badge FAILED">FAILED</span>');
  expect(card.slice(0, cardEnd)).not.toContain("badge RUNNING");
  expect(card.slice(0, cardEnd)).toContain(`stopped at ${TOPIC}/${stoppedAt.partition} offset ${stoppedAt.offset}`);
  expect(page).toContain(".badge.down, .badge.FAILED { background:#ffe1e1; color:var(--bad); }");

  // The object restarts (as when evicted after idling): its lag and processed total are still told.
  const processedBefore = await samples("edge_streams_task_processed_records_total", `task="${taskId}"`, 'role="active"');
  expect(processedBefore[0]).toBeGreaterThanOrEqual(1);
  await restartDurableObject(driver.task(await activeInstance(driver.instances(), taskId)) as never);
  // A wake-up (the partition's echo) runs the stopped instance again, which reports.
  expect((await driver.task(await activeInstance(driver.instances(), taskId)).drain()).outcome).toBe("blocked");
  await until(async () => (await view()).summary.lag >= 4, 10_000, "the summary to keep the stopped task's lag after its restart", 50);
  expect(await samples("edge_streams_task_processed_records_total", `task="${taskId}"`, 'role="active"')).toEqual(processedBefore);
  expect((await active(taskId)).lagMs).toBeGreaterThan(0);

  // Skip: any other record is refused; that one is passed over.
  const wrong = await skip(taskId, { ...stoppedAt, offset: stoppedAt.offset + 1 });
  expect(wrong.status).toBe(409);
  expect(await json(wrong)).toMatchObject({
    error: "conflict",
    message: expect.stringContaining(`is stopped at ${TOPIC}/${stoppedAt.partition} offset ${stoppedAt.offset}`),
  });
  expect((await skip("9_9", stoppedAt)).status).toBe(404);
  expect((await call(`/admin/tasks/${taskId}/skip`, { body: { topic: TOPIC, partition: -1, offset: 0 } })).status).toBe(400);
  const skipped = await skip(taskId, stoppedAt);
  expect(skipped.status).toBe(200);
  expect(await json(skipped)).toMatchObject({ already: false, skipped: stoppedAt, task: { error: null, failure: null } });

  // Every good event once, the bad one never; the task runs again with lag 0.
  await until(async () => (await flushed(good)) === 4, 10_000, "the good events to be processed once", 50);
  await until(async () => (await active(taskId)).lag === 0, 10_000, "lag 0", 50);
  expect(await flushed(bad)).toBeUndefined();
  expect(await flushed(good)).toBe(4);
  expect((await active(taskId)).state).toBe("RUNNING");
  expect(await samples("edge_streams_task_processed_records_total", `task="${taskId}"`, 'role="active"')).toEqual([processedBefore[0]! + 3]);
  expect(await samples("edge_streams_task_skipped_records_total", `task="${taskId}"`, 'role="active"')).toEqual([1]);
  await until(async () => (await call("/health")).status === 200, 10_000, "/health to be ok again", 50);
  await until(async () => (await view()).summary.byState.FAILED === undefined, 10_000, "no FAILED instance in the summary", 50);
  // The skip is in the task's history, on the page.
  const after = await (await call("/")).text();
  expect(after).toContain("record skipped by an operator");
  expect(after).toContain(`${TOPIC}/${stoppedAt.partition} offset ${stoppedAt.offset} passed over`);
  // Asking again is answered as done.
  expect(await json(await skip(taskId, stoppedAt))).toMatchObject({ already: true });
});

it("an undecodable record (the default deserialization handler: fail) stops its task at that record; skip passes over it", { timeout: 60_000 }, async () => {
  const good = "decode-good";
  const taskId = taskOf(good);
  const partition = Number(taskId.split("_")[1]);
  // Written straight to the log (the door would refuse it): not JSON, so the value serde throws.
  await driver.log.append({ topic: TOPIC, partition }, [
    { key: good, value: "{}" },
    { key: good, value: "not json" },
    { key: good, value: "{}" },
  ]);
  const end = (await driver.log.offsets({ topic: TOPIC, partition })).latest;
  const stoppedAt = { topic: TOPIC, partition, offset: end - 2 };
  await driver.runUntilQuiet();
  const failed = await active(taskId);
  expect(failed.state).toBe("FAILED");
  expect(failed.error).toEqual({ message: expect.stringMatching(/deserialize/), ...stoppedAt });
  expect((await skip(taskId, stoppedAt)).status).toBe(200);
  await driver.runUntilQuiet();
  await until(async () => (await flushed(good)) === 2, 10_000, "both decodable events once", 50);
  expect(await active(taskId)).toMatchObject({ state: "RUNNING", lag: 0, error: null });
});

it("a crash right after the skip is written converges: the task runs on its own, the record passed over once, and the request repeated answers done", {
  timeout: 60_000,
}, async () => {
  const good = "crash-skip-good";
  const bad = sameTask(good, "crash-skip-bad");
  const taskId = taskOf(good);
  const offsets = await post([
    { key: good, value: {} },
    { key: bad, value: { fail: "fatal" } },
    { key: good, value: {} },
  ]);
  const stoppedAt = { topic: TOPIC, partition: offsets[1]!.partition, offset: offsets[1]!.offset };
  await until(async () => (await active(taskId)).state === "FAILED", 10_000, `task ${taskId} to be FAILED`, 50);
  await driver.task(await activeInstance(driver.instances(), taskId)).crash("skip:after-write");
  const dies = await skip(taskId, stoppedAt);
  expect(dies.status).toBeGreaterThanOrEqual(500);
  // Nothing drives it: its alarm, armed before the skip was written, brings it back.
  await until(async () => (await flushed(good)) === 2, 20_000, "the task to process on its own after the crash", 100);
  await until(async () => (await active(taskId)).lag === 0, 10_000, "lag 0", 50);
  expect(await flushed(bad)).toBeUndefined();
  const again = await skip(taskId, stoppedAt);
  expect(again.status).toBe(200);
  expect(await json(again)).toMatchObject({ already: true });
  expect(await samples("edge_streams_task_skipped_records_total", `task="${taskId}"`, 'role="active"')).toEqual([expect.any(Number)]);
});
