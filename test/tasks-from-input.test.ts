/**
 * Tasks come into being when their input first arrives, without anyone asking the coordinator:
 * the first append to a partition that tasks read, while no task listens, tells the coordinator
 * once (its own file: it needs a coordinator that has assigned nothing yet).
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { application } from "./support/orders-app";
import type { InstanceAssignment } from "../src/coordinator/coordinator-store";
import { COORDINATOR_NAME } from "../src/names";
import { TestDriver } from "../platform/testing/test-driver";
import { forgetAssignments } from "../workers/api/cluster";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { until } from "./support/until";

const driver = new TestDriver(env, application);
const coordinator = env.COORDINATOR.getByName(COORDINATOR_NAME);

async function total(key: string): Promise<{ count: number; sum: number } | undefined> {
  const response = await call(`/stores/totals/keys/${key}`);
  if (response.status !== 200) return undefined;
  return (await json(response)).value;
}

it("a task comes into being when its input first arrives: the partition tells the coordinator, once", async () => {
  const assigned = async () => (await coordinator.assignments()) as InstanceAssignment[];
  expect(await assigned()).toEqual([]);
  const [key] = keysOn(2, 1, "first-input");
  // Straight into the log: no API route, no test driver asking the coordinator.
  await driver.log.append({ topic: "orders", partition: 2 }, [{ key: key!, value: '{"amount":7}' }]);
  await until(async () => (await assigned()).some((i) => i.taskId === "0_2" && i.role === "active" && i.acknowledged), 10_000, "task 0_2 to be assigned");
  forgetAssignments();
  await until(async () => (await total(key!))?.sum === 7, 10_000, "the first order to be processed");
  // Listened to now: a later append tells no one but the task, and the query uses the cached assignment.
  const told = await coordinator.callsReceived();
  await driver.log.append({ topic: "orders", partition: 2 }, [{ key: key!, value: '{"amount":1}' }]);
  await until(async () => (await total(key!))?.sum === 8, 10_000, "the second order to be processed");
  expect(await coordinator.callsReceived()).toBe(told);
});
