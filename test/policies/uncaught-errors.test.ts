/**
 * The uncaught-error policies on the real runtime, chosen per error by the topology's handler:
 * a transient failure is retried after a back-off until it succeeds; any other error stops its
 * task (and only that task) until an operator resumes it with `POST /admin/tasks/:id/resume`.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "./app";
import { partitionForKey } from "../../src/log/partitioner";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { until } from "../support/until";
import { activeInstance } from "../support/active";

const driver = new TestDriver(env, application);
const taskOf = (key: string) => `0_${partitionForKey(key, 2)}`;

async function flushed(key: string): Promise<number | undefined> {
  const response = await call(`/stores/policies-flushed/keys/${encodeURIComponent(key)}`);
  return response.status === 404 ? undefined : ((await json(response)).value as number);
}

async function active(taskId: string): Promise<TaskDescription> {
  const { tasks } = await json<{ tasks: TaskDescription[] }>(await call("/tasks"));
  return tasks.find((t) => t.id === taskId && t.role === "active")!;
}

/** The value of the one sample of `name` whose labels include every one given. */
async function metric(name: string, ...labels: string[]): Promise<number> {
  const text = await (await call("/metrics")).text();
  const lines = text.split("\n").filter((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
  expect(lines).toHaveLength(1);
  return Number(lines[0]!.split(" ").pop());
}

const post = async (records: unknown[]) => expect((await call("/topics/policies-events/records", { body: { records } })).status).toBe(200);

it('"retry": a transient failure is retried after a back-off until it succeeds', async () => {
  await post([
    { key: "flaky", value: { fail: "transient", times: 2 } },
    { key: "flaky", value: {} },
  ]);
  await until(async () => (await flushed("flaky")) === 2, 10_000, "both flaky events to be processed and flushed", 50);
  expect((await active(taskOf("flaky"))).failure).toBeNull();
  expect(await metric("edge_streams_task_uncaught_errors_total", `task="${taskOf("flaky")}"`, `policy="retry"`)).toBe(2);
});

it('"fail": stops only the failing task, until it is resumed', async () => {
  const bad = "bad";
  const other = ["o1", "o2", "o3", "o4", "o5"].find((k) => taskOf(k) !== taskOf(bad))!;
  await post([{ key: bad, value: { fail: "fatal", times: 1 } }]);
  await until(async () => (await active(taskOf(bad))).failure !== null, 10_000, `task ${taskOf(bad)} to stop`, 50);
  const stopped = await active(taskOf(bad));
  expect(stopped.failure).toMatch(/bad cannot be processed/);
  expect(stopped.lag).toBe(1);

  // The other task goes on; the stopped one takes nothing, even when driven by hand.
  await post([
    { key: other, value: {} },
    { key: bad, value: {} },
  ]);
  await until(async () => (await flushed(other)) === 1, 10_000, "the other task to go on", 50);
  const instance = await activeInstance(driver.instances(), taskOf(bad));
  expect((await driver.task(instance).drain()).outcome).toBe("blocked");
  expect((await active(taskOf(bad))).lag).toBe(2);
  expect(await metric("edge_streams_task_failed", `task="${taskOf(bad)}"`)).toBe(1);

  expect((await call("/admin/tasks/9_9/resume", { method: "POST" })).status).toBe(404);
  const resumed = await call(`/admin/tasks/${taskOf(bad)}/resume`, { method: "POST" });
  expect(resumed.status).toBe(200);
  expect((await json(resumed)).task.failure).toBeNull();
  await until(async () => (await flushed(bad)) === 2, 10_000, "the resumed task to process both bad events", 50);
  expect((await active(taskOf(bad))).lag).toBe(0);
  expect(await metric("edge_streams_task_failed", `task="${taskOf(bad)}"`)).toBe(0);
});
