/**
 * `"shutdown-application"` on the real runtime: a poison pill in one task stops every task of the
 * application through the coordinator, and instances assigned meanwhile start stopped, until an
 * operator resumes the whole application (resuming one task is refused meanwhile).
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "./app";
import type { ApplicationShutdown } from "../../src/coordinator/coordinator-store";
import { partitionForKey } from "../../src/log/partitioner";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { until } from "../support/until";
import { activeInstance } from "../support/active";

const driver = new TestDriver(env, application);
const taskOf = (key: string) => `0_${partitionForKey(key, 2)}`;

async function tasks(): Promise<{ tasks: TaskDescription[]; shutdown: ApplicationShutdown | null }> {
  return json(await call("/tasks"));
}

async function flushed(key: string): Promise<number | undefined> {
  const response = await call(`/stores/policies-flushed/keys/${encodeURIComponent(key)}`);
  return response.status === 404 ? undefined : ((await json(response)).value as number);
}

it("stops every task when one swallows a poison pill, until the application is resumed", async () => {
  const pill = "pill";
  const other = ["o1", "o2", "o3", "o4", "o5"].find((k) => taskOf(k) !== taskOf(pill))!;
  expect((await tasks()).shutdown).toBeNull();
  const post = async (records: unknown[]) => expect((await call("/topics/policies-events/records", { body: { records } })).status).toBe(200);
  await post([{ key: pill, value: { fail: "shutdown", times: 1 } }]);

  await until(async () => (await tasks()).tasks.filter((t) => t.role === "active" && t.failure !== null).length === 2, 10_000, "both tasks to stop", 50);
  const { tasks: stopped, shutdown } = await tasks();
  expect(shutdown).toMatchObject({ taskId: taskOf(pill) });
  expect(shutdown!.reason).toMatch(/pill is a poison pill/);
  const bystander = stopped.find((t) => t.id === taskOf(other) && t.role === "active")!;
  expect(bystander.failure).toMatch(new RegExp(`^application shut down: task ${taskOf(pill)} at .* failed: .*poison pill`));

  // Operators see it on the status page and in the metrics.
  const page = await (await call("/")).text();
  expect(page).toContain(`Application shut down: task ${taskOf(pill)}`);
  expect(await (await call("/metrics")).text()).toMatch(/^edge_streams_application_shutdown 1$/m);

  // The other task processes nothing now, even when driven by hand.
  await post([{ key: other, value: {} }]);
  const instance = await activeInstance(driver.instances(), taskOf(other));
  expect((await driver.task(instance).drain()).outcome).toBe("blocked");
  expect(await flushed(other)).toBeUndefined();

  // One task cannot be resumed alone; an instance assigned meanwhile starts stopped.
  const refused = await call(`/admin/tasks/${taskOf(other)}/resume`, { method: "POST" });
  expect(refused.status).toBe(409);
  expect(await json(refused)).toMatchObject({ error: "conflict" });
  const elsewhere = instance.placement === "a" ? "b" : "a";
  expect((await call(`/admin/tasks/${taskOf(other)}/migrate`, { body: { to: elsewhere } })).status).toBe(200);
  const moved = (await tasks()).tasks.find((t) => t.id === taskOf(other) && t.role === "active")!;
  expect(moved.placement).toBe(elsewhere);
  expect(moved.failure).toMatch(/^application shut down/);

  const resumed = await call("/admin/application/resume", { method: "POST" });
  expect(resumed.status).toBe(200);
  expect((await json(resumed)).shutdown).toBeNull();
  await until(async () => (await flushed(pill)) === 1 && (await flushed(other)) === 1, 10_000, "both tasks to process again", 50);
  expect(await (await call("/metrics")).text()).toMatch(/^edge_streams_application_shutdown 0$/m);
  const after = await tasks();
  expect(after.shutdown).toBeNull();
  expect(after.tasks.filter((t) => t.role === "active").map((t) => t.failure)).toEqual([null, null]);
});
